"""A real (tiny) pretraining run on CPU: loss falls, run control, checkpoints, resume, NSP."""

from __future__ import annotations

import csv
import json

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertForMaskedLM

from bertdemo.models.embedded import tokenizer_dir, wiki_summaries
from bertdemo.pretrain import TrainConfig, TrainingRun, bert_config, list_checkpoints, param_count, resume_config
from bertdemo.pretrain.checkpoints import latest_checkpoint, write_checkpoint
from bertdemo.pretrain.evaluation import predict_masks
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.model import build_model
from bertdemo.pretrain.trainer import run_training
from bertdemo.runs.slot import RunManager
from tests.helpers import tiny_run_config, wait_until as wait_for


@pytest.fixture(scope="module")
def wiki300(tmp_path_factory):
    """300 embedded Wikipedia summaries (conftest's ``corpus`` has 200): enough text for the loss to fall by 2."""
    path = tmp_path_factory.mktemp("corpus") / "wiki300.jsonl"
    path.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:300]), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


TWO_LAYERS = dict(num_hidden_layers=2, batch_size=16, steps=40, warmup_steps=5, eval_every=20, eval_batches=4,
                  probe_text="The capital of France is [MASK].")  # with a probe; the token cache shared by the module


def test_presets_and_param_count() -> None:
    assert 4_300_000 < param_count(TrainConfig.from_flat(preset="bert-tiny")) < 4_500_000
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    for cfg in (TrainConfig.from_flat(preset="bert-tiny"), TrainConfig.from_flat(preset="custom", num_hidden_layers=3, hidden_size=48, num_attention_heads=4, intermediate_size=96),
                TrainConfig.from_flat(preset="bert-tiny", nsp=True)):
        assert param_count(cfg) == param_count(build_model(cfg, tok)), cfg  # formula == the model built
    untied = bert_config(TrainConfig.from_flat(preset="bert-tiny"))
    untied.tie_word_embeddings = False
    assert param_count(untied) == param_count(BertForMaskedLM(untied))
    assert param_count(TrainConfig.from_flat(preset="bert-mini")) > param_count(TrainConfig.from_flat(preset="bert-tiny"))
    with pytest.raises(ValueError, match="divisible"):
        TrainConfig.from_flat(preset="custom", hidden_size=30, num_attention_heads=4).validate()


def test_heldout_loss_falls_and_checkpoint_reloads_exactly(tmp_path, wiki300, cache_dir) -> None:
    cfg = tiny_run_config(wiki300, tmp_path, TWO_LAYERS, cache_dir=cache_dir, steps=150, eval_every=50)
    metrics = MetricsBuffer()
    assert run_training(cfg, metrics=metrics, run_folder=tmp_path / "ck") == "finished"
    out = latest_checkpoint(tmp_path / "ck")
    snap = metrics.snapshot()
    assert snap.eval_steps == [0, 50, 100, 150]
    assert snap.eval_loss[-1] < snap.eval_loss[0] - 2.0, snap.eval_loss
    assert snap.train_loss[-1] < snap.train_loss[0] - 2.0
    assert len(snap.probe) == 4 and len(snap.probe[-1][1]) == 1 and len(snap.probe[-1][1][0]) == 5
    assert snap.tokens_per_s > 0 and snap.step == 150 and snap.last_checkpoint == str(out)
    with open(out / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {"step", "train_loss", "eval_loss"} <= set(rows[0]) and rows[-1]["step"] == "150"
    # the saved model is the one that made the last probe prediction
    model = AutoModelForMaskedLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    again = predict_masks(model, tokenizer, cfg.monitor.probe_text, torch.device("cpu"))
    assert [t for t, _ in again[0]] == [t for t, _ in snap.probe[-1][1][0]]
    assert again[0][0][1] == pytest.approx(snap.probe[-1][1][0][0][1], abs=1e-4)
    assert [p.name for p in (tmp_path / "ck" / "steps").iterdir()] == ["step-150"], "no temp folders left"


def test_reloaded_checkpoint_gives_identical_logits(tmp_path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64)
    model = build_model(cfg, tokenizer).eval()
    for step in (1, 2):  # the second write becomes the latest
        target = write_checkpoint(tmp_path, model, tokenizer, cfg.to_dict(), {"step": step}, "step,train_loss,eval_loss\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["LATEST", "steps"] and target.name == "step-2"
    reloaded = AutoModelForMaskedLM.from_pretrained(target).eval()
    enc = tokenizer("Paris is the [MASK] of France.", return_tensors="pt")
    with torch.inference_mode():
        assert torch.equal(model(**enc).logits, reloaded(**enc).logits)


def test_manager_pause_resume_stop_and_one_run_at_a_time(tmp_path, wiki300, cache_dir) -> None:
    manager = RunManager(tmp_path)
    run = manager.start_run(TrainingRun(tiny_run_config(wiki300, tmp_path, TWO_LAYERS, cache_dir=cache_dir, steps=100_000, eval_every=10_000), tmp_path))
    try:
        assert manager.current is run
        with pytest.raises(ValueError, match="already"):
            manager.start_run(TrainingRun(tiny_run_config(wiki300, tmp_path, TWO_LAYERS, cache_dir=cache_dir), tmp_path))
        with pytest.raises(ValueError, match="another process|already"):
            RunManager(tmp_path).start_run(TrainingRun(tiny_run_config(wiki300, tmp_path, TWO_LAYERS, cache_dir=cache_dir), tmp_path))  # machine lock
        with pytest.raises(ValueError, match=r"\[MASK\]"):
            run.set_probe_text("no mask here")
        run.set_probe_text("Rome is the [MASK] of [MASK].")
        wait_for(lambda: run.snapshot().step >= 3)
        run.pause()
        wait_for(lambda: run.control.paused_at)  # the loop reached the pause and holds at that step
        paused_at = run.control.paused_at[-1]
        assert run.snapshot().status == "paused" and run.snapshot().step == paused_at
        run.resume()
        wait_for(lambda: run.snapshot().step > paused_at + 2)
        assert run.snapshot().status == "running" and run.control.paused_at == [paused_at]  # no step while paused
    finally:
        run.stop()
        assert run.join(60)
    snap = run.snapshot()
    assert snap.status == "stopped" and snap.probe_text == "Rome is the [MASK] of [MASK]."
    assert (latest_checkpoint(tmp_path / snap.run_id) / "model.safetensors").is_file()
    [(label, path)] = list_checkpoints(tmp_path)
    assert label.startswith("custom (2 layers, hidden 32, 2 heads, FFN 64) · ") and f"· step {snap.step} ·" in label
    AutoModelForMaskedLM.from_pretrained(path)
    # after the stop a new run may start; resuming continues the step count and history
    cfg = resume_config(path, steps=snap.step + 10)
    assert cfg.system.resume_from == str(path) and cfg.model.hidden_size == 32 and cfg.data.corpus == wiki300
    resumed = manager.start_run(TrainingRun(cfg, tmp_path))
    assert resumed.join(60)
    after = resumed.snapshot()
    assert after.status == "finished", after.message
    assert after.run_id == snap.run_id and after.step == snap.step + 10
    assert after.steps[: len(snap.steps)] == snap.steps and after.steps[-1] == snap.step + 10
    path = latest_checkpoint(tmp_path / snap.run_id)
    state = json.loads((path / "trainer_state.json").read_text())
    assert state["step"] == snap.step + 10 and (path / "optimizer.pt").is_file()


def test_nsp_run_saves_a_masked_lm_loadable_model(tmp_path, wiki300, cache_dir) -> None:
    cfg = tiny_run_config(wiki300, tmp_path, TWO_LAYERS, cache_dir=cache_dir, nsp=True, steps=20, eval_every=10,
                          eval_batches=2)
    metrics = MetricsBuffer()
    assert run_training(cfg, metrics=metrics, run_folder=tmp_path / "ck") == "finished"
    snap = metrics.snapshot()
    assert len(snap.nsp_loss) == 4 and len(snap.nsp_acc) == 3 and 0.0 <= snap.nsp_acc[-1] <= 1.0
    saved = latest_checkpoint(tmp_path / "ck")
    assert json.loads((saved / "config.json").read_text())["architectures"] == ["BertForPreTraining"]
    mlm = AutoModelForMaskedLM.from_pretrained(saved)
    from transformers import BertForPreTraining

    full = BertForPreTraining.from_pretrained(saved)
    assert torch.equal(mlm.cls.predictions.transform.dense.weight, full.cls.predictions.transform.dense.weight)
    assert torch.equal(mlm.bert.encoder.layer[1].output.dense.weight, full.bert.encoder.layer[1].output.dense.weight)


def test_failed_run_reports_error(tmp_path, cache_dir) -> None:
    metrics = MetricsBuffer()
    cfg = tiny_run_config(str(tmp_path / "nope.txt"), tmp_path, TWO_LAYERS, cache_dir=cache_dir)
    status = []
    import threading

    t = threading.Thread(target=lambda: status.append(run_training(cfg, metrics=metrics, run_folder=tmp_path / "c")))
    t.start(), t.join(30)
    assert status == ["failed"]
    snap = metrics.snapshot()
    assert snap.status == "failed" and "Unknown corpus" in snap.message

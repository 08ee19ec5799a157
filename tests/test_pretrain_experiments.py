"""The engine's experiments and mends: no position embeddings, static vs dynamic masks, whole words,
the block-length schedule, the schedule and optimizer groups, bf16 fused cross-entropy, device
failures, thread counts, grouped configs, run history, curves and the form."""

from __future__ import annotations

import math
import threading

import pytest
import torch
from transformers import AutoTokenizer

from bertdemo.explore.order_probe import order_probe
from bertdemo.models.embedded import tokenizer_dir
from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain import checkpoints, run_folders as run_files
from bertdemo.pretrain.checkpoints import latest_checkpoint
from bertdemo.pretrain.config import TrainConfig, parse_seq_len_schedule
from bertdemo.pretrain.form import config_from_settings
from bertdemo.pretrain.fused_ce import Workspace, linear_cross_entropy
from bertdemo.pretrain.hardware import thread_count
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.model import BatchMaker, build_model
from bertdemo.pretrain.trainer import lr_at, make_optimizer, run_training
from bertdemo.runs import folders
from bertdemo.runs.status import debiased_ema
from bertdemo.viz import run_curves
from tests.helpers import tiny_run_config


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(tokenizer_dir()))


def tiny(corpus: str, tmp_path, **kw) -> TrainConfig:
    return tiny_run_config(corpus, tmp_path, **kw)


def test_without_position_embeddings_the_encoder_is_order_blind(tmp_path, corpus):
    cfg = tiny(corpus, tmp_path, position_embeddings=False, steps=15)
    assert run_training(cfg, metrics=MetricsBuffer(), run_folder=tmp_path / "ck") == "finished"
    loaded = load_masked_lm(str(latest_checkpoint(tmp_path / "ck")), "cpu")
    assert loaded.model.bert.embeddings.position_embeddings.weight.abs().max().item() == 0.0
    probe = order_probe(loaded, "the cat sat on the [MASK] .", seed=3)
    assert probe.shuffled != probe.text and probe.order_blind, probe.max_state_difference
    assert [c.token for c in probe.original.masks[0].candidates] == [
        c.token for c in probe.shuffled_result.masks[0].candidates]
    # the same run with position embeddings sees the order
    cfg_pos = tiny(corpus, tmp_path, steps=15)
    assert run_training(cfg_pos, metrics=MetricsBuffer(), run_folder=tmp_path / "ck-pos") == "finished"
    assert not order_probe(load_masked_lm(str(latest_checkpoint(tmp_path / "ck-pos")), "cpu"), "the cat sat on the [MASK] .", 3).order_blind


def test_static_masks_repeat_every_n_epochs_dynamic_ones_do_not(tokenizer):
    blocks = torch.randint(1000, 2000, (4, 32))
    blocks[:, 0], blocks[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    ids = torch.arange(4)
    static = BatchMaker(TrainConfig.from_flat(static_masks=3), tokenizer, torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    labels = [static(blocks, gen, block_ids=ids, epoch=e)["labels"] for e in range(7)]
    distinct = {tuple(row.tolist()) for lab in labels for row in lab[:1]}
    assert len(distinct) == 3  # block 0 sees exactly its 3 fixed masks
    assert torch.equal(labels[0], labels[3]) and torch.equal(labels[1], labels[4])
    assert not torch.equal(labels[0], labels[1])
    dynamic = BatchMaker(TrainConfig(), tokenizer, torch.device("cpu"))
    dyn = [tuple(dynamic(blocks, gen, block_ids=ids, epoch=e)["labels"][0].tolist()) for e in range(7)]
    assert len(set(dyn)) == 7


def test_whole_word_masking_in_training(tokenizer, tmp_path, corpus):
    maker = BatchMaker(TrainConfig.from_flat(whole_word_masking=True), tokenizer, torch.device("cpu"))
    ids = tokenizer("tokenization unbelievably embeddings are playing " * 4, return_tensors="pt")["input_ids"]
    batch = maker(ids, torch.Generator().manual_seed(1))
    chosen = (batch["labels"][0] != -100).tolist()
    pieces = tokenizer.convert_ids_to_tokens(ids[0])
    for i in range(1, len(pieces)):
        if pieces[i].startswith("##"):
            assert chosen[i] == chosen[i - 1], (i, pieces[i])
    assert any(chosen)
    cfg = tiny(corpus, tmp_path, whole_word_masking=True, steps=10)
    assert run_training(cfg, metrics=MetricsBuffer(), run_folder=tmp_path / "ww") == "finished"


def test_block_length_schedule_switches_and_counts_tokens(tmp_path, corpus):
    assert parse_seq_len_schedule("128:0.9,512:0.1", 1000) == [(0, 128), (900, 512)]
    with pytest.raises(ValueError, match="sum to 1"):
        parse_seq_len_schedule("128:0.5,512:0.4", 100)
    with pytest.raises(ValueError, match="shrink"):
        parse_seq_len_schedule("64:0.5,32:0.5", 100)
    cfg = tiny(corpus, tmp_path, seq_len_schedule="16:0.5,32:0.5", steps=20, log_every=5)
    metrics = MetricsBuffer()
    assert run_training(cfg, metrics=metrics, run_folder=tmp_path / "sched") == "finished"
    snap = metrics.snapshot()
    assert snap.steps == [5, 10, 15, 20]
    assert snap.tokens == [5 * 8 * 16, 10 * 8 * 16, 10 * 8 * 16 + 5 * 8 * 32, 10 * 8 * 16 + 10 * 8 * 32]
    # the switch is a timeline event at step 10, drawn as a dotted line on the loss chart and told in words
    switches = [e for e in snap.timeline if e["kind"] == "length"]
    assert [(e["step"], e["previous"], e["length"], e["tokens"]) for e in switches] == [(10, 16, 32, 10 * 8 * 16)]
    fig = run_curves.training_curves([run_curves.CurveRun("live", snap)], x_axis="tokens")
    lines = [s for s in fig.layout.shapes if s.yref == "y domain"]
    assert [(s.x0, s.x1) for s in lines] == [(10 * 8 * 16, 10 * 8 * 16)]
    assert [a.text for a in fig.layout.annotations if a.xref == "x"] == ["16 → 32 tokens"]
    assert "Block length 16 → 32 at step 10" in run_curves.timeline_markdown(snap)
    assert "positions 16-31 train only from here" in run_curves.timeline_markdown(snap)


def test_learning_rate_schedule_and_decay_groups(tokenizer):
    cfg = TrainConfig.from_flat(steps=100, warmup_steps=10, lr=1e-3)
    assert lr_at(0, cfg) == pytest.approx(1e-4)
    assert lr_at(9, cfg) == pytest.approx(1e-3)
    assert lr_at(55, cfg) == pytest.approx(5e-4)
    assert lr_at(100, cfg) == 0.0
    model = build_model(TrainConfig.from_flat(preset="bert-tiny"), tokenizer)
    decay, no_decay = make_optimizer(model, cfg, torch.device("cpu")).param_groups
    n_decay = sum(p.numel() for p in decay["params"])
    n_rest = sum(p.numel() for p in no_decay["params"])
    assert n_decay + n_rest == 4_416_698  # every parameter once: the tied decoder is the word embeddings
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0


def test_bf16_fused_cross_entropy_matches_dense_within_tolerance():
    torch.manual_seed(0)
    h = torch.randn(64, 32, requires_grad=True)
    w = torch.randn(1000, 32, requires_grad=True)
    b = torch.randn(1000, requires_grad=True)
    y = torch.randint(0, 1000, (64,))
    y[::7] = -100
    dense = torch.nn.functional.cross_entropy(h @ w.T + b, y, ignore_index=-100)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fused = linear_cross_entropy(h, w, b, y, Workspace())
    assert abs(fused.float().item() - dense.item()) < 0.05 * abs(dense.item())  # bf16: ~3 significant digits


def test_a_missing_device_fails_at_once_with_a_message(tmp_path, corpus):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    metrics = MetricsBuffer()
    status = []
    t = threading.Thread(target=lambda: status.append(
        run_training(tiny(corpus, tmp_path, device="cuda"), metrics=metrics, run_folder=tmp_path / "c")))
    t.start()
    t.join(10)
    assert status == ["failed"]
    assert "no CUDA GPU" in metrics.snapshot().message


def test_a_runs_thread_count_stays_in_its_thread():
    before = torch.get_num_threads()
    own = before + 1  # a count the process does not have, so a leak shows
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def trainer():
        with thread_count(own, 1, torch.device("cpu")):
            seen["inside"] = torch.get_num_threads()
            ready.set()
            done.wait(10)

    t = threading.Thread(target=trainer)
    t.start()
    ready.wait(10)
    later = threading.Thread(target=lambda: seen.setdefault("new thread", torch.get_num_threads()))
    later.start(), later.join()
    done.set(), t.join()
    assert seen == {"inside": own, "new thread": before}


def test_configs_are_grouped_and_type_checked(tmp_path):
    cfg = TrainConfig.from_flat(num_hidden_layers=3, lr=2, nsp=True)
    assert (cfg.model.num_hidden_layers, cfg.optim.lr, cfg.objective.nsp) == (3, 2.0, True)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert TrainConfig.from_dict({"layers": 3, "hidden": 64}).model.hidden_size == 64  # earlier flat configs
    with pytest.raises(ValueError, match="must be int"):
        TrainConfig.from_dict({"optim": {"steps": "1e30"}})
    with pytest.raises(ValueError, match="Unknown setting"):
        TrainConfig.from_flat(weight_map="/etc/passwd")
    with pytest.raises(ValueError, match="learning rate"):
        TrainConfig.from_flat(lr=1e9).validate()
    form = config_from_settings({"steps": 40.0, "batch_size": 8.0, "corpus": "wiki", "resume_from": ""},
                                str(tmp_path))
    assert (form.optim.steps, form.optim.batch_size, form.system.runs_dir) == (40, 8, str(tmp_path))
    with pytest.raises(ValueError, match="Upload"):
        config_from_settings({"corpus": "upload", "upload": None}, str(tmp_path))


def test_runs_are_listed_compared_exported_and_deleted(tmp_path, corpus):
    for run_id, lr in (("run-a", 3e-3), ("run-b", 1e-3)):
        cfg = tiny(corpus, tmp_path, lr=lr, steps=10)
        assert run_training(cfg, metrics=MetricsBuffer(run_id=run_id), run_folder=tmp_path / run_id,
                            run_info={"run_id": run_id}) == "finished"
    assert sorted(run_files.list_runs(tmp_path)) == ["run-a", "run-b"]
    # every run list says what each run was: its preset, the settings that differ from the default run, its step
    listed = {run_id: label for label, run_id in run_files.run_choices(tmp_path)}
    assert "lr=0.003" in listed["run-a"] and "lr=" not in listed["run-b"] and "· step 10 ·" in listed["run-b"]
    records = [run_files.load_run(tmp_path, r) for r in ("run-a", "run-b")]
    assert records[0].snapshot.eval_steps == [0, 10] and records[0].snapshot.tokens[-1] == 10 * 8 * 32
    labels = run_files.differing_labels(records)
    assert labels == {"run-a": "run-a (lr=0.003)", "run-b": "run-b (lr=0.001)"}
    fig = run_curves.training_curves([run_curves.CurveRun(labels[r.run_id], r.snapshot) for r in records],
                                     smoothing=0.0, log_y=True, x_axis="tokens")
    trains = [t for t in fig.data if t.name.endswith(": train")]
    assert [t.name for t in trains] == ["run-a (lr=0.003): train", "run-b (lr=0.001): train"]
    assert list(trains[0].y) == pytest.approx(records[0].snapshot.train_loss, rel=1e-3)  # smoothing 0: the raw values (4 digits drawn)
    assert list(trains[0].x) == records[0].snapshot.tokens and fig.layout.yaxis.type == "log"
    assert trains[0].line.color != trains[1].line.color
    # log axes (the loss here, perplexity always) are labelled at 1, 2, 5 × 10^k only, in plain numbers
    assert (fig.layout.yaxis.dtick, fig.layout.yaxis2.dtick, fig.layout.yaxis2.tickformat) == ("D2", "D2", "~s")
    # one legend of the runs (train, held-out) under the loss chart; the other panels name their lines in titles
    assert {t.legend for t in fig.data if t.showlegend is not False} == {None}
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        "run-a (lr=0.003): train", "run-a (lr=0.003): held-out ([MASK]-only, 15 %)",
        "run-b (lr=0.001): train", "run-b (lr=0.001): held-out ([MASK]-only, 15 %)"]
    axes = {suffix: {(t.xaxis, t.yaxis) for t in fig.data if t.name and t.name.endswith(suffix)}
            for suffix in (": perplexity", ": top-1 accuracy", ": top-5 accuracy", ": median rank", ": learning rate")}
    assert axes == {": perplexity": {("x2", "y2")}, ": top-1 accuracy": {("x3", "y3")}, ": top-5 accuracy": {("x3", "y3")},
                    ": median rank": {("x4", "y4")}, ": learning rate": {("x5", "y5")}}
    assert fig.layout.yaxis4.autorange == "reversed"  # rank 1 at the top: up is better
    # the landmarks of the first run as labelled lines (the uniform guess at ln 30522 = 10.33); on a log
    # axis plotly reads an annotation's y in log10 units (a shape's in data units)
    marks = records[0].snapshot.landmarks
    assert set(marks) == {"uniform", "unigram", "left", "both"} and marks["uniform"] == pytest.approx(math.log(30522))
    assert sorted(s.y0 for s in fig.layout.shapes) == pytest.approx(sorted(marks.values()))
    labels_at = {a.text.split(" (")[0]: a.y for a in fig.layout.annotations if a.yref == "y"}
    assert labels_at["uses the word before"] == pytest.approx(math.log10(marks["left"]), abs=1e-9)
    assert [a.y for a in fig.layout.annotations if a.text.startswith("uniform guess")] == [
        pytest.approx(math.log10(math.log(30522)))]
    # a kept zoom never outlives a change of axis: linear and log figures carry different revisions
    linear = run_curves.training_curves([run_curves.CurveRun(labels[r.run_id], r.snapshot) for r in records],
                                        smoothing=0.0, log_y=False, x_axis="tokens")
    assert linear.layout.uirevision != fig.layout.uirevision
    assert [a.y for a in linear.layout.annotations if a.text.startswith("uniform guess")] == [
        pytest.approx(math.log(30522))]
    with pytest.raises(ValueError, match="No such run"):
        run_files.run_dir(tmp_path, "../run-a")
    folders.delete_run_folder(tmp_path, "run-a")
    assert run_files.list_runs(tmp_path) == ["run-b"]


def test_debiased_ema_is_tensorboards():
    assert debiased_ema([4.0, 2.0], 0.6) == pytest.approx([4.0, (0.6 * 0.4 * 4 + 0.4 * 2) / (0.6 * 0.4 + 0.4)])
    assert debiased_ema([1.0, 2.0, 3.0], 0.0) == [1.0, 2.0, 3.0]


def test_status_escapes_user_made_text():
    from bertdemo.pretrain.metrics import RunSnapshot

    text = run_curves.status_markdown(RunSnapshot(run_id="<img src=x onerror=alert(1)>", status="running",
                                                  corpus="a|b", message="<b>hi</b>"))
    assert "<img" not in text and "&#60;img" in text and "<b>" not in text


def test_a_run_label_names_its_preset_and_what_differs_from_the_default_run():
    assert checkpoints.experiment_label(TrainConfig().flat()) == "bert-tiny · defaults"
    changed = TrainConfig.from_flat(preset="bert-mini", lr=3e-3, nsp=True, corpus="/srv/up/abc/my notes.txt",
                                    eval_every=5, steps=99).flat()
    # where and how often (eval_every, steps) say nothing about the experiment; an upload shows its file name only
    assert checkpoints.experiment_label(changed) == "bert-mini · corpus=my notes.txt, nsp=True, lr=0.003"
    custom = TrainConfig.from_flat(preset="custom", num_hidden_layers=3, hidden_size=64, num_attention_heads=2,
                                   intermediate_size=128).flat()
    assert checkpoints.experiment_label(custom) == "custom (3 layers, hidden 64, 2 heads, FFN 128) · defaults"

"""The fine-tuning engine on a tiny model and a small task whose answer is known: what it reports is what
its own model computes, its checkpoint is a stock sequence classifier, and the starts are compared fairly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from bertdemo.finetune.engine import build_model, encode, evaluate, lr_factor, pca_2d, run_finetune, topic_probabilities
from bertdemo.finetune.metrics import FinetuneMetrics, finetune_csv
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status
from tests.helpers import tiny_finetune_config, word_task

FROM_RUN = dict(init="run:tiny/checkpoint", epochs=15, seed=0, warmup_fraction=0.1,
                probe_text="the apple and the grape are here .")  # a run's checkpoint, long enough to learn


@pytest.fixture(scope="module")
def finished(tiny_mlm_dir, tmp_path_factory):
    task = word_task()
    metrics = FinetuneMetrics()
    folder = tmp_path_factory.mktemp("ft") / "model"
    status = run_finetune(tiny_finetune_config(tiny_mlm_dir, FROM_RUN), task, metrics, RunControl(), folder)
    return task, metrics.snapshot(), folder, status


def test_a_learnable_task_is_learned_and_reported_in_aligned_series(finished):
    task, snap, _, status = finished
    assert status == Status.FINISHED, snap.message
    assert snap.val_accuracy[0] < 0.75  # the new head starts near chance
    assert snap.val_accuracy_all == 1.0 and snap.test_accuracy == 1.0
    assert snap.total_steps == math.ceil(15 * (len(task.train_texts) // 8)) == snap.step
    n = len(snap.eval_steps)
    assert n == len(snap.eval_wall_s) == len(snap.val_loss) == len(snap.val_accuracy) == len(snap.val_macro_f1) \
        == len(snap.probe_probs)
    assert snap.eval_steps[0] == 0 and snap.eval_steps[-1] == snap.step
    assert snap.probe_probs[-1][0] == max(snap.probe_probs[-1])  # the probe names fruit: P(fruit) is the largest
    assert sum(sum(row) for row in snap.confusion) == len(task.val_texts)
    assert snap.per_topic_accuracy == [1.0, 1.0]
    assert len(snap.pca_before) == len(snap.pca_after) == len(task.val_texts) == len(snap.pca_labels)


def test_the_page_is_told_what_is_new_in_the_model(finished):
    snap = finished[1]
    assert snap.new_weights == ["bert.pooler", "classifier"]  # a masked-LM checkpoint has neither


def test_the_checkpoint_is_a_stock_sequence_classifier_that_gives_the_runs_numbers(finished):
    task, snap, folder, _ = finished
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.config.id2label == {0: "fruit", 1: "vehicle"}
    with torch.inference_mode():
        logits = model(**tokenizer(task.val_texts, padding=True, return_tensors="pt")).logits
    accuracy = float((logits.argmax(-1) == torch.tensor(task.val_labels)).float().mean())
    assert accuracy == snap.val_accuracy_all
    probs = topic_probabilities(model, tokenizer, snap.probe_text, 48, torch.device("cpu"))
    assert np.allclose(probs, snap.probe_probs[-1], atol=1e-5)


def test_evaluation_equals_the_models_own_forward(tiny_mlm_dir):
    task = word_task(10)
    built = build_model(tiny_finetune_config(tiny_mlm_dir, FROM_RUN), task.labels)
    model, tok = built.model.eval(), built.tokenizer
    ids = encode(tok, task.val_texts, 48)
    ev = evaluate(model, ids, task.val_labels, tok.pad_token_id, torch.device("cpu"), batch_size=4,
                  keep_vectors=len(ids))
    with torch.inference_mode():
        enc = tok(task.val_texts, padding=True, return_tensors="pt")
        out = model(**enc, output_hidden_states=True)
        loss = torch.nn.functional.cross_entropy(out.logits, torch.tensor(task.val_labels))
        pooled = model.bert(**enc).pooler_output
    assert ev.loss == pytest.approx(float(loss), rel=1e-5)
    assert ev.accuracy == float((out.logits.argmax(-1) == torch.tensor(task.val_labels)).float().mean())
    assert np.allclose(ev.vectors, pooled.numpy(), atol=1e-5)


def test_the_learning_rate_warms_up_then_decays_to_zero():
    assert [lr_factor(p, 0.1) for p in (0.0, 0.05, 0.1, 0.55, 1.0)] == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0])


def test_pca_keeps_the_two_directions_of_largest_spread():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5)) * np.array([10.0, 3.0, 0.1, 0.1, 0.1])
    p = pca_2d(x)
    assert p.shape == (200, 2)
    assert np.var(p[:, 0]) > np.var(p[:, 1]) > 5 * np.var(x[:, 2])
    assert np.allclose(np.abs(p[:, 0]), np.abs(x[:, 0] - x[:, 0].mean()), atol=0.5)


def test_every_start_gets_the_same_new_head_from_the_same_seed(tiny_mlm_dir, tmp_path):
    from transformers import BertForMaskedLM

    other = tmp_path / "other"
    torch.manual_seed(123)
    BertForMaskedLM.from_pretrained(tiny_mlm_dir).save_pretrained(other)  # same shape, consumed other draws
    AutoTokenizer.from_pretrained(tiny_mlm_dir).save_pretrained(other)
    a = build_model(tiny_finetune_config(tiny_mlm_dir, FROM_RUN), ["x", "y"]).model
    b = build_model(tiny_finetune_config(other, FROM_RUN), ["x", "y"]).model
    c = build_model(tiny_finetune_config(tiny_mlm_dir, FROM_RUN, init="random"), ["x", "y"]).model
    assert torch.equal(a.classifier.weight, b.classifier.weight)
    assert torch.equal(a.classifier.weight, c.classifier.weight)
    assert not torch.equal(a.bert.embeddings.word_embeddings.weight, c.bert.embeddings.word_embeddings.weight)


def test_a_stopped_run_still_saves_its_model(tiny_mlm_dir, tmp_path):
    control = RunControl()
    control.stop_event.set()
    metrics = FinetuneMetrics()
    status = run_finetune(tiny_finetune_config(tiny_mlm_dir, FROM_RUN), word_task(10), metrics, control,
                                               tmp_path / "model")
    assert status == Status.STOPPED
    assert (tmp_path / "model" / "model.safetensors").is_file()
    assert metrics.get("message").startswith("Stopped at step 0")


def test_the_csv_has_one_row_per_step_and_a_column_per_topic(finished):
    snap = finished[1]
    lines = finetune_csv(snap).splitlines()
    assert lines[0].split(",")[-2:] == ["p(fruit)", "p(vehicle)"]
    assert len(lines) == 1 + len(set(snap.steps) | set(snap.eval_steps))


def test_settings_out_of_range_are_refused_with_the_value():
    from bertdemo.finetune.config import config_from_request

    with pytest.raises(ValueError, match="learning_rate 5 is outside"):
        config_from_request({"learning_rate": 5})
    with pytest.raises(ValueError, match="Unknown fine-tuning setting"):
        config_from_request({"init_path": "/etc"})
    with pytest.raises(ValueError, match="batch_size must be a int"):
        config_from_request({"batch_size": "many"})
    with pytest.raises(ValueError, match="init 'x' is not one of"):
        config_from_request({"init": "x"})


def test_paused_time_eats_neither_the_budget_nor_the_learning_rate(tiny_mlm_dir, tmp_path):
    """A run paused for longer than its whole time budget resumes where it was: the budget and the schedule
    count training time only (the clock moves only while the run is paused)."""
    import threading

    from tests.helpers import FakeClock, wait_until

    clock, control, metrics = FakeClock(), RunControl(), FinetuneMetrics()
    control.pause_event.set()  # paused before the first step (after the starting evaluation)
    cfg = tiny_finetune_config(tiny_mlm_dir, epochs=1, time_budget_s=60)
    done = {}
    worker = threading.Thread(target=lambda: done.update(status=run_finetune(
        cfg, word_task(10), metrics, control, tmp_path / "model", clock=clock)), daemon=True)
    worker.start()
    wait_until(lambda: metrics.get("status") == Status.PAUSED, timeout=120, message=lambda: metrics.get("message"))
    clock.now += 1000  # paused for much longer than the 60-second budget
    control.pause_event.clear()
    worker.join(120)
    snap = metrics.snapshot()
    assert done["status"] == Status.FINISHED and snap.message.startswith("Finished all planned steps"), snap.message
    assert snap.step == snap.total_steps and snap.elapsed_s == 0.0 and max(snap.wall_s) == 0.0  # training time only
    total = snap.total_steps
    assert snap.lr == pytest.approx([3e-3 * lr_factor(step / total, 0.1) for step in snap.steps[:-1]] + [0.0])
    assert control.paused_at == [0]


def test_a_stopped_run_scores_only_the_fixed_sample_and_says_so(tiny_mlm_dir, tmp_path):
    """A Stop frees the training slot within seconds: its final evaluation is the fixed validation sample (the
    whole validation and test splits are left unscored, and the status says so)."""
    control, metrics = RunControl(), FinetuneMetrics()
    control.stop_event.set()
    status = run_finetune(tiny_finetune_config(tiny_mlm_dir, eval_examples=50), word_task(100), metrics, control,
                          tmp_path / "model")
    snap = metrics.snapshot()
    assert status == Status.STOPPED and snap.eval_steps == [0, 0] and snap.eval_examples == 40  # all 40 there are
    assert math.isnan(snap.val_accuracy_all) and math.isnan(snap.test_accuracy)
    assert "not scored on the whole validation and test splits" in snap.message
    assert (tmp_path / "model" / "model.safetensors").is_file()


def test_the_time_budget_keeps_room_for_the_final_evaluation():
    """A 180 s budget "evaluations included" ran 222 s: the final whole-split evaluation came on top. The
    budget now counts it, foreseen (a quarter longer) from the evaluations before, so training stops where it
    still fits."""
    from bertdemo.finetune.engine import FINAL_MARGIN, budget_progress

    assert budget_progress(100.0, 0.0, 180.0) == pytest.approx(100 / 180)
    assert budget_progress(100.0, 40.0, 180.0) == pytest.approx((100 + FINAL_MARGIN * 40) / 180)
    assert budget_progress(130.0, 40.0, 180.0) >= 1.0  # 130 s + 50 s of final evaluation: no more training
    assert budget_progress(1e6, 1e6, 0.0) == 0.0  # no budget: the planned steps end the run


def test_a_run_over_its_budget_says_by_how_much_and_why():
    from bertdemo.finetune.engine import _final_message

    cfg = tiny_finetune_config("unused", time_budget_s=180)
    assert _final_message(104, 591, 179.6, "time budget", cfg) == \
        "The 3-minute time budget ended the run at step 104 of 591 (180 s)."
    over = _final_message(104, 591, 222.0, "time budget", cfg)
    assert "42 s over the budget" in over and "the machine got busier" in over

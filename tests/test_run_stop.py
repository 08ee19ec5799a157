"""Stop takes effect within seconds, also in the middle of a long evaluation."""

from __future__ import annotations

import threading

from bertdemo.pretrain import trainer
from bertdemo.pretrain.run import TrainingRun
from bertdemo.runs.slot import RunManager
from tests.helpers import tiny_run_config, wait_until, wiki_corpus_file


def endless(real):
    """The real held-out evaluation asked over and over until it is told to stop: an evaluation that
    would take hours (the held-out questions are bounded, so a long one is made of many)."""
    def evaluate(model, questions, device, bf16=False, should_stop=lambda: False):
        while True:
            if real(model, questions, device, bf16, should_stop) is None:
                return
    return evaluate


def test_stop_during_a_long_first_evaluation_ends_the_run_within_seconds(tmp_path, monkeypatch):
    evaluating = threading.Event()  # set once the first evaluation has asked whether to stop
    long = endless(trainer.answer_questions)

    def watched(model, questions, device, bf16=False, should_stop=lambda: False):
        def asked() -> bool:
            evaluating.set()
            return should_stop()
        return long(model, questions, device, bf16, asked)

    monkeypatch.setattr(trainer, "answer_questions", watched)
    cfg = tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100)
    run = RunManager(tmp_path / "runs").start_run(TrainingRun(cfg, tmp_path / "runs"))
    wait_until(lambda: evaluating.is_set() or not run.active, message=lambda: run.snapshot().message)
    assert run.active
    run.stop()
    assert run.join(15), "Stop did not end a run that was evaluating"
    assert run.status == "stopped"
    assert run.snapshot().step == 0 and run.snapshot().eval_steps == []  # the cut evaluation is not reported


def test_the_evaluation_a_stopped_run_makes_before_saving_is_bounded_too(tmp_path, monkeypatch):
    """Stop (or the wall-time cap) ends the last evaluation too: after FINAL_EVAL_SECONDS it is cut and the
    run saves. The first evaluation is the real one, asked once, so the run reaches training at once."""
    calls = []
    real = trainer.answer_questions
    long = endless(real)

    def first_short(*args, **kwargs):
        calls.append(len(calls))
        return (real if len(calls) == 1 else long)(*args, **kwargs)

    monkeypatch.setattr(trainer, "answer_questions", first_short)
    monkeypatch.setattr(trainer, "FINAL_EVAL_SECONDS", 0.0)
    cfg = tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100_000, eval_every=100_000)
    run = RunManager(tmp_path / "runs").start_run(TrainingRun(cfg, tmp_path / "runs"))
    wait_until(lambda: run.snapshot().step >= 3 or not run.active, message=lambda: run.snapshot().message)
    run.stop()
    assert run.join(30), "the final evaluation of a stopped run held the training slot"
    snap = run.snapshot()
    assert run.status == "stopped" and len(calls) == 2  # the first evaluation and the (cut) final one
    assert snap.eval_steps == [0] and snap.last_checkpoint  # the cut evaluation is not reported; the run saved

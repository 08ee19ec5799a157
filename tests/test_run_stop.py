"""Stop takes effect within seconds, also in the middle of a long evaluation."""

from __future__ import annotations

import threading

from bertdemo.pretrain import trainer
from bertdemo.pretrain.service import RunManager
from tests.helpers import tiny_run_config, wait_until, wiki_corpus_file


def test_stop_during_a_long_first_evaluation_ends_the_run_within_seconds(tmp_path, monkeypatch):
    evaluating = threading.Event()  # set once the first evaluation has asked whether to stop
    real = trainer.evaluate_heldout

    def watched(*args, should_stop=lambda: False, **kwargs):
        def asked() -> bool:
            evaluating.set()
            return should_stop()
        return real(*args, should_stop=asked, **kwargs)

    monkeypatch.setattr(trainer, "evaluate_heldout", watched)
    cfg = tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100, eval_batches=1_000_000)
    run = RunManager(tmp_path / "runs").start(cfg)
    wait_until(lambda: evaluating.is_set() or not run.active, message=lambda: run.snapshot().message)
    assert run.active
    run.stop()
    assert run.join(15), "Stop did not end a run that was evaluating"  # a full evaluation would take hours
    assert run.status == "stopped"
    assert run.snapshot().step == 0 and run.snapshot().eval_steps == []  # the cut evaluation is not reported


def test_the_evaluation_a_stopped_run_makes_before_saving_is_bounded_too(tmp_path, monkeypatch):
    """Stop (or the wall-time cap) ends the last evaluation too: after FINAL_EVAL_SECONDS it is cut and the
    run saves. The first evaluation is skipped here (one batch) so the run reaches training at once."""
    calls = []
    real = trainer.evaluate_heldout

    def first_short(objective, heldout, make_batch, cfg, *args, **kwargs):
        calls.append(cfg.monitor.eval_batches)
        short = cfg.replace(eval_batches=1) if len(calls) == 1 else cfg  # the first one: quick
        return real(objective, heldout, make_batch, short, *args, **kwargs)

    monkeypatch.setattr(trainer, "evaluate_heldout", first_short)
    monkeypatch.setattr(trainer, "FINAL_EVAL_SECONDS", 0.0)
    cfg = tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100_000, eval_every=100_000,
                          eval_batches=1_000_000)
    run = RunManager(tmp_path / "runs").start(cfg)
    wait_until(lambda: run.snapshot().step >= 3 or not run.active, message=lambda: run.snapshot().message)
    run.stop()
    assert run.join(30), "the final evaluation of a stopped run held the training slot"
    snap = run.snapshot()
    assert run.status == "stopped" and len(calls) == 2  # the first evaluation and the (cut) final one
    assert snap.eval_steps == [0] and snap.last_checkpoint  # the cut evaluation is not reported; the run saved

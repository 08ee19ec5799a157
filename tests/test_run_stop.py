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

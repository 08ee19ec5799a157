"""A pause asked of a run shows at once: the run holds only after its current step, which on a busy server can take
a while, and the status said nothing until then (a learner pressed Pause and saw the run go on)."""

from __future__ import annotations

from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.runs.slot import PAUSING, BackgroundRun
from bertdemo.runs.status import Status


def _running(tmp_path) -> BackgroundRun:
    run = BackgroundRun(tmp_path, MetricsBuffer())  # never started: no loop reaches the pause
    run.metrics.update(status=Status.RUNNING, message="Training on the corpus.")
    return run


def test_pause_says_pausing_until_the_run_holds_and_resume_before_it_takes_it_back(tmp_path):
    run = _running(tmp_path)
    run.pause()
    snap = run.snapshot()
    assert run.control.pause_event.is_set() and (snap.status, snap.message) == ("running", PAUSING)
    run.resume()
    snap = run.snapshot()
    assert not run.control.pause_event.is_set() and (snap.status, snap.message) == ("running", "Training.")


def test_a_run_not_running_is_not_told_to_pause(tmp_path):
    run = _running(tmp_path)
    run.metrics.update(status=Status.STOPPING, message="Stopping after this step…")
    run.pause()
    assert not run.control.pause_event.is_set() and run.snapshot().message == "Stopping after this step…"

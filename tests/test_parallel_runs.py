"""Several runs at once (``--parallel-runs``): with two slots, two visitors' runs train at the same time, each
paused, stopped and saved by its own owner token into its own folder, while a third visitor's start waits in
the queue and starts when a slot frees; one visitor still trains one run at a time. One slot by default."""

from __future__ import annotations

import pytest

from bertdemo.context import AppContext
from bertdemo.models.device import default_parallel_runs
from bertdemo.runs.service import NOT_YOURS, RunAction
from bertdemo.settings import Limits
from tests.helpers import FakeClock, tiny_run_config, wait_until

CAP_S = 600.0  # a public server's cap: reached only by moving the clock, which this test never does


def test_one_run_at_a_time_unless_the_operator_says_otherwise(tmp_path):
    assert AppContext.for_tests(tmp_path).runs.manager.slots == 1
    assert default_parallel_runs("cpu") == 1  # a CPU trains one run at a time by default


@pytest.mark.slow  # three pretraining runs, two at once
def test_two_slots_train_two_visitors_runs_at_once_and_queue_a_third(tmp_path, corpus):
    ctx = AppContext.for_tests(tmp_path, public=True, clock=FakeClock(), parallel_runs=2,
                               limits=Limits(max_minutes=CAP_S / 60))
    pretrain, folder = ctx.pretrain_runs, tmp_path / "runs"
    visitors = {"a": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.3"}

    def start(who: str):
        token, visitor = f"tok-{who}", visitors[who]
        cfg = tiny_run_config(corpus, folder, steps=5000, eval_every=5000, checkpoint_every=0, seed=len(who))
        return ctx.runs.start_or_queue(token, visitor, "pretraining run",
                                       lambda: pretrain.start(cfg, token, visitor=visitor))

    runs = {}
    try:
        runs["a"], runs["b"] = start("a"), start("b")
        assert runs["a"].run_id != runs["b"].run_id
        wait_until(lambda: all(r.snapshot().step >= 1 or not r.active for r in runs.values()), timeout=300,
                   what="both runs to train")
        assert [r.active for r in runs.values()] == [True, True]
        # a page follows its own run (the tab's poll reads inside viewing(its owner token)); a page without a
        # run of its own, or any code outside a poll, sees the latest run
        for token, want in (("tok-a", runs["a"]), ("tok-b", runs["b"]), ("tok-stranger", runs["b"]), ("", runs["b"])):
            with ctx.runs.manager.viewing(token):
                assert pretrain.current is want and pretrain.status()["run_id"] == want.run_id, token
        assert pretrain.current is runs["b"]
        place = start("c")  # both slots busy: the third visitor waits
        assert (place.position, place.run_id) == (1, "")
        assert ctx.runs.queued("tok-c", visitors["c"]).position == 1

        # each owner reaches their own run; a stranger neither
        assert ctx.runs.status("tok-a")["run_id"] == runs["a"].run_id
        assert ctx.runs.status("tok-b")["run_id"] == runs["b"].run_id
        with pytest.raises(ValueError, match=NOT_YOURS):
            ctx.runs.control(RunAction.STOP, "tok-stranger")
        ctx.runs.control(RunAction.PAUSE, "tok-a")
        wait_until(lambda: runs["a"].status == "paused", timeout=120, what="the first run to pause")
        b_step = runs["b"].snapshot().step
        wait_until(lambda: runs["b"].snapshot().step > b_step, timeout=120, what="the second run to go on")
        assert runs["a"].status == "paused" and runs["b"].active  # one owner's pause is theirs alone

        ctx.runs.control(RunAction.STOP, "tok-b")  # its slot frees: the third visitor's run starts
        wait_until(lambda: ctx.runs.queued("tok-c", visitors["c"]).run_id, timeout=300,
                   what="the queued run to start in the freed slot")
        runs["c"] = ctx.runs.manager.current
        assert runs["c"].run_id == ctx.runs.queued("tok-c", visitors["c"]).run_id
        assert runs["c"].may_control("tok-c") and not runs["c"].may_control("tok-a")
        assert runs["a"].status == "paused"  # untouched by the others' stop and start

        ctx.runs.control(RunAction.STOP, "tok-c")
        assert runs["c"].join(120)
        with pytest.raises(ValueError, match="one run at a time per visitor"):  # a slot is free, but not for a
            pretrain.start(tiny_run_config(corpus, folder, steps=20), "tok-a2", visitor=visitors["a"])  # second of theirs
        ctx.runs.control(RunAction.STOP, "tok-a")
        assert runs["a"].join(120) and runs["b"].join(120)
        assert ctx.runs.status("tok-b")["run_id"] == runs["b"].run_id  # an owner's ended run, not the latest
    finally:
        for run in runs.values():
            run.stop()
            run.join(120)
        ctx.runs.shutdown(timeout=60)
    saved = {who: pretrain.saved_model(run) for who, run in runs.items()}
    for who, run in runs.items():  # each run saved its own checkpoint, in its own folder
        assert run.status == "stopped" and saved[who] is not None and run.run_folder in saved[who].parents
    assert len({str(path) for path in saved.values()}) == 3

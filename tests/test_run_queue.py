"""The fair queue for the training slot: a start that finds the slot busy waits its turn (one waiting run per
visitor, first come first served, its place and estimated start, cancel), and starts by itself when the slot
frees — for every run kind."""

from __future__ import annotations

import pytest

from bertdemo.runs.queue import Place, RunQueue
from tests.helpers import FakeClock, wait_until
from tests.test_run_kinds import CAP_S, TINY_STARTS, _context


class Slot:
    """A slot a test frees by hand (the queue's rules alone, no training)."""

    def __init__(self) -> None:
        self.busy = True
        self.left = 120.0
        self.started: list[str] = []

    def start(self, name: str, fail: str = ""):
        def go():
            if fail:
                raise ValueError(fail)
            self.busy = True
            self.started.append(name)
            return type("Run", (), {"run_id": name})()
        return go


def test_one_waiting_run_per_visitor_first_come_first_served():
    slot = Slot()
    queue = RunQueue(lambda: not slot.busy, lambda: slot.left if slot.busy else 0.0, default_s=600.0)
    first = queue.start_or_wait("ann", "pretraining run", slot.start("a"))
    assert first == Place(1, 120.0, "pretraining run")
    assert "number 1 in the queue" in first.sentence() and "about 2 min" in first.sentence()
    with pytest.raises(ValueError, match="already have a run waiting"):
        queue.start_or_wait("ann", "pretraining run", slot.start("a2"))
    assert queue.start_or_wait("bob", "fine-tuning run", slot.start("b"), estimate_s=None).ahead_s == 720.0
    assert queue.start_or_wait("cy", "pretraining run", slot.start("c", fail="The corpus is gone.")).position == 3
    assert [(p, k) for p, k, _label, _s in queue.waiting()] == [(1, "ann"), (2, "bob"), (3, "cy")]
    assert queue.cancel("bob") and not queue.cancel("bob")
    assert queue.place("cy").position == 2
    queue.close()  # the test dispatches by hand
    assert queue.dispatch_once() is None  # the slot is busy: nobody starts
    slot.busy = False
    assert queue.dispatch_once().run_id == "a" and slot.started == ["a"]
    assert queue.place("ann").sentence() == "Your queued pretraining run has started (run a)."
    assert queue.dispatch_once() is None  # a started with the slot: cy waits
    slot.busy = False
    assert queue.dispatch_once().error == "The corpus is gone."
    assert queue.place("cy").sentence() == "Your queued pretraining run could not start: The corpus is gone."
    assert queue.waiting() == []


def test_a_start_is_direct_when_the_slot_is_free_and_nobody_waits():
    slot = Slot()
    slot.busy = False
    queue = RunQueue(lambda: not slot.busy, lambda: 0.0)
    assert queue.start_or_wait("ann", "run", slot.start("a")).run_id == "a"
    assert queue.place("ann") is None


def test_the_queue_is_bounded():
    slot = Slot()
    queue = RunQueue(lambda: not slot.busy, lambda: None, max_waiting=2)
    queue.start_or_wait("a", "run", slot.start("a"))
    assert queue.start_or_wait("b", "run", slot.start("b")).ahead_s is None  # the live run's end is unknown
    with pytest.raises(ValueError, match="2 runs are waiting for the training slot, the most"):
        queue.start_or_wait("c", "run", slot.start("c"))
    queue.close()


@pytest.mark.parametrize("kind_name", sorted(TINY_STARTS))
def test_a_busy_slot_queues_the_start_of_every_kind_and_starts_it_when_free(kind_name, tmp_path, corpus,
                                                                            tiny_mlm_dir):
    clock = FakeClock()
    ctx = _context(tmp_path, clock)
    kinds = {kind.name: kind for kind in ctx.runs.kinds}
    folder = tmp_path / "runs"
    start = TINY_STARTS[kind_name]

    def queued_start(token: str, visitor: str):
        return ctx.runs.start_or_queue(token, visitor, kinds[kind_name].label + " run",
                                       lambda: start(kinds[kind_name], folder, corpus, tiny_mlm_dir, token))

    first = queued_start("tok-a", "10.0.0.1")
    second = None
    try:
        wait_until(lambda: first.snapshot().step >= 1 or not first.active, timeout=180)
        place = queued_start("tok-b", "10.0.0.2")
        # the live run may hold the slot to its cap, a fine-tuning run to its time budget (the cap less its room)
        held = {"pretrain": CAP_S, "finetune": ctx.settings.public_limits.training_budget_s}[kind_name]
        assert (place.position, place.ahead_s) == (1, held)
        assert ctx.runs.queued("tok-b", "10.0.0.2") == place
        assert queued_start("tok-c", "10.0.0.3").position == 2
        assert ctx.runs.cancel_queued("tok-c", "10.0.0.3")
        first.stop()
        wait_until(lambda: ctx.runs.queued("tok-b", "10.0.0.2").run_id, timeout=180, what="the queued run to start")
        second = ctx.runs.current
        assert second is not first and second.run_id == ctx.runs.queued("tok-b", "10.0.0.2").run_id
        assert second.may_control("tok-b") and not second.may_control("tok-a")  # it is the queued visitor's
        assert ctx.runs.queued("tok-c", "10.0.0.3") is None
    finally:
        for run in (first, second):
            if run is not None:
                run.stop()
                run.join(120)
        ctx.runs.shutdown(timeout=60)

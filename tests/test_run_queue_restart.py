"""The runs waiting for the training slot outlive a server restart: each queued start's recipe is kept, in queue
order, in one file of the runs folder (replaced atomically at every change), and the restarted server queues them
again, in their order, each starting by itself — as its visitor, with its owner token — when its turn comes."""

from __future__ import annotations

import json
import threading

import pytest

from bertdemo.context import AppContext
from bertdemo.runs.queue import RunQueue
from bertdemo.runs.service import QUEUE_FILE
from tests.helpers import tiny_run_config, wait_until


class Slot:
    """A slot the test frees by hand."""

    def __init__(self) -> None:
        self.busy = True
        self.started: list[str] = []
        self.lock = threading.Lock()

    def start(self, name: str):
        def go():
            with self.lock:
                self.busy = True
                self.started.append(name)
            return type("Run", (), {"run_id": f"run-{name}"})()
        return go


# a visitor's tiny run, as the page's form sends it (the embedded Wikipedia summaries: a public server's corpus)
SETTINGS = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus="wiki", seq_len=32, batch_size=8, steps=12, lr=2e-3, warmup_steps=2, eval_every=50,
                eval_batches=1, checkpoint_every=0, seed=1)


def _queue(slot: Slot, path) -> RunQueue:
    return RunQueue(lambda: not slot.busy, lambda: 60.0, default_s=60.0, path=path)


def test_the_waiting_runs_are_kept_in_order_and_queued_again_after_a_restart(tmp_path):
    path = tmp_path / "runs" / QUEUE_FILE
    slot = Slot()
    before = _queue(slot, path)
    before.start_or_wait("10.0.0.1", "pretraining run", slot.start("a"), 30.0, recipe={"name": "a"})
    before.start_or_wait("10.0.0.2", "fine-tuning run", slot.start("b"), recipe={"name": "b"})
    before.start_or_wait("10.0.0.3", "pretraining run", slot.start("c"))  # no recipe: not kept
    before.start_or_wait("10.0.0.4", "pretraining run", slot.start("d"), recipe={"name": "d"})
    assert before.cancel("10.0.0.2")
    assert [e["recipe"]["name"] for e in json.loads(path.read_text())] == ["a", "d"]
    before.close()  # the server stops: nothing more starts

    after = _queue(slot, path)  # the restarted server
    assert after.restore(lambda recipe: slot.start("again-" + recipe["name"])) == 2
    assert [(pos, key, label) for pos, key, label, _s in after.waiting()] == [
        (1, "10.0.0.1", "pretraining run"), (2, "10.0.0.4", "pretraining run")]
    assert after.place("10.0.0.4").ahead_s == 60.0 + 30.0  # the live run's time, then the first one's own estimate
    slot.busy = False
    wait_until(lambda: after.place("10.0.0.1").run_id, timeout=30, what="the first kept run to start")
    assert slot.started == ["again-a"] and after.place("10.0.0.1").run_id == "run-again-a"
    assert [e["recipe"]["name"] for e in json.loads(path.read_text())] == ["d"]  # out of the file once started
    slot.busy = False
    wait_until(lambda: after.place("10.0.0.4").run_id, timeout=30, what="the second kept run to start")
    assert slot.started == ["again-a", "again-d"] and json.loads(path.read_text()) == []
    after.close()


def test_an_unreadable_or_foreign_queue_file_is_an_empty_queue(tmp_path):
    slot = Slot()
    path = tmp_path / QUEUE_FILE
    for text in ("{not json", json.dumps({"key": "x"}), json.dumps([{"key": "x"}, 5, None])):
        path.write_text(text)
        assert _queue(slot, path).restore(lambda recipe: slot.start("x")) == 0
    path.write_text(json.dumps([{"key": "a", "label": "pretraining run", "recipe": {"kind": "gone"}},
                                {"key": "b", "label": "pretraining run", "recipe": {"kind": "pretrain"}}]))

    def make(recipe):
        if recipe["kind"] == "gone":
            raise ValueError("no run kind 'gone' on this server")
        return slot.start(recipe["kind"])

    queue = _queue(slot, path)
    assert queue.restore(make) == 1 and [key for _p, key, _l, _s in queue.waiting()] == ["b"]
    queue.close()


@pytest.mark.slow  # a server built, stopped and built again around a queued run
def test_a_restarted_server_starts_the_kept_run_as_its_visitor(tmp_path, corpus):
    """The real kinds: a pretraining start queued behind a live run, the server stopped (the live run saved, the
    queued one never started), a new server on the same runs folder starts it with its owner token."""
    first = AppContext.for_tests(tmp_path, public=True)
    folder = tmp_path / "runs"
    live = first.pretrain_runs.start(tiny_run_config(corpus, folder, steps=5000, checkpoint_every=0), "tok-live",
                                     visitor="10.0.0.1")
    try:
        wait_until(lambda: live.snapshot().step >= 1 or not live.active, timeout=180)
        place = first.runs.start_or_queue("tok-waiting", "10.0.0.9", "pretraining run",
                                          lambda: first.pretrain_runs.start(SETTINGS, "tok-waiting", visitor="10.0.0.9"),
                                          recipe={"kind": "pretrain", "settings": SETTINGS})
        assert place.position == 1
    finally:
        assert first.runs.shutdown(timeout=120)  # the server stops: the live run saves, the queued one waits
    assert (folder / QUEUE_FILE).is_file()

    second = AppContext.for_tests(tmp_path, public=True)
    try:
        assert second.runs.restore_queue() == 1
        wait_until(lambda: (second.runs.queued("tok-waiting", "10.0.0.9") or place).run_id, timeout=180,
                   what="the kept run to start on the restarted server")
        run = second.runs.current
        assert run.run_id == second.runs.queued("tok-waiting", "10.0.0.9").run_id != live.run_id
        assert run.may_control("tok-waiting") and not run.may_control("tok-live")
        assert run.join(180) and run.status == "finished" and run.snapshot().step == 12
        assert json.loads((folder / QUEUE_FILE).read_text()) == []
    finally:
        second.runs.shutdown(timeout=60)

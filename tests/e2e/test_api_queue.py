"""Every API caller can start a run, through a launched public app with ``--parallel-runs 2``: two visitors' runs
train at once, each followed with its owner token; a third visitor who calls /start_run then is queued (its place
and estimated start in the answer), follows it with /queue_status and its owner token, and its run starts by itself
when a slot frees; a stranger behind the same address reads nothing of it, cannot cancel it and cannot queue a
second one for that address; the first visitor cannot stop the run that took its slot. (The queue is the same code
for any number of slots: one launched server checks both.)"""

from __future__ import annotations

import re

import pytest
from gradio_client.exceptions import AppError

from tests.helpers import visitor_client, wait_until

from .api import RUN, poll, wait_ended
from .conftest import launch_app, stop_app


def test_two_visitors_train_at_once_a_third_queues_and_starts_when_a_slot_frees(app_model_dir, tmp_path):
    url, proc = launch_app(["--public", "--offline", "--model", app_model_dir, "--runs-dir", str(tmp_path / "runs"),
                            "--trusted-proxies", "1", "--parallel-runs", "2"], env={"BERTDEMO_ADMIN_TOKEN": ""})
    try:
        clients = {who: visitor_client(url, f"198.51.100.{50 + k}") for k, who in enumerate(("a", "b", "c"))}
        stranger = visitor_client(url, "198.51.100.52")  # behind the third visitor's address
        for who in ("a", "b"):
            clients[who].predict({**RUN, "steps": 3000}, f"tok-{who}", api_name="/start_run")

        def both_train() -> bool:
            snaps = [clients[who].predict(f"tok-{who}", api_name="/run_status") for who in ("a", "b")]
            return all(s["status"] == "running" and s["step"] >= 1 for s in snaps)

        wait_until(both_train, timeout=300, interval=1.0, what="both visitors' runs to train at once")
        ids = {who: clients[who].predict(f"tok-{who}", api_name="/run_status")["run_id"] for who in ("a", "b")}
        assert ids["a"] != ids["b"]

        third = clients["c"]
        answer = third.predict({**RUN, "steps": 20, "eval_every": 10}, "tok-c", api_name="/start_run")
        assert re.search(r"Your pretraining run is number 1 in the queue for the training slot; it should start in "
                         r"about \d+ (s|min)\b", answer), answer
        assert "stop it" not in answer.lower() and "/queue_status" in answer
        place = third.predict("tok-c", api_name="/queue_status")
        assert (place["waiting"], place["position"], place["run_id"], place["error"]) == (True, 1, "", "")
        assert place["estimated_start_s"] > 0

        assert stranger.predict("tok-stranger", api_name="/queue_status") is None  # nothing of it to read
        with pytest.raises(AppError, match="no run waiting"):
            stranger.predict("tok-stranger", api_name="/cancel_queued")
        with pytest.raises(AppError, match="A run from your address is already waiting") as refused:
            stranger.predict(RUN, "tok-stranger", api_name="/start_run")
        assert "stop it" not in str(refused.value).lower()
        assert third.predict("tok-c", api_name="/queue_status")["position"] == 1  # still waiting

        clients["a"].predict("tok-a", api_name="/stop_run")  # stops the first visitor's run alone
        assert clients["b"].predict("tok-b", api_name="/run_status")["status"] == "running"
        wait_until(lambda: poll(third, "tok-c", api_name="/queue_status")["run_id"], timeout=300, interval=1.0,
                   what="the queued run to start in the freed slot")
        started = third.predict("tok-c", api_name="/queue_status")["run_id"]
        assert started not in ids.values() and third.predict(api_name="/run_status")["run_id"] == started
        with pytest.raises(AppError, match="belongs to another visitor"):  # the started run is the third's
            clients["a"].predict("tok-a", api_name="/stop_run")
        clients["b"].predict("tok-b", api_name="/stop_run")  # the third's run trains alone to its end
        assert wait_ended(third)["status"] == "finished"
        for who in ("a", "b"):
            wait_until(lambda who=who: poll(clients[who], f"tok-{who}", api_name="/run_status")["status"] == "stopped",
                       timeout=120, interval=1.0, what=f"run {who} to stop")
        for who, run_id in ids.items():  # each stopped run saved its own checkpoint
            assert any((tmp_path / "runs" / run_id).rglob("config.json")), run_id
    finally:
        stop_app(proc)

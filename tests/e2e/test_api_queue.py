"""Every API caller can start a run, through the launched public app: a visitor who calls /start_run while
another visitor's run trains is queued (its place and estimated start in the answer), follows it with
/queue_status and its owner token, and its run starts by itself when the first one ends; a stranger behind the
same address reads nothing of it, cannot cancel it and cannot queue a second one for that address. Launched with
``--parallel-runs 2``, two visitors' runs train at once, each followed with its owner token, and a third queues."""

from __future__ import annotations

import re

import pytest
from gradio_client.exceptions import AppError

from tests.helpers import visitor_client, wait_until

from .api import RUN, wait_ended
from .conftest import launch_app, stop_app


def test_a_second_visitors_start_is_queued_and_starts_when_the_first_run_ends(public_server):
    first, second = visitor_client(public_server.url, "198.51.100.40"), visitor_client(public_server.url, "198.51.100.41")
    stranger = visitor_client(public_server.url, "198.51.100.41")  # behind the second visitor's address
    first.predict({**RUN, "steps": 3000}, "tok-first", api_name="/start_run")
    started = ""
    try:
        wait_until(lambda: first.predict(api_name="/run_status")["status"] == "running", timeout=300, interval=1.0,
                   what="the first visitor's run to train")
        first_id = first.predict(api_name="/run_status")["run_id"]

        answer = second.predict({**RUN, "steps": 20, "eval_every": 10}, "tok-second", api_name="/start_run")
        assert re.search(r"Your pretraining run is number 1 in the queue for the training slot; it should start in "
                         r"about \d+ (s|min)\b", answer), answer
        assert "stop it" not in answer.lower() and "/queue_status" in answer
        place = second.predict("tok-second", api_name="/queue_status")
        assert (place["waiting"], place["position"], place["run_id"], place["error"]) == (True, 1, "", "")
        assert place["estimated_start_s"] > 0

        assert stranger.predict("tok-stranger", api_name="/queue_status") is None  # nothing of it to read
        with pytest.raises(AppError, match="no run waiting"):
            stranger.predict("tok-stranger", api_name="/cancel_queued")
        with pytest.raises(AppError, match="A run from your address is already waiting") as refused:
            stranger.predict(RUN, "tok-stranger", api_name="/start_run")
        assert "stop it" not in str(refused.value).lower()
        assert second.predict("tok-second", api_name="/queue_status")["position"] == 1  # still waiting

        first.predict("tok-first", api_name="/stop_run")
        wait_until(lambda: second.predict("tok-second", api_name="/queue_status")["run_id"], timeout=300,
                   interval=1.0, what="the queued run to start once the first ended")
        started = second.predict("tok-second", api_name="/queue_status")["run_id"]
        assert started != first_id and second.predict(api_name="/run_status")["run_id"] == started
        with pytest.raises(AppError, match="belongs to another visitor"):  # the started run is the second's
            first.predict("tok-first", api_name="/stop_run")
        assert wait_ended(second)["status"] == "finished"
    finally:
        _cancel(second, "tok-second")  # a failure above leaves nothing waiting for the next test
        for client, token in ((first, "tok-first"), (second, "tok-second")):
            try:
                client.predict(token, api_name="/stop_run")
            except AppError:
                pass  # not theirs, or already ended
        wait_ended(first)
    for client, token, run_id in ((first, "tok-first", first_id), (second, "tok-second", started)):
        client.predict(run_id, token, api_name="/delete_run")  # the visitors' quota is left as it was


def _cancel(client, token: str) -> None:
    try:
        client.predict(token, api_name="/cancel_queued")
    except AppError:
        pass  # it has started (or could not): nothing waits


def test_with_two_slots_two_visitors_train_at_once_and_a_third_queues(app_model_dir, tmp_path):
    url, proc = launch_app(["--public", "--offline", "--model", app_model_dir, "--runs-dir", str(tmp_path / "runs"),
                            "--trusted-proxies", "1", "--parallel-runs", "2"], env={"BERTDEMO_ADMIN_TOKEN": ""})
    try:
        clients = {who: visitor_client(url, f"198.51.100.{50 + k}") for k, who in enumerate(("a", "b", "c"))}
        for who in ("a", "b"):
            clients[who].predict({**RUN, "steps": 3000}, f"tok-{who}", api_name="/start_run")

        def both_train() -> bool:
            snaps = [clients[who].predict(f"tok-{who}", api_name="/run_status") for who in ("a", "b")]
            return all(s["status"] == "running" and s["step"] >= 1 for s in snaps)

        wait_until(both_train, timeout=300, interval=1.0, what="both visitors' runs to train at once")
        ids = {who: clients[who].predict(f"tok-{who}", api_name="/run_status")["run_id"] for who in ("a", "b")}
        assert ids["a"] != ids["b"]
        answer = clients["c"].predict(RUN, "tok-c", api_name="/start_run")
        assert "is number 1 in the queue for the training slot" in answer
        clients["a"].predict("tok-a", api_name="/stop_run")  # stops the first visitor's run alone
        assert clients["b"].predict("tok-b", api_name="/run_status")["status"] == "running"
        wait_until(lambda: clients["c"].predict("tok-c", api_name="/queue_status")["run_id"], timeout=300,
                   interval=1.0, what="the third run to start in the freed slot")
        for who in ("b", "c"):
            clients[who].predict(f"tok-{who}", api_name="/stop_run")
        for who in ("a", "b", "c"):
            wait_until(lambda who=who: clients[who].predict(f"tok-{who}", api_name="/run_status")["status"] == "stopped",
                       timeout=120, interval=1.0, what=f"run {who} to stop")
        for who, run_id in ids.items():  # each stopped run saved its own checkpoint
            assert any((tmp_path / "runs" / run_id).rglob("config.json")), run_id
    finally:
        stop_app(proc)

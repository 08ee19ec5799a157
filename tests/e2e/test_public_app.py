"""The app in public mode (``--public``), driven through gradio_client: server paths are refused with
one message, only the visitor who started a run can stop it, capped settings are refused."""

from __future__ import annotations

import time
import urllib.request

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from bertdemo.models.policy import REFUSED
from tests.e2e.conftest import REPO_ROOT, launch_app, stop_app

RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=3000, lr=2e-3, warmup_steps=5, eval_every=50,
           checkpoint_every=0, seed=1)


@pytest.fixture(scope="module")
def public_app(tiny_mlm_dir, tmp_path_factory):
    runs = tmp_path_factory.mktemp("public-runs")
    url, proc = launch_app(["--public", "--offline", "--model", tiny_mlm_dir, "--runs-dir", str(runs)],
                           env={"BERTDEMO_ADMIN_TOKEN": ""})
    try:
        yield url
    finally:
        stop_app(proc)


def test_page_says_public_mode(public_app):
    with urllib.request.urlopen(public_app + "config", timeout=10) as resp:
        assert "Public mode" in resp.read().decode()


def test_server_paths_refused_with_one_message(public_app):
    client = Client(public_app, verbose=False)
    messages = set()
    for path in ("/etc", "/no/such/folder", str(REPO_ROOT), "bertdemo/assets"):
        with pytest.raises(AppError) as err:
            client.predict("Hello there.", "", path, api_name="/tokenize")
        messages.add(str(err.value))
    assert len(messages) == 1 and REFUSED in messages.pop()


def test_only_the_starter_controls_the_run_and_caps_hold(public_app):
    starter, other = Client(public_app, verbose=False), Client(public_app, verbose=False)
    with pytest.raises(AppError, match="parameters"):
        starter.predict({"preset": "bert-small"}, "tok-a", api_name="/start_run")
    with pytest.raises(AppError, match="cache_dir cannot be set"):
        starter.predict({**RUN, "cache_dir": "/tmp"}, "tok-a", api_name="/start_run")
    with pytest.raises(AppError, match="owner_token"):
        starter.predict(RUN, api_name="/start_run")

    starter.predict(RUN, "tok-a", api_name="/start_run")
    try:
        for token in ("tok-b", ""):
            with pytest.raises(AppError, match="belongs to another visitor"):
                other.predict(token, api_name="/stop_run")
            with pytest.raises(AppError, match="belongs to another visitor"):
                other.predict(token, api_name="/pause_run")
        assert other.predict(api_name="/run_status")["status"] in {"preparing", "running"}  # watching is fine
    finally:
        starter.predict("tok-a", api_name="/stop_run")
    deadline = time.monotonic() + 30
    while (snap := starter.predict(api_name="/run_status"))["status"] not in {"stopped", "finished", "failed"}:
        assert time.monotonic() < deadline, snap
        time.sleep(0.3)
    assert snap["status"] == "stopped" and "/" not in snap["corpus"]

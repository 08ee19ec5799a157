"""app.py: the command line becomes one ServerSettings; the traffic flags reach gradio's queue and launch;
the page is served before the logic loads; the mode line says what this server allows."""

from __future__ import annotations

from pathlib import Path

import pytest

import app
from bertdemo.models.hub import OFFLINE_ENV


def test_public_mode_switches(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert not app.is_public(app.parse_args([]))
    assert app.is_public(app.parse_args(["--public"])) and app.is_public(app.parse_args(["--share"]))
    monkeypatch.setenv("SPACE_ID", "someone/bert-explorer")
    assert app.is_public(app.parse_args([]))
    args = app.parse_args(["--auth", "ann:pw1", "--auth", "bob:pw:2", "--max-upload-mb", "5", "--max-queue", "9"])
    assert args.auth == ["ann:pw1", "bob:pw:2"] and args.max_upload_mb == 5 and args.max_queue == 9
    with pytest.raises(SystemExit):
        app.parse_args(["--auth", "nopassword"])


def test_a_visitor_is_read_behind_the_proxy_a_space_or_the_share_tunnel_puts_in_front(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert app.settings_from_args(app.parse_args(["--public"])).traffic.trusted_proxies == 0  # the peer itself
    assert app.settings_from_args(app.parse_args(["--share"])).traffic.trusted_proxies == 1
    assert app.settings_from_args(app.parse_args(["--public", "--trusted-proxies", "2"])).traffic.trusted_proxies == 2
    monkeypatch.setenv("SPACE_ID", "someone/bert-explorer")
    assert app.settings_from_args(app.parse_args([])).traffic.trusted_proxies == 1
    assert app.settings_from_args(app.parse_args(["--trusted-proxies", "0"])).traffic.trusted_proxies == 0
    with pytest.raises(SystemExit):
        app.parse_args(["--trusted-proxies", "-1"])


def test_the_command_line_becomes_one_settings_object(monkeypatch, tmp_path):
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setenv("BERTDEMO_ADMIN_TOKEN", "s3cret")
    local = app.settings_from_args(app.parse_args(["--runs-dir", str(tmp_path), "--keep-checkpoints", "3",
                                                        "--keep-milestones", "5"]))
    assert local.public is None and local.disk.budget_bytes is None and local.disk.keep_checkpoints == 3
    assert local.disk.keep_milestones == 5 and local.disk.kept_per_run == 8
    assert local.runs_dir == tmp_path and local.disk.roots[0] == tmp_path and local.admin_token == "s3cret"
    public = app.settings_from_args(app.parse_args(["--public", "--model", "my/bert", "--max-steps", "100",
                                                    "--max-model-gb", "0.5"]))
    assert public.public.limits.max_steps == 100 and public.public.max_model_gb == 0.5
    assert public.public.allowed == frozenset({"my/bert"}) and public.default_model == "my/bert"
    assert public.disk.budget_bytes == 10 * 10**9  # 10 GB unless --disk-budget-gb says otherwise
    from gradio.utils import get_upload_folder
    assert Path(get_upload_folder()) in public.disk.roots  # uploads count against the disk budget too
    assert app.settings_from_args(app.parse_args(["--public", "--disk-budget-gb", "2"])).disk.budget_bytes == 2 * 10**9
    assert app.settings_from_args(app.parse_args(["--disk-budget-gb", "0.5"])).disk.budget_bytes == 5 * 10**8
    with pytest.raises(SystemExit):
        app.parse_args(["--keep-checkpoints", "0"])
    with pytest.raises(SystemExit):
        app.parse_args(["--keep-milestones", "-1"])


def test_traffic_flags_reach_queue_and_launch(monkeypatch, tmp_path):
    import bertdemo.ui
    from bertdemo.lazy import LogicLoader
    from bertdemo.ui.queue_polling import WorkSignal

    for var in OFFLINE_ENV:  # --offline sets them: put back after the test
        monkeypatch.setenv(var, "1")
    calls = {}

    class FakeQueue:
        event_ids_to_events: dict = {}
        active_jobs: list = [None]
        sleep_when_free = 0.001  # gradio's own idle waits
        progress_update_sleep_when_free = 0.01

        async def push(self, body, request, username):
            return True, "event", "success"

        async def process_events(self, events, batch, begin_time, fn):
            return None

    class FakeDemo:
        def queue(self, **kw):
            calls["queue"] = kw
            self._queue = FakeQueue()
            return self

        def launch(self, **kw):
            from gradio.state_holder import StateHolder

            self.state_holder = StateHolder()  # what gradio's launch makes
            calls["launch"] = kw
            calls["loader started before launch"] = "loader" in calls

        def block_thread(self):
            calls["blocked"] = True

        async def postprocess_data(self, block_fn, predictions, state):
            return predictions

    def fake_build_app(ctx):
        calls["ctx"] = ctx
        calls["demo"] = FakeDemo()
        return calls["demo"]

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(bertdemo.ui, "build_app", fake_build_app)
    monkeypatch.setattr(LogicLoader, "start", lambda self, warm_up=None: calls.setdefault("loader", warm_up))
    monkeypatch.setattr(app, "_save_runs_on_shutdown", lambda ctx: calls.setdefault("saves on shutdown", ctx))
    app.main(["--offline", "--public", "--runs-dir", str(tmp_path), "--auth", "ann:pw", "--concurrency", "2",
              "--max-queue", "10", "--max-upload-mb", "5", "--max-steps", "100", "--queue-per-visitor", "5",
              "--max-sessions", "300"])
    assert calls["queue"] == {"default_concurrency_limit": 2, "max_size": 10}
    assert calls["launch"]["state_session_capacity"] == 300  # page sessions kept, ~0.6 MB each
    assert calls["ctx"].settings.traffic.queue_per_visitor == 5
    assert app.settings_from_args(app.parse_args(["--public"])).traffic.queue_per_visitor == 16
    assert app.settings_from_args(app.parse_args([])).traffic.queue_per_visitor == 0  # a local benchmark's clients
    assert calls["demo"]._queue.push.__name__ == "limited_push"  # each visitor's share of the queue
    assert type(calls["demo"].state_holder).__name__ == "LazyHolder"  # page sessions copy no configuration at open
    assert calls["demo"].postprocess_data.__qualname__.startswith("_passing")  # skipped outputs cost nothing
    queue = calls["demo"]._queue  # woken by work: an event that joins or ends
    assert isinstance(queue.sleep_when_free, WorkSignal) and queue.progress_update_sleep_when_free.poll_s == 0.05
    assert queue.process_events.__wrapped__.__func__ is FakeQueue.process_events
    assert calls["launch"]["auth"] == [("ann", "pw")] and calls["launch"]["max_file_size"] == 5 * 1024 * 1024
    assert calls["launch"]["prevent_thread_lock"] and calls["blocked"]  # served first…
    assert not calls["loader started before launch"] and callable(calls["loader"])  # …the logic loads after
    settings = calls["ctx"].settings
    assert settings.is_public and settings.offline and settings.public_limits.max_steps == 100
    assert settings.runs_dir == Path(tmp_path) and calls["ctx"].models.hub.offline
    assert calls["saves on shutdown"] is calls["ctx"]


def test_mode_line_names_this_servers_caps():
    from bertdemo.settings import Limits
    from bertdemo.ui.layout import mode_line

    assert "not capped" in mode_line(None)
    line = mode_line(Limits(max_params=4_000_000, max_steps=300, max_minutes=7.5))
    assert "4M parameters" in line and "300 steps" in line and "7.5 minutes" in line


@pytest.mark.parametrize("saved, code", [(True, 0), (False, 1)])
def test_ctrl_c_and_sigterm_take_one_handler_that_saves_the_run_then_exits(monkeypatch, saved, code):
    """SIGINT (Ctrl-C) and SIGTERM are one handler: it asks the runs to shut down (saving the live one) and exits 0,
    or 1 at once when a run could not save in time. tests/e2e/test_shutdown.py sends SIGTERM to a real server with a
    run in every state; this holds that Ctrl-C goes the same way."""
    import signal
    from types import SimpleNamespace

    asked = []

    class Runs:
        def shutdown(self, timeout: float) -> bool:
            asked.append(timeout)
            return saved

    exits = []
    monkeypatch.setattr(app.os, "_exit", lambda status: exits.append(status))
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        app._save_runs_on_shutdown(SimpleNamespace(runs=Runs()))
        handler = signal.getsignal(signal.SIGINT)
        assert handler is signal.getsignal(signal.SIGTERM) and handler is not before[signal.SIGINT]
        try:
            handler(signal.SIGINT, None)
        except SystemExit as ended:  # the run saved: the interpreter ends as usual
            exits.append(ended.code)
    finally:
        for sig, previous in before.items():
            signal.signal(sig, previous)
    assert asked == [app.SHUTDOWN_SAVE_S] and exits == [code]

"""The server's settings: built from plain values, one disk rule, the admin token compared safely."""

from __future__ import annotations

import pytest

from bertdemo.settings import DiskRules, Limits, ServerSettings


def test_the_admin_token_matches_only_itself_whatever_is_typed():
    settings = ServerSettings.build(admin_token="s3cret-ä")
    assert settings.is_admin("s3cret-ä")
    for other in ("s3cret", "", None, "ünïcödé", "\udcff", 5, ["s3cret-ä"]):
        assert not settings.is_admin(other)  # never a TypeError from a non-ASCII or non-text token
    assert not ServerSettings.build(admin_token="").is_admin("")  # no token set: nobody is admin


def test_the_disk_budget_counts_its_folders(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.bin").write_bytes(b"x" * 600)
    rules = DiskRules(budget_bytes=1000, roots=(tmp_path / "runs", tmp_path / "missing"))
    rules.check(adding=400)
    with pytest.raises(ValueError, match="at most 1.0 MB of runs and caches"):
        DiskRules(budget_bytes=10**6, roots=(tmp_path / "runs",)).check(adding=10**6)
    with pytest.raises(ValueError, match="keep at least 1 checkpoint"):
        DiskRules(keep_checkpoints=0)
    DiskRules().check(adding=10**15)  # no budget: anything fits


def test_settings_read_no_environment_and_app_reads_it(monkeypatch):
    import app

    monkeypatch.setenv("BERTDEMO_ADMIN_TOKEN", "from-env")
    monkeypatch.setenv("BERTDEMO_FILL_MASK_BATCH", "3")
    monkeypatch.delenv("SPACE_ID", raising=False)
    built = ServerSettings.build()
    assert (built.admin_token, built.fill_mask_batch) == ("", 16)  # what the code says, not the environment
    served = app.settings_from_args(app.parse_args([]))
    assert (served.admin_token, served.fill_mask_batch) == ("from-env", 3)


def test_the_environment_is_read_in_these_places_only():
    """app.py reads the server's variables; the rest is the libraries' own (the hub's endpoint and offline
    flags, the cache home, ZeroGPU's flag), the gradio import patch's opt-out (read before gradio loads) and
    the training CLI's torchrun variables."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readers = sorted(str(p.relative_to(root)) for p in [root / "app.py", *(root / "bertdemo").rglob("*.py")]
                     if "os.environ" in p.read_text(encoding="utf-8") or "getenv(" in p.read_text(encoding="utf-8"))
    assert readers == ["app.py", "bertdemo/gradio_import.py", "bertdemo/models/hub.py", "bertdemo/pretrain/__main__.py",
                       "bertdemo/storage.py"]


def test_one_hub_probe_per_server(tmp_path):
    from bertdemo.context import AppContext

    ctx = AppContext.for_tests(tmp_path)
    assert ctx.pretrain_runs.hub is ctx.models.policy.hub


def test_one_memory_budget_per_server_from_the_command_line(tmp_path):
    import app
    from bertdemo.context import AppContext

    assert app.settings_from_args(app.parse_args([])).memory_budget_gb == 3.0
    settings = app.settings_from_args(app.parse_args(["--memory-budget-gb", "1.5", "--runs-dir", str(tmp_path)]))
    ctx = AppContext.from_settings(settings)
    assert ctx.memory.max_bytes == 1_500_000_000
    assert ctx.models.budget is ctx.memory and ctx.finetune.budget is ctx.memory  # every cache draws on it
    with pytest.raises(SystemExit):
        app.parse_args(["--memory-budget-gb", "0"])


def test_a_runs_time_budget_leaves_the_cap_room_for_its_start_and_end():
    """A budget as long as the cap left no time for loading, the final evaluation and saving: under a 1.5-minute cap
    the page's default own-data run was stopped with no model kept (issue 52)."""
    assert Limits(max_minutes=1.5).training_budget_s == 90 - 15 - 9
    assert Limits(max_minutes=20).training_budget_s == 1200 - 15 - 120
    assert Limits(max_minutes=0.5).training_budget_s == 15  # never under half the cap

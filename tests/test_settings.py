"""The server's settings: built from plain values, one disk rule, the admin token compared safely."""

from __future__ import annotations

import pytest

from bertdemo.settings import DiskRules, ServerSettings


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

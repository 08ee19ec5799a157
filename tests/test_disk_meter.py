"""The class's disk budget reads the runs folders at most once a second (bertdemo/disk_meter.py): a class answer on a
server that keeps many runs cost a walk of every checkpoint file before (~45 ms against the answer's 0.4 ms)."""

from __future__ import annotations

import pytest

from bertdemo import storage
from bertdemo.disk_meter import DiskMeter
from bertdemo.settings import DiskRules

FULL = "This server keeps at most 2.0 MB of runs and caches"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def walks(monkeypatch) -> list[int]:
    """The byte count of every walk of the budgeted folders, in order."""
    seen: list[int] = []
    real = storage.folder_bytes

    def counted(*folders):
        seen.append(real(*folders))
        return seen[-1]

    monkeypatch.setattr(storage, "folder_bytes", counted)
    return seen


def test_a_burst_of_small_writes_walks_the_folders_once_and_counts_what_it_allowed(tmp_path, walks):
    (tmp_path / "run.bin").write_bytes(b"\0" * 1_000_000)
    clock = Clock()
    meter = DiskMeter(DiskRules(budget_bytes=2_000_000, roots=(tmp_path,)), max_age_s=1.0, clock=clock)
    for _ in range(200):  # 200 pages of 4 KB: 819,200 bytes on top of the 1 MB read
        meter.check(adding=4096)
    assert walks == [1_000_000]
    # the 245th page would pass 2 MB on the reading plus what was allowed: a fresh walk decides (nothing was written)
    for _ in range(45):
        meter.check(adding=4096)
    assert walks == [1_000_000, 1_000_000]
    clock.now += 1.5  # the reading is too old: the next write walks again
    meter.check(adding=4096)
    assert len(walks) == 3


def test_a_full_disk_is_refused_once_the_reading_is_renewed_and_freed_space_is_seen_at_once(tmp_path, walks):
    clock = Clock()
    meter = DiskMeter(DiskRules(budget_bytes=2_000_000, roots=(tmp_path,)), max_age_s=1.0, clock=clock)
    meter.check(adding=4096)
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * 2_000_000)  # a run fills the budget
    clock.now += 1.01
    with pytest.raises(ValueError, match=FULL):
        meter.check(adding=4096)
    with pytest.raises(ValueError, match=FULL):  # still full: each refusal is checked on a fresh walk
        meter.check(adding=4096)
    big.unlink()  # the learner deletes the run: the next write passes without waiting for the reading to age
    meter.check(adding=4096)
    assert walks == [0, 2_000_000, 2_000_000, 0]


def test_no_budget_no_walk(tmp_path, walks):
    DiskMeter(DiskRules(budget_bytes=None, roots=(tmp_path,))).check(adding=10**12)
    assert walks == []


def test_the_apps_class_service_walks_the_disk_once_for_many_answers(tmp_path, walks):
    """The context app.py builds hands the class its meter: 30 answers of one member, one walk."""
    from bertdemo.context import AppContext

    ctx = AppContext.for_tests(tmp_path, public=True)
    new = ctx.classes.store.create_class("A class")
    member = ctx.classes.store.join(new.join_code, "ada")
    for i in range(30):
        assert ctx.classes.store.record_answer(member.token, "tokens", f"q{i}", "a", "a", True)
    assert len(walks) == 1

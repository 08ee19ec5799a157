"""One address, one share of the class feature (issue 52, audit F5 and H6): the classes one address keeps open are
bounded, a teacher can close their class, a class nobody used for a stated time is deleted, and wrong join codes
from one address are slowed down (a join code cannot be guessed at 20 a second)."""

from __future__ import annotations

import pytest

from bertdemo.classroom.db import Database
from bertdemo.classroom.report import class_report
from bertdemo.classroom.store import ClassLimits, ClassStore
from tests.helpers import FakeClock

SCHOOL, OTHER = "203.0.113.7", "198.51.100.9"
DAY = 86_400.0


@pytest.fixture
def clock():
    return FakeClock(1_764_627_089.0)


@pytest.fixture
def store(tmp_path, clock):
    limits = ClassLimits(classes=20, classes_per_address=2, idle_days=30, failed_joins=3, failed_join_window_s=600)
    made = ClassStore(Database.in_folder(tmp_path / "runs"), limits, clock=clock)
    yield made
    made.db.close()


def _wrong_code(store: ClassStore, right: str) -> str:
    return "ZZZZZZ" if right != "ZZZZZZ" else "YYYYYY"


def test_one_address_keeps_a_bounded_number_of_classes_open(store):
    first = store.create_class("Year 10", creator=SCHOOL)
    store.create_class("Year 11", creator=SCHOOL)
    with pytest.raises(ValueError, match="2 classes open on this server") as refused:
        store.create_class("Year 12", creator=SCHOOL)
    assert "close" in str(refused.value).lower()
    store.create_class("Ms Smith's", creator=OTHER)  # another address has its own share
    store.create_class("operator's", creator="")  # no address (a local call, the operator): the server's bound only
    store.close_class(first.teacher_key)  # closing one frees its place
    store.create_class("Year 12", creator=SCHOOL)


def test_a_teacher_closes_their_class_and_everything_of_it_goes(store):
    new = store.create_class("Year 12", creator=SCHOOL)
    ada = store.join(new.join_code, "Ada", address=SCHOOL)
    store.record_answer(ada.token, "embeddings", "embeddings.token-count", 12, 13, False)
    with pytest.raises(ValueError, match="teacher link is not valid"):
        store.close_class(new.join_code)  # the join code closes nothing
    assert store.close_class(new.teacher_key) == "Year 12"
    with pytest.raises(ValueError, match="teacher link is not valid"):
        class_report(store, new.teacher_key)
    with pytest.raises(ValueError, match="No class has this join code"):
        store.join(new.join_code, "Bob", address=OTHER)
    with pytest.raises(ValueError, match="membership has ended"):
        store.member(ada.token)
    with store.db.transaction() as tx:
        assert [tx.one(f"SELECT COUNT(*) FROM {t}")[0] for t in ("classes", "members", "answers")] == [0, 0, 0]


def test_a_class_nobody_used_for_the_stated_time_is_deleted(store, clock):
    idle = store.create_class("idle", creator=SCHOOL)
    used = store.create_class("used", creator=OTHER)
    watched = store.create_class("watched", creator="")
    ada = store.join(used.join_code, "Ada")
    clock.now += 20 * DAY
    store.record_progress(ada.token, "tokens")  # a student of "used" is here (reaches a step)
    class_report(store, watched.teacher_key)  # the teacher of "watched" reads their view
    clock.now += 15 * DAY  # "idle": 35 days unused; the others 15
    store.create_class("new", creator="")
    with pytest.raises(ValueError, match="teacher link is not valid"):
        class_report(store, idle.teacher_key)
    with pytest.raises(ValueError, match="No class has this join code"):
        store.class_of_code(idle.join_code)
    assert class_report(store, used.teacher_key).participants[0].nickname == "Ada"
    assert class_report(store, watched.teacher_key).name == "watched"
    clock.now += 31 * DAY
    with pytest.raises(ValueError, match="teacher link is not valid"):  # nobody used any of them for 31 days
        class_report(store, used.teacher_key)
    assert store.limits.idle_days == 30


def test_wrong_join_codes_from_one_address_are_slowed_down(store, clock):
    new = store.create_class("Year 12", creator=SCHOOL)
    wrong = _wrong_code(store, new.join_code)
    for _ in range(3):
        with pytest.raises(ValueError, match="No class has this join code"):
            store.join(wrong, "probe", address=SCHOOL)
    for code in (new.join_code, wrong):  # the fourth try is refused before any code is looked up, right or wrong
        with pytest.raises(ValueError, match="3 wrong join codes") as refused:
            store.join(code, "Ada", address=SCHOOL)
        assert "10 minutes" in str(refused.value)
    with pytest.raises(ValueError, match="never use 0, 1"):  # a code that cannot be one is said so, and not counted
        store.join("AB0CD2", "Ada", address=OTHER)
    assert store.join(new.join_code, "Bob", address=OTHER).nickname == "Bob"  # another address is not slowed
    clock.now += 601
    assert store.join(new.join_code, "Ada", address=SCHOOL).nickname == "Ada"  # the window has passed

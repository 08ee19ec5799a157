"""The class database: join codes, teacher keys, member tokens, bounds, the teacher's report and CSV, and
the same on a real Postgres (a throwaway cluster started here) and after a kill -9 in the middle of writes."""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bertdemo.classroom import tokens
from bertdemo.classroom.db import SCHEMA_VERSION, Database, migrate
from bertdemo.classroom.report import class_report, csv_text, defuse, hake_gain
from bertdemo.classroom.store import ClassLimits, ClassStore
from tests.helpers import free_port, wait_until

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _pg_tool(name: str) -> str | None:
    return shutil.which(name) or (str(PG_BIN / name) if (PG_BIN / name).exists() else None)


@pytest.fixture(scope="module")
def postgres_url():
    """A Postgres cluster of its own in a temp folder (initdb + pg_ctl, as a non-root user), stopped after."""
    initdb, pg_ctl = _pg_tool("initdb"), _pg_tool("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("POSTGRES NOT TESTED: initdb/pg_ctl not installed (apt-get install -y postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="bertdemo-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the cluster as the postgres user
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    subprocess.run([*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True, timeout=120)
    options = f"-k {folder} -p {port} -c listen_addresses=''"
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-o", options, "-w", "-t", "60", "-l", str(folder / "log"),
                    "start"], check=True, capture_output=True, timeout=90)
    try:
        yield f"postgresql://postgres@/postgres?host={folder}&port={port}"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        made = ClassStore(Database.in_folder(tmp_path / "runs"), ClassLimits(classes=3, students=3, answers=8))
    else:
        url = request.getfixturevalue("postgres_url")
        db = Database(url)
        with db.transaction() as tx:  # each test starts from an empty schema
            tx.execute("DROP SCHEMA public CASCADE")
            tx.execute("CREATE SCHEMA public")
        made = ClassStore(db, ClassLimits(classes=3, students=3, answers=8))
    yield made
    made.db.close()


def test_a_student_joins_with_the_code_and_a_nickname_alone(store):
    new = store.create_class("Year 12 — BERT")
    assert len(new.join_code) == 6 and new.teacher_key not in (new.join_code, new.class_id)
    ada = store.join(new.join_code.lower()[:3] + "-" + new.join_code[3:], "  Ada  ")  # as typed on a phone
    assert (ada.nickname, ada.class_name) == ("Ada", "Year 12 — BERT")
    assert store.member(ada.token).member_id == ada.member_id
    with pytest.raises(ValueError, match="already called 'Ada'"):
        store.join(new.join_code, "Ada")
    with pytest.raises(ValueError, match="No class has this join code"):
        store.join("ZZZZZZ" if new.join_code != "ZZZZZZ" else "YYYYYY", "Bob")


def test_a_forged_or_foreign_token_is_refused(store, tmp_path):
    new = store.create_class("c")
    ada = store.join(new.join_code, "Ada")
    member_id = ada.token.split(".")[0]
    for forged in (member_id, member_id + ".00", tokens.sign(b"another server's key", member_id), "", None):
        with pytest.raises(ValueError, match="not in this class"):
            store.record_answer(forged, "attention", "q1", "cat", "cat", True)
    assert store.own_answers(ada.token) == []


def test_students_see_their_own_answers_and_the_teacher_sees_the_class(store):
    new = store.create_class("c")
    ada, bob, cy = (store.join(new.join_code, n) for n in ("Ada", "Bob", "Cy"))
    for who, guess in ((ada, "cat"), (bob, "dog"), (cy, "cat")):
        store.record_progress(who.token, "tokens")
        assert store.record_answer(who.token, "fill-mask", "top1", guess, "cat", guess == "cat")
    store.record_progress(ada.token, "fill-mask")
    assert not store.record_answer(ada.token, "fill-mask", "top1", "dog", "cat", False)  # the first guess stays
    assert [r[:5] for r in store.own_answers(bob.token)] == [("fill-mask", "top1", "dog", "cat", 0)]
    # concept check: item m1 2 of 3 right before, 3 of 3 after -> <g> = (100 - 66.7) / (100 - 66.7) = 1
    for who, pre, post in ((ada, 1, 1), (bob, 0, 1), (cy, 1, 1)):
        store.record_check(who.token, "pre", "m1", pre)
        store.record_check(who.token, "post", "m1", post)
    store.record_check(ada.token, "pre", "m2", False)  # taken before only: no gain for it
    report = class_report(store, new.teacher_key, step_order=["tokens", "fill-mask"])
    assert [p.nickname for p in report.participants] == ["Ada", "Bob", "Cy"]
    assert all(p.active for p in report.participants)
    assert report.funnel == [("tokens", 3), ("fill-mask", 1)]
    (question,) = report.questions
    assert (question.right, question.wrong, question.truth, question.guesses) == (2, 1, "cat", [("cat", 2), ("dog", 1)])
    (gain,) = report.gains
    assert (gain.item_id, gain.students, gain.post, gain.gain) == ("m1", 3, 100.0, 1.0)
    assert gain.pre == pytest.approx(200 / 3)
    with pytest.raises(ValueError, match="teacher link is not valid"):
        class_report(store, new.join_code)  # the join code opens nothing of the class
    with pytest.raises(ValueError, match="teacher link is not valid"):
        class_report(store, "")


def test_sizes_are_bounded(store):
    classes = [store.create_class(f"c{i}") for i in range(3)]
    with pytest.raises(ValueError, match="holds 3 classes"):
        store.create_class("one too many")
    members = [store.join(classes[0].join_code, n) for n in ("a", "b", "c")]
    with pytest.raises(ValueError, match="class is full"):
        store.join(classes[0].join_code, "d")
    for i in range(8):
        store.record_answer(members[0].token, "s", f"q{i}", "x", "y", False)
    with pytest.raises(ValueError, match="8 answers, the most"):
        store.record_check(members[0].token, "pre", "m1", True)
    assert not store.record_answer(members[0].token, "s", "q0", "x", "y", False)  # a repeat: no new row, no refusal
    with pytest.raises(ValueError, match="8 answers, the most"):
        store.record_answer(members[0].token, "s", "q8", "x", "y", False)
    assert len(store.own_answers(members[0].token)) == 8  # the refused row was rolled back
    with pytest.raises(ValueError, match="at most 40 characters"):
        store.join(classes[1].join_code, "n" * 41)
    with pytest.raises(ValueError, match="phase is 'pre' or 'post'"):
        store.record_check(members[1].token, "during", "m1", True)


def test_csv_export_defuses_formula_cells(store):
    new = store.create_class("c")
    eve = store.join(new.join_code, "=HYPERLINK(\"http://x\")")
    store.record_answer(eve.token, "loss", "below", "+1", "-2", False)
    store.record_check(eve.token, "post", "m1", True)
    rows = list(csv.reader(io.StringIO(csv_text(store, new.teacher_key))))
    assert rows[1][:6] == ["answer", "'=HYPERLINK(\"http://x\")", "loss", "below", "'+1", "'-2"]
    assert rows[2][:4] == ["check", "'=HYPERLINK(\"http://x\")", "post", "m1"]
    assert (defuse("@SUM(A1)"), defuse("plain"), defuse(3)) == ("'@SUM(A1)", "plain", "3")


def test_hake_gain():
    assert hake_gain(40.0, 70.0) == pytest.approx(0.5)
    assert hake_gain(100.0, 100.0) is None
    assert hake_gain(50.0, 25.0) == pytest.approx(-0.5)


def test_migrations_are_applied_once_and_recorded(tmp_path):
    db = Database.in_folder(tmp_path)
    assert migrate(db) == SCHEMA_VERSION
    assert migrate(db) == SCHEMA_VERSION  # again: nothing to do, nothing fails
    with db.transaction() as tx:
        assert tx.all("SELECT version FROM schema_version") == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


def test_the_server_key_is_shared_by_every_store_on_one_database(tmp_path):
    first = ClassStore(Database.in_folder(tmp_path))
    new = first.create_class("c")
    ada = first.join(new.join_code, "Ada")
    second = ClassStore(Database.in_folder(tmp_path))  # another replica, or the server restarted
    assert second.member(ada.token).nickname == "Ada"


WRITER = """
import sys
from bertdemo.classroom.db import Database
from bertdemo.classroom.store import ClassLimits, ClassStore
store = ClassStore(Database.in_folder(sys.argv[1]), ClassLimits(answers=100_000))
new = store.create_class("c")
member = store.join(new.join_code, "Ada")
print(new.teacher_key, flush=True)
i = 0
while True:
    store.record_answer(member.token, "s", f"q{i}", "g", "t", True)
    print(i, flush=True)  # acknowledged: committed before this line
    i += 1
"""


@pytest.mark.slow
def test_nothing_acknowledged_is_lost_on_kill_9(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        teacher = proc.stdout.readline().strip()
        acknowledged = []
        wait_until(lambda: acknowledged.append(int(proc.stdout.readline())) or acknowledged[-1] >= 200, timeout=120)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    store = ClassStore(Database.in_folder(tmp_path))
    with store.db.transaction() as tx:
        assert tx.one("PRAGMA integrity_check") == ("ok",)
    (question_count,) = {len(class_report(store, teacher).questions)}
    assert question_count >= acknowledged[-1] + 1  # every acknowledged answer is there (one more may be)


def test_a_members_learn_answers_reach_the_teachers_view(store):
    """What the Learn tab keeps in the browser (steps reached, a guess, a step read without one, the concept check)
    is what the teacher's view counts, once, however often the page sends it; the guess graded against the question
    the server asked (``asked``), never against a truth the browser kept."""
    from bertdemo.learn import concept_check, predictions
    from bertdemo.learn.steps import STEP_KEYS
    from bertdemo.ui.class_tab import send_answers

    new = store.create_class("c")
    ada = store.join(new.join_code, "Ada")
    question = {"step": "embeddings", "id": "embeddings.token-count", "kind": predictions.NUMBER, "truth": 13.0,
                "tolerance": 0.0, "choices": []}
    progress = predictions.with_record(None, predictions.grade(question, 12))
    skipped = {"step": "order", "id": "order.shuffle-without-positions", "kind": predictions.CHOICE, "truth": "No",
               "choices": ["Yes", "No"], "tolerance": 0.0}
    progress = predictions.with_record(progress, predictions.shown_without_guess(skipped))
    first = concept_check.items()[0]
    wrong = (first.answer + 1) % len(first.choices)
    progress["concept"] = {concept_check.BEFORE: {first.id: wrong}, concept_check.AFTER: {first.id: first.answer}}
    assert send_answers(store, progress, ada.token) == 4  # two steps reached, one item before and after: no guess
    assert send_answers(store, progress, ada.token, asked=question) == 1  # the guess, graded by the server
    assert send_answers(store, progress, ada.token, asked=question) == 0  # sent again: nothing counted twice
    assert [r[:5] for r in store.own_answers(ada.token)] == [("embeddings", "embeddings.token-count", "12", "13", 0)]
    report = class_report(store, new.teacher_key, step_order=list(STEP_KEYS))
    assert dict(report.funnel)["embeddings"] == 1 and dict(report.funnel)["order"] == 1
    (gain,) = report.gains
    assert (gain.item_id, gain.students, gain.pre, gain.post, gain.gain) == (first.id, 1, 0.0, 100.0, 1.0)


def test_the_class_database_counts_in_the_disk_budget(tmp_path):
    """A class, a join and a member's rows are refused when the server's disk budget is full (the SQLite database
    lives in the runs folder the budget counts: issue 52); a class database at a URL is the operator's own."""
    from bertdemo.classroom.service import Classroom
    from bertdemo.settings import DiskRules

    runs = tmp_path / "runs"
    runs.mkdir()
    disk = DiskRules(budget_bytes=2_000_000, roots=(runs,))
    classroom = Classroom("", runs, disk_check=lambda adding: disk.check(adding=adding))
    new = classroom.store.create_class("Budget class")
    member = classroom.store.join(new.join_code, "ada")
    assert classroom.store.record_answer(member.token, "tokens", "q1", "a", "a", True)
    (runs / "big.bin").write_bytes(b"\0" * 2_000_000)  # the runs now fill the budget
    for write in (lambda: classroom.store.create_class("Another"), lambda: classroom.store.join(new.join_code, "bo"),
                  lambda: classroom.store.record_answer(member.token, "tokens", "q2", "a", "a", True)):
        with pytest.raises(ValueError, match="This server keeps at most 2.0 MB of runs and caches"):
            write()
    assert [row[0] for row in classroom.store.rows(new.class_id, "members")] == ["ada"]  # nothing half-written
    elsewhere = Classroom(str(tmp_path / "own.sqlite3"), runs, disk_check=lambda adding: disk.check(adding=adding))
    assert elsewhere.store.create_class("On the operator's database").join_code  # not the runs' budget

"""Classes, their members and what the members did, in the class database (:class:`ClassStore`).

A teacher creates a class (:meth:`ClassStore.create_class`) and gets its join code and a secret teacher key
(only its hash is stored). A student joins with the code and a nickname (:meth:`ClassStore.join`) and gets a
member token signed with the server's key (:mod:`bertdemo.classroom.tokens`), which every later call carries:
:meth:`record_answer` (a Learn question: the guess, the truth, right or not), :meth:`record_check` (a concept
check item, before or after the path), :meth:`record_progress` (a Learn step reached) and :meth:`record_run`.
A member reads only their own answers (:meth:`own_answers`); the class as a whole is read with the teacher key
alone (:meth:`class_of_teacher`, then :mod:`bertdemo.classroom.report`). Every size is bounded (:class:`ClassLimits`).

One address, one share: the classes one address keeps open are bounded (:meth:`ClassStore.create_class` with the
``creator``'s address, stored only as a keyed hash), wrong join codes from one address are counted and refused past
a bound within a window (:meth:`ClassStore.join` with the ``address``), a teacher closes their class
(:meth:`ClassStore.close_class`: everything of it is deleted), and a class nobody used for
:attr:`ClassLimits.idle_days` — neither its teacher's view nor any student — is deleted when the store is next asked
for a class.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from bertdemo.classroom import tokens
from bertdemo.classroom.db import Database, migrate

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or typed on a phone
CODE_LENGTH = 6
NEVER_IN_CODES = "01OI"  # the characters left out of CODE_ALPHABET
PHASES = ("pre", "post")
ACTIVE_S = 300.0  # a member seen within this long is "active"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
CLASSES_LOCK = 4142
DAY_S = 86_400.0
USED_EVERY_S = 60.0  # a class's last use is written at most this often by its teacher's view (it reads every 10 s)


@dataclass(frozen=True)
class ClassLimits:
    """Sizes a server keeps at most."""

    classes: int = 500  # classes on this server (or database)
    students: int = 200  # members per class
    answers: int = 400  # answers per member (questions, checks, steps reached and runs together)
    nickname_chars: int = 40
    name_chars: int = 80
    value_chars: int = 200  # a guess or a truth, as text
    classes_per_address: int = 5  # classes one address keeps open (where the server is told the address: public)
    idle_days: float = 30.0  # a class nobody used this long (its teacher's view, its students) is deleted
    failed_joins: int = 30  # wrong join codes one address may send within failed_join_window_s (a school's NAT:
    failed_join_window_s: float = 600.0  # 30 mistypes; a guesser: 3 a minute, ~1 class found in a year)


@dataclass(frozen=True)
class NewClass:
    class_id: str
    name: str
    join_code: str
    teacher_key: str  # secret: shown to the teacher once, stored only as its hash


@dataclass(frozen=True)
class Member:
    member_id: str
    class_id: str
    class_name: str
    nickname: str
    token: str  # what the member's browser keeps: the signed member id


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _check_id(value: object, what: str) -> str:
    text = str(value or "")
    if not _ID.fullmatch(text):
        raise ValueError(f"The {what} must be 1 to 64 letters, digits, '.', '_', ':' or '-' (got {text[:40]!r}).")
    return text


def _clean_text(value: object, what: str, most: int) -> str:
    text = " ".join(str(value if value is not None else "").split())
    if not text:
        raise ValueError(f"Type a {what}.")
    if len(text) > most or any(ord(c) < 32 for c in text):
        raise ValueError(f"The {what} must be at most {most} characters on one line.")
    return text


def normalise_code(code: object) -> str:
    """A join code as typed (any case, spaces or dashes) -> its canonical form; ValueError when it cannot be one
    (a code holding a character codes never use, 0, 1, O or I, is told so)."""
    text = re.sub(r"[\s-]", "", str(code or "")).upper()
    unused = sorted({c for c in text if c in NEVER_IN_CODES})
    if unused:
        raise ValueError(f"Join codes never use 0, 1, O or I (they are easy to mix up), and this one has "
                         f"{', '.join(unused)}: check the code with your teacher.")
    if len(text) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in text):
        raise ValueError(f"A join code is {CODE_LENGTH} letters and digits, e.g. ABC234.")
    return text


def value_text(value: object, most: int) -> str:
    """A guess or a model's answer as the class keeps it: a number as it reads (13, not 13.0; 0.25), any text on
    one line (line breaks and other control characters as spaces), at most ``most`` characters."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:.10g}"[:most]
    return one_line(value)[:most]


def one_line(value: object) -> str:
    """``value`` as text on one line: each run of whitespace or unprintable characters (line breaks, tabs, zero-width
    and direction marks) one space, none at either end."""
    return " ".join("".join(c if c.isprintable() else " " for c in str(value if value is not None else "")).split())


WRITE_BYTES = 4096  # what one write may add to the database file: a page of SQLite's


class ClassStore:
    """The classes of one server (or of every replica sharing the database). Thread-safe."""

    def __init__(self, db: Database, limits: ClassLimits | None = None,
                 clock: Callable[[], float] = time.time, disk_check: Callable[[int], None] | None = None) -> None:
        """``disk_check(adding)``: raises ValueError when the server's disk budget cannot take ``adding`` more bytes
        (a class, a member or a member's rows written in a database the budget counts; None: not counted)."""
        self.db = db
        self.limits = limits or ClassLimits()
        self.clock = clock
        self._disk_check = disk_check or (lambda adding: None)
        migrate(db)
        self.key = self._server_key()

    @classmethod
    def open(cls, url: str, limits: ClassLimits | None = None) -> ClassStore:
        """The store at a database URL (``postgresql://…``) or SQLite file path."""
        return cls(Database(url), limits)

    def _address_key(self, address: object) -> str:
        """An address as the class database keeps it: a hash keyed with the server's key ("" for none)."""
        text = str(address or "")
        if not text:
            return ""
        return hmac.new(self.key, b"address:" + text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]

    def _expire(self, tx, now: float) -> None:
        """Delete (with all of theirs) the classes nobody used for :attr:`ClassLimits.idle_days`: neither their
        teacher's view nor any member."""
        cutoff = now - self.limits.idle_days * DAY_S
        tx.execute("DELETE FROM classes WHERE used < ? AND NOT EXISTS"
                   " (SELECT 1 FROM members m WHERE m.class_id = classes.id AND m.seen >= ?)", (cutoff, cutoff))

    def _server_key(self) -> bytes:
        """The key member tokens are signed with: made once, kept in the database (every replica shares it)."""
        with self.db.transaction() as tx:
            tx.execute("INSERT INTO server_keys (name, value) VALUES ('member-token', ?) ON CONFLICT (name) DO NOTHING",
                       (secrets.token_hex(32),))
            row = tx.one("SELECT value FROM server_keys WHERE name = 'member-token'")
        return bytes.fromhex(row[0])

    # --- the teacher -----------------------------------------------------------------------------------
    def create_class(self, name: str, creator: object = "") -> NewClass:
        """A new class made from the address ``creator`` ("" when the server is not told addresses: it is local);
        ValueError when this server holds its most classes, or that address keeps its most open."""
        name = _clean_text(name, "class name", self.limits.name_chars)
        self._disk_check(WRITE_BYTES)
        class_id, teacher_key = secrets.token_hex(8), secrets.token_urlsafe(24)
        who, now = self._address_key(creator), self.clock()
        with self.db.transaction() as tx:
            self.db.lock_all(tx, CLASSES_LOCK)
            self._expire(tx, now)
            (count,) = tx.one("SELECT COUNT(*) FROM classes")
            if count >= self.limits.classes:
                raise ValueError(f"This server holds {count} classes, the most it keeps; ask its operator.")
            (mine,) = tx.one("SELECT COUNT(*) FROM classes WHERE creator = ?", (who,)) if who else (0,)
            if mine >= self.limits.classes_per_address:
                raise ValueError(
                    f"Your network's address has {mine} classes open on this server, the most one address keeps: "
                    "close one you no longer need (open its teacher link, then “Close the class”), or wait — a class "
                    f"nobody uses for {self.limits.idle_days:g} days is deleted.")
            for _ in range(20):  # a code not in use
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
                if not tx.one("SELECT 1 FROM classes WHERE join_code = ?", (code,)):
                    break
            tx.execute("INSERT INTO classes (id, name, join_code, teacher_hash, created, creator, used)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)", (class_id, name, code, _hash(teacher_key), now, who, now))
        return NewClass(class_id, name, code, teacher_key)

    def class_of_teacher(self, teacher_key: object) -> tuple[str, str, str]:
        """(class id, name, join code) of the class whose teacher key this is (its teacher's use: the class is not
        idle); ValueError otherwise."""
        key = str(teacher_key or "")
        row = None
        if 0 < len(key) <= 100:
            now = self.clock()
            with self.db.transaction() as tx:
                self._expire(tx, now)
                row = tx.one("SELECT id, name, join_code FROM classes WHERE teacher_hash = ?", (_hash(key),))
                if row is not None:
                    tx.execute("UPDATE classes SET used = ? WHERE id = ? AND used < ?", (now, row[0], now - USED_EVERY_S))
        if row is None:
            raise ValueError("This teacher link is not valid on this server.")
        return row[0], row[1], row[2]

    def close_class(self, teacher_key: object) -> str:
        """Delete the class whose teacher key this is, with its members and everything they recorded (their runs
        stay the runs'); its name. ValueError for any other key."""
        class_id, name, _code = self.class_of_teacher(teacher_key)
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM classes WHERE id = ?", (class_id,))
        return name

    # --- the students ----------------------------------------------------------------------------------
    def class_of_code(self, code: object, address: object = "") -> tuple[str, str]:
        """(class id, name) for a join code typed at ``address`` ("" when unknown); ValueError when no class has it
        (counted against the address), or when the address sent its most wrong codes within the window (refused
        before the code is looked up). A code that cannot be one is said so, and not counted."""
        code = normalise_code(code)
        who, now = self._address_key(address), self.clock()
        since = now - self.limits.failed_join_window_s
        row, failed = None, 0
        with self.db.transaction() as tx:
            self._expire(tx, now)
            if who:
                (failed,) = tx.one("SELECT COUNT(*) FROM join_failures WHERE address = ? AND at >= ?", (who, since))
            if failed < self.limits.failed_joins or not who:
                row = tx.one("SELECT id, name FROM classes WHERE join_code = ?", (code,))
                if row is None and who:
                    tx.execute("DELETE FROM join_failures WHERE at < ?", (since,))
                    tx.execute("INSERT INTO join_failures (address, at) VALUES (?, ?)", (who, now))
        if who and failed >= self.limits.failed_joins:
            raise ValueError(f"{failed} wrong join codes came from your network in the last "
                             f"{self.limits.failed_join_window_s / 60:g} minutes, the most this server takes; wait a "
                             "few minutes, then type the code your teacher gave you.")
        if row is None:
            raise ValueError("No class has this join code; check it with your teacher.")
        return row[0], row[1]

    def join(self, code: object, nickname: object, address: object = "") -> Member:
        """Join the class of ``code`` as ``nickname`` (unique in the class), typed at ``address`` (wrong codes are
        counted against it: :meth:`class_of_code`); ValueError when the code is unknown, the address sent too many
        wrong ones, the nickname is taken or the class full."""
        class_id, class_name = self.class_of_code(code, address)
        nickname = _clean_text(nickname, "nickname", self.limits.nickname_chars)
        self._disk_check(WRITE_BYTES)
        member_id = secrets.token_hex(8)
        now = self.clock()
        with self.db.transaction() as tx:
            self.db.lock_row(tx, "classes", class_id)
            (count,) = tx.one("SELECT COUNT(*) FROM members WHERE class_id = ?", (class_id,))
            if count >= self.limits.students:
                raise ValueError(f"This class is full ({count} students); ask your teacher.")
            if tx.one("SELECT 1 FROM members WHERE class_id = ? AND nickname = ?", (class_id, nickname)):
                raise ValueError(f"Someone in this class is already called {nickname!r}; choose another nickname.")
            tx.execute("INSERT INTO members (id, class_id, nickname, joined, seen) VALUES (?, ?, ?, ?, ?)",
                       (member_id, class_id, nickname, now, now))
        return Member(member_id, class_id, class_name, nickname, tokens.sign(self.key, member_id))

    def member(self, token: object) -> Member:
        """The member a token names (signed by this server, member still in the class); ValueError otherwise."""
        member_id = tokens.verify(self.key, token)
        with self.db.transaction() as tx:
            row = tx.one("SELECT m.class_id, c.name, m.nickname FROM members m JOIN classes c ON c.id = m.class_id"
                         " WHERE m.id = ?", (member_id,))
        if row is None:
            raise ValueError("This class membership has ended; join again with the class code.")
        return Member(member_id, row[0], row[1], row[2], str(token))

    def record_rows(self, token: object, rows: list[tuple[str, tuple]]) -> int:
        """Bounded writes for the member of ``token`` (rows from :meth:`answer_row`, :meth:`check_row`,
        :meth:`progress_row`, :meth:`run_row`) in one transaction; how many were new (a repeat keeps the first).
        The new rows up to the answer limit are kept; past it, ValueError."""
        member_id = tokens.verify(self.key, token)
        self._disk_check(WRITE_BYTES * len(rows))
        new, full = 0, False
        with self.db.transaction() as tx:
            self.db.lock_row(tx, "members", member_id)
            if tx.execute("UPDATE members SET seen = ? WHERE id = ?", (self.clock(), member_id)) != 1:
                raise ValueError("This class membership has ended; join again with the class code.")
            used = sum(tx.one(f"SELECT COUNT(*) FROM {table} WHERE member_id = ?", (member_id,))[0]
                       for table in ("answers", "checks", "progress", "member_runs"))
            for sql, params in rows:
                tx.execute("SAVEPOINT row_write")
                inserted = tx.execute(sql + " ON CONFLICT DO NOTHING", (member_id, *params)) == 1
                if inserted and used + new >= self.limits.answers:  # a repeat is no new row: only new ones refused
                    tx.execute("ROLLBACK TO SAVEPOINT row_write")
                    full = True
                    break
                tx.execute("RELEASE SAVEPOINT row_write")
                new += inserted
        if full:
            raise ValueError(f"You have recorded {used + new} answers, the most this class keeps per student.")
        return new

    def answer_row(self, step_id: str, question_id: str, guess: object, truth: object, correct: bool) -> tuple[str, tuple]:
        """A Learn question answered: the member's guess, the model's answer (``truth``), whether it was right."""
        step_id, question_id = _check_id(step_id, "step id"), _check_id(question_id, "question id")
        most = self.limits.value_chars
        return ("INSERT INTO answers (member_id, step_id, question_id, guess, truth, correct, at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (step_id, question_id, value_text(guess, most), value_text(truth, most), int(bool(correct)),
                 self.clock()))

    def check_row(self, phase: str, item_id: str, correct: bool) -> tuple[str, tuple]:
        """A concept-check item graded, taken ``pre`` (before the path) or ``post`` (after)."""
        if phase not in PHASES:
            raise ValueError(f"The phase is 'pre' or 'post', not {str(phase)[:20]!r}.")
        return ("INSERT INTO checks (member_id, phase, item_id, correct, at) VALUES (?, ?, ?, ?, ?)",
                (phase, _check_id(item_id, "item id"), int(bool(correct)), self.clock()))

    def progress_row(self, step_id: str) -> tuple[str, tuple]:
        """The member reached a Learn step (the teacher's funnel)."""
        return ("INSERT INTO progress (member_id, step_id, at) VALUES (?, ?, ?)",
                (_check_id(step_id, "step id"), self.clock()))

    def run_row(self, run_id: str, kind: str = "pretrain") -> tuple[str, tuple]:
        """The member started run ``run_id`` (the teacher's gallery of curves)."""
        return ("INSERT INTO member_runs (member_id, run_id, kind, at) VALUES (?, ?, ?, ?)",
                (_check_id(run_id, "run id"), _check_id(kind, "run kind"), self.clock()))

    def record_answer(self, token: object, step_id: str, question_id: str, guess: object, truth: object,
                      correct: bool) -> bool:
        """One Learn answer (:meth:`answer_row`); True when it was new (the first answer to a question is kept)."""
        return self.record_rows(token, [self.answer_row(step_id, question_id, guess, truth, correct)]) == 1

    def record_check(self, token: object, phase: str, item_id: str, correct: bool) -> bool:
        """One concept-check item (:meth:`check_row`); the first kept."""
        return self.record_rows(token, [self.check_row(phase, item_id, correct)]) == 1

    def record_progress(self, token: object, step_id: str) -> bool:
        """One Learn step reached (:meth:`progress_row`)."""
        return self.record_rows(token, [self.progress_row(step_id)]) == 1

    def record_run(self, token: object, run_id: str, kind: str = "pretrain") -> bool:
        """One run started (:meth:`run_row`)."""
        return self.record_rows(token, [self.run_row(run_id, kind)]) == 1

    def own_answers(self, token: object) -> list[tuple]:
        """The member's own answers: (step id, question id, guess, truth, correct, at); nobody else's."""
        member_id = tokens.verify(self.key, token)
        with self.db.transaction() as tx:
            return tx.all("SELECT step_id, question_id, guess, truth, correct, at FROM answers WHERE member_id = ?"
                          " ORDER BY at, step_id, question_id", (member_id,))

    def rows(self, class_id: str, table: str) -> list[tuple]:
        """Every row of ``table`` for the class's members, with the nickname first (the report's input;
        reached through the teacher key)."""
        columns = {"members": "m.nickname, m.id, m.joined, m.seen",
                   "answers": "m.nickname, t.step_id, t.question_id, t.guess, t.truth, t.correct, t.at",
                   "checks": "m.nickname, t.phase, t.item_id, t.correct, t.at",
                   "progress": "m.nickname, t.step_id, t.at",
                   "member_runs": "m.nickname, t.run_id, t.kind, t.at"}[table]
        join = "" if table == "members" else f" JOIN {table} t ON t.member_id = m.id"
        with self.db.transaction() as tx:
            return tx.all(f"SELECT {columns} FROM members m{join} WHERE m.class_id = ? ORDER BY 1, 2",
                          (class_id,))

    def is_member(self, token: object) -> str:
        """The member id of a valid token (signed here), without reading the database; "" otherwise."""
        try:
            return tokens.verify(self.key, token)
        except ValueError:
            return ""

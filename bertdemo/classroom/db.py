"""The class database: one connection to SQLite (a file, WAL, every write a transaction synced before it
returns, so nothing acknowledged is lost when the process is killed) or to Postgres (a ``postgresql://`` URL,
for several replicas sharing one database), and the schema's ordered migrations.

The SQL is written once, portable to both: ``?`` placeholders (turned into ``%s`` for Postgres), text ids
made by the application (no autoincrement), times as ``DOUBLE PRECISION`` seconds, booleans as 0/1.
``schema_version`` records the migrations applied; :func:`migrate` applies the missing ones, in order, each
in its own transaction (a second replica starting at once waits on the lock and finds them applied).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DB_FILE = "classes.sqlite3"  # in the runs folder, by default

# (version, statements): appended to, never edited once released
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, (
        "CREATE TABLE server_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE classes (id TEXT PRIMARY KEY, name TEXT NOT NULL, join_code TEXT NOT NULL UNIQUE,"
        " teacher_hash TEXT NOT NULL UNIQUE, created DOUBLE PRECISION NOT NULL)",
        "CREATE TABLE members (id TEXT PRIMARY KEY, class_id TEXT NOT NULL REFERENCES classes(id) ON DELETE CASCADE,"
        " nickname TEXT NOT NULL, joined DOUBLE PRECISION NOT NULL, seen DOUBLE PRECISION NOT NULL,"
        " UNIQUE (class_id, nickname))",
        "CREATE TABLE answers (member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,"
        " step_id TEXT NOT NULL, question_id TEXT NOT NULL, guess TEXT NOT NULL, truth TEXT NOT NULL,"
        " correct INTEGER NOT NULL, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (member_id, step_id, question_id))",
        "CREATE TABLE checks (member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,"
        " phase TEXT NOT NULL, item_id TEXT NOT NULL, correct INTEGER NOT NULL, at DOUBLE PRECISION NOT NULL,"
        " PRIMARY KEY (member_id, phase, item_id))",
        "CREATE TABLE progress (member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,"
        " step_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (member_id, step_id))",
        "CREATE TABLE member_runs (member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,"
        " run_id TEXT NOT NULL, kind TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, PRIMARY KEY (member_id, run_id))",
        "CREATE INDEX members_class ON members (class_id)",
    )),
    (2, (  # one address's share: who made a class (a keyed hash of the address), when it was last used, failed joins
        "ALTER TABLE classes ADD COLUMN creator TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE classes ADD COLUMN used DOUBLE PRECISION NOT NULL DEFAULT 0",
        "UPDATE classes SET used = created",
        "CREATE INDEX classes_creator ON classes (creator)",
        "CREATE TABLE join_failures (address TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX join_failures_address ON join_failures (address, at)",
    )),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


class Database:
    """One connection, used under a lock by every thread of this process (the class writes are small).

    ``transaction()`` yields a cursor-like object whose ``execute(sql, params)`` takes ``?`` placeholders;
    it commits when the block ends (SQLite: ``BEGIN IMMEDIATE``, so writers never interleave) and rolls back
    on an exception."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = is_postgres(url)
        self._lock = threading.RLock()
        self._conn: Any = None
        self._connect()

    @classmethod
    def in_folder(cls, folder: str | Path) -> Database:
        """SQLite in ``folder`` (the runs folder), created when missing."""
        Path(folder).mkdir(parents=True, exist_ok=True)
        return cls(str(Path(folder) / DB_FILE))

    def _connect(self) -> None:
        if self.postgres:
            import psycopg  # only for a Postgres URL

            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            return
        path = self.url.removeprefix("sqlite:///")
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # each commit is on disk before it returns
        conn.execute("PRAGMA foreign_keys=ON")
        self._conn = conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        with self._lock:
            if self._conn is None or (self.postgres and self._conn.closed):
                self._connect()
            conn = self._conn
            if self.postgres:
                with conn.transaction(), conn.cursor() as cur:
                    yield _Tx(cur, self._sql)
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Tx(conn.cursor(), self._sql)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def lock_row(self, tx: _Tx, table: str, key: str) -> None:
        """Postgres: hold ``table``'s row ``key`` until the transaction ends (a bound checked by counting stays
        true across replicas); SQLite's ``BEGIN IMMEDIATE`` holds every writer already."""
        if self.postgres:
            tx.execute(f"SELECT 1 FROM {table} WHERE id = ? FOR UPDATE", (key,))

    def lock_all(self, tx: _Tx, name: int) -> None:
        """Postgres: one advisory lock ``name`` until the transaction ends (e.g. around counting the classes)."""
        if self.postgres:
            tx.execute("SELECT pg_advisory_xact_lock(?)", (name,))

    def version(self) -> int:
        with self.transaction() as tx:
            tx.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)")
            row = tx.one("SELECT MAX(version) FROM schema_version")
        return int(row[0] or 0)


class _Tx:
    def __init__(self, cursor: Any, translate) -> None:
        self._cur = cursor
        self._translate = translate

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        self._cur.execute(self._translate(sql), tuple(params))
        return self._cur.rowcount

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        self._cur.execute(self._translate(sql), tuple(params))
        return self._cur.fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        self._cur.execute(self._translate(sql), tuple(params))
        return list(self._cur.fetchall())


MIGRATION_LOCK = 4141  # the advisory lock replicas take while migrating


def migrate(db: Database) -> int:
    """Apply the migrations ``db`` lacks, in order, each in one transaction; the schema version after."""
    db.version()  # the version table exists
    for version, statements in MIGRATIONS:
        with db.transaction() as tx:
            db.lock_all(tx, MIGRATION_LOCK)
            if tx.one("SELECT 1 FROM schema_version WHERE version = ?", (version,)):
                continue
            for statement in statements:
                tx.execute(statement)
            tx.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    return db.version()

"""The server's classes (:class:`Classroom`): the store opened on first use — SQLite in the runs folder, or
the database URL the server was given (``app.py --class-db``) — so a server nobody teaches on creates nothing."""

from __future__ import annotations

import threading
from pathlib import Path

from bertdemo.classroom.db import Database
from bertdemo.classroom.store import ClassLimits, ClassStore


class Classroom:
    """Where this server's classes live; :attr:`store` opens the database once, on first use. Thread-safe."""

    def __init__(self, url: str, runs_dir: str | Path, limits: ClassLimits | None = None) -> None:
        self.url = url  # "" = SQLite in runs_dir
        self.runs_dir = Path(runs_dir)
        self.limits = limits or ClassLimits()
        self._lock = threading.Lock()
        self._store: ClassStore | None = None

    @property
    def store(self) -> ClassStore:
        with self._lock:
            if self._store is None:
                db = Database(self.url) if self.url else Database.in_folder(self.runs_dir)
                self._store = ClassStore(db, self.limits)
            return self._store

    def member_id(self, token: object) -> str:
        """The member a signed token names ("" for none or a forged one), without a database read once open."""
        if not token:
            return ""
        return self.store.is_member(token)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.db.close()
                self._store = None

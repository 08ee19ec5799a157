"""The server's classes (:class:`Classroom`): the store opened on first use — SQLite in the runs folder, or
the database URL the server was given (``app.py --class-db``) — so a server nobody teaches on creates nothing.

It also says who a class member is to the rest of the server: :meth:`Classroom.visitor_key` turns a member
token the server signed into ``member:<id>`` (the HTTP door makes it the visitor ``member:<id>@<address>``: the
member has their own requests in flight and queued run to follow, while what they hold counts on their address),
:meth:`Classroom.class_of` names such a visitor's class (whose places the run service counts), and
:meth:`Classroom.record_started_run` records a run such a visitor started in their class (the teacher's
gallery)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from bertdemo.classroom import tokens
from bertdemo.classroom.db import DB_FILE, Database
from bertdemo.classroom.store import ClassLimits, ClassStore
from bertdemo.traffic import MEMBER_PREFIX, member_of

log = logging.getLogger(__name__)


class Classroom:
    """Where this server's classes live; :attr:`store` opens the database once, on first use. Thread-safe."""

    def __init__(self, url: str, runs_dir: str | Path, limits: ClassLimits | None = None,
                 disk_check: Callable[[int], None] | None = None) -> None:
        """``disk_check``: the server's disk budget (:meth:`bertdemo.settings.DiskRules.check`), counted for the SQLite
        database in the runs folder; a database at ``url`` is the operator's own, outside the budget."""
        self.url = url  # "" = SQLite in runs_dir
        self.runs_dir = Path(runs_dir)
        self.limits = limits or ClassLimits()
        self._disk_check = None if url else disk_check
        self._lock = threading.Lock()
        self._store: ClassStore | None = None

    @property
    def store(self) -> ClassStore:
        with self._lock:
            if self._store is None:
                db = Database(self.url) if self.url else Database.in_folder(self.runs_dir)
                self._store = ClassStore(db, self.limits, disk_check=self._disk_check)
            return self._store

    def member_id(self, token: object) -> str:
        """The member a signed token names ("" for none or a forged one), without a database read once open."""
        if not token:
            return ""
        return self.store.is_member(token)

    def visitor_key(self, token: str) -> str:
        """``member:<id>`` for a member token this server signed; "" for anything else — no token, an invented
        or altered one, or any token while no class was ever made here (nothing is created to check it)."""
        if not token or len(token) > tokens.MAX_TOKEN_CHARS:
            return ""
        if self._store is None and not self.url and not (self.runs_dir / DB_FILE).is_file():
            return ""
        try:
            member_id = self.member_id(token)
        except Exception:  # the database unreachable: the visitor is their address meanwhile
            log.exception("Could not check a class member token")
            return ""
        return MEMBER_PREFIX + member_id if member_id else ""

    @staticmethod
    def _member_id(visitor: str) -> str:
        """The member id a visitor key names (made from :meth:`visitor_key` by the HTTP door); "" for an address."""
        return member_of(str(visitor or "")).partition(":")[2]

    def class_of(self, visitor: str) -> str:
        """The id of the class of the member ``visitor`` names; "" for a visitor who is no member (or whose
        membership has ended, their class closed)."""
        member_id = self._member_id(visitor)
        if not member_id:
            return ""
        store = self.store
        try:
            return store.member(tokens.sign(store.key, member_id)).class_id
        except ValueError:
            return ""

    def record_started_run(self, visitor: str, run_id: str, kind: str) -> bool:
        """Record run ``run_id`` (of ``kind``) in the class of the member ``visitor`` names (a key made by
        :meth:`visitor_key`, which only the HTTP door writes); False for a visitor who is no member, or when
        the class keeps no more (said in the log: the run itself goes on)."""
        member_id = self._member_id(visitor)
        if not member_id or not run_id:
            return False
        store = self.store
        try:
            return store.record_run(tokens.sign(store.key, member_id), run_id, kind)
        except ValueError as exc:  # a membership ended, a full answer sheet
            log.info("Run %s not recorded in its class: %s", run_id, exc)
            return False

    def own_runs(self, visitor: str) -> tuple[str, str, list[tuple[str, str]]] | None:
        """For the member ``visitor`` names (a key made by :meth:`visitor_key`): their class's name, their
        nickname and the runs they started in it, (run id, kind) oldest first — nobody else's; None for a
        visitor who is no member (or whose membership has ended)."""
        member_id = self._member_id(visitor)
        if not member_id:
            return None
        store = self.store
        try:
            member = store.member(tokens.sign(store.key, member_id))
        except ValueError:
            return None
        runs = sorted((run_id, kind) for nick, run_id, kind, _at in store.rows(member.class_id, "member_runs")
                      if nick == member.nickname)
        return member.class_name, member.nickname, runs

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.db.close()
                self._store = None

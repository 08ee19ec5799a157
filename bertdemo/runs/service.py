"""The rules every run kind obeys, in one place (:class:`RunService`): the machine's one training slot, who
may pause, resume or stop the live run, the per-visitor run quota and expiry on a public server, who may
delete a run, clean-up at start and the save on shutdown.

One address, one share (on a public server): a visitor is an address, and a class membership is a name inside it
(:func:`bertdemo.traffic.member_visitor`), never a new share. What one address holds — starts waiting for the slot
(:attr:`Limits.queued_per_address`) and runs kept on the server (:attr:`Limits.max_runs_per_visitor`), of every
kind — is counted on the address, whatever memberships it took; a class a teacher made has the places the operator
grants classes (:attr:`Limits.class_places`, ``app.py --class-places``): runs, waiting or kept, its members hold
beyond their addresses' shares. Each start is charged to one share — the address while it has room, else its class's
places — recorded with the waiting run (:class:`bertdemo.runs.queue.QueueShare`) and in the run's folder
(:attr:`BackgroundRun.share`), so every kind is counted the same way without a line of its own.

A kind's service (:class:`bertdemo.pretrain.service.PretrainService`,
:class:`bertdemo.finetune.service.FinetuneService`) registers itself here and keeps only its own start checks,
estimates and names; it starts its run through :meth:`RunService.launch`, where whatever listens for started
runs (:attr:`RunService.on_start`: a class records its members' runs) hears of it. Torch-free.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from bertdemo.runs import folders
from bertdemo.runs.kinds import KindRegistry, RunKind
from bertdemo.runs.queue import Place, QueueShare, RunQueue
from bertdemo.runs.slot import BackgroundRun, Clock, RunManager, about
from bertdemo.settings import Limits, ServerSettings
from bertdemo.traffic import MEMBER_PREFIX, address_of, member_of

QUEUE_FILE = ".run-queue.json"  # in the runs folder: the runs waiting for the slot, kept across a restart
MAX_KEPT_CHARS = 100_000  # a larger start (own data's pasted lines) waits in memory alone: a restart forgets it
log = logging.getLogger(__name__)

NOT_YOURS = "This run belongs to another visitor; you can watch it."
NO_RUN = "There is no run to control; press Start first."
ONLY_OWNER_DELETES = "Only the browser that started this run (or this server's administrator) may delete it."
CLASS_SHARE = "class:"  # the share of a class's places: class:<class id> (no address starts with it)
ONE_VISITOR = "one visitor is everyone behind your network's address, class members too"


@dataclass(frozen=True)
class ClassPlaces:
    """A class's places on this server (its teacher's view): ``granted`` by the operator (``--class-places``),
    held by its members' runs ``waiting`` for the training slot and ``kept`` on the server."""

    granted: int
    waiting: int
    kept: int

    @property
    def free(self) -> int:
        """The places no run holds now."""
        return max(0, self.granted - self.waiting - self.kept)


class RunAction(StrEnum):
    """What a visitor may do to the live run."""

    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"


class RunService:
    """One server's training slot and the rules every run kind shares (see the module docstring). Thread-safe."""

    def __init__(self, settings: ServerSettings, clock: Clock = time.monotonic, wall_clock: Clock = time.time) -> None:
        self.settings = settings
        self.runs_dir = Path(settings.runs_dir)
        self.wall_clock = wall_clock  # file times are wall-clock times: an ended run's age is measured on it
        self.manager = RunManager(self.runs_dir, clock, slots=settings.parallel_runs)
        self.kinds = KindRegistry()
        self.queue = RunQueue(self.slot_free, self.busy_seconds, default_s=self.cap_seconds(), clock=clock,
                              path=self.runs_dir / QUEUE_FILE)
        # called with (visitor, run id, kind) once a run of any kind has started, queued or not (AppContext wires them)
        self.on_start: list[Callable[[str, str, str], Any]] = []
        # a class member's visitor key -> their class's id ("" for none); AppContext wires the classroom's
        self.class_of: Callable[[str], str] = lambda visitor: ""

    def set_parallel_runs(self, count: int) -> None:
        """Let up to ``count`` runs train at once (each visitor still one): app.py sets the machine's default
        once torch is loaded, when the operator did not give --parallel-runs."""
        self.manager.slots = max(1, int(count))
        log.info("Up to %d run(s) train at once", self.manager.slots)

    def register(self, kind: RunKind) -> None:
        """Serve runs of ``kind`` (its service calls this once, when it is built)."""
        self.kinds.register(kind)

    # --- the live run ------------------------------------------------------------------------------
    @property
    def current(self) -> BackgroundRun | None:
        """The slot's latest run, of any kind, active or ended (None before the first)."""
        return self.manager.current

    def status(self, owner_token: str = "") -> dict | None:
        """The latest run's snapshot as plain values, from its kind (``kind`` says which); None before any.
        ``owner_token``: that holder's own run when they have one (active, else their latest). Another visitor's
        private run (:mod:`bertdemo.models.run_access`) is not shown to the request being served: only
        :meth:`stranger_status`, which names nothing of it."""
        run = self.manager.run_of(owner_token, ended=True) or self.manager.current
        if run is not None:
            return self.kinds.of(run).status(run)
        latest = self.manager.latest
        return None if latest is None else self.stranger_status(latest)

    @staticmethod
    def stranger_status(run: BackgroundRun) -> dict:
        """What anyone may know of another visitor's private run: its kind, its status, that it is private, and
        how long it keeps the slot (seconds, None when unknown) — no run id, checkpoint, setting, metric or text."""
        left = run.seconds_left() if run.active else 0.0
        whose = f"Another visitor's {run.label} run on their own data"
        if not run.active:
            message = f"{whose} has ended."
        else:
            held = f"holds the training slot for {about(left)} more" if left else "holds the training slot"
            message = f"{whose} {held}; its details are theirs alone."
        return {"kind": run.kind, "status": str(run.status), "private": True,
                "slot_free_in_s": None if left is None else round(left), "message": message}

    def control(self, action: RunAction, owner_token: str = "") -> Any:
        """Pause, resume or stop the live run, of any kind; its snapshot after. On a public server only its
        owner may (and, to stop it, the admin); ValueError otherwise."""
        action = RunAction(action)
        run = self.controlled(owner_token, admin_may=action is RunAction.STOP)
        {RunAction.PAUSE: run.pause, RunAction.RESUME: run.resume, RunAction.STOP: run.stop}[action]()
        return run.snapshot()

    def controlled(self, token: str, admin_may: bool) -> BackgroundRun:
        """The run ``token``'s holder controls: their own active run (with several slots), else the latest run,
        when they may control it (ValueError otherwise)."""
        admin = admin_may and self.settings.is_admin(token)
        run = self.manager.run_of(token) or (self.manager.latest if admin else self.manager.current)
        if run is None:  # another visitor's private run is none to a stranger (not even "not yours")
            raise ValueError(NO_RUN)
        if self.settings.is_public and not run.may_control(token, admin=admin):
            raise ValueError(NOT_YOURS)
        return run

    # --- starting a run ----------------------------------------------------------------------------
    def check_free(self, owner_token: str = "") -> None:
        """ValueError when the slot is busy, saying for how long (a refused start costs nothing more)."""
        self.manager.check_free(owner_token if self.settings.is_public else "")

    def owner(self, token: str) -> str:
        """The token a new run records as its owner: the caller's on a public server, none locally."""
        return token if self.settings.is_public else ""

    def visitor(self, address: str) -> str:
        """Who a new run records as its visitor: the caller (an address, or a class member at their address) on
        a public server, for the quota; locally a class member alone (their class lists the run), else none."""
        return address if self.settings.is_public or address.startswith(MEMBER_PREFIX) else ""

    def cap_seconds(self) -> float | None:
        """The wall-time cap every run gets on a public server (None locally)."""
        public = self.settings.public_limits
        return None if public is None else public.max_seconds

    # --- one address, one share (see the module) ----------------------------------------------------
    def _class_share(self, visitor: str) -> str:
        """``class:<id>`` when ``visitor`` is a member of a class and this server grants classes places; else ""."""
        caps = self.settings.public_limits
        if caps is None or caps.class_places <= 0 or not member_of(visitor):
            return ""
        try:
            class_id = self.class_of(visitor)
        except Exception:  # the class database unreachable: the member counts on their address alone
            log.exception("Could not read a class member's class")
            return ""
        return CLASS_SHARE + class_id if class_id else ""

    def _kept(self, share: str, owner_token: str = "") -> list[str]:
        """The runs of every kind kept on the server (saved or not) charged to ``share``, or started with
        ``owner_token`` (a visitor who moved keeps what their token started)."""
        return [run_id for kind in self.kinds for run_id in folders.runs_owned_by(kind.root, owner_token, share)]

    def _class_taken(self, places: str) -> int:
        """The places of the class share ``places`` that its members' runs hold: waiting, or kept."""
        return self.queue.holding(places) + len(self._kept(places))

    def class_places(self, class_id: str) -> ClassPlaces:
        """Class ``class_id``'s places on this server: granted, and held by its members' waiting and kept runs."""
        caps = self.settings.public_limits
        granted = caps.class_places if caps is not None else 0
        share = CLASS_SHARE + str(class_id)
        if granted <= 0 or not class_id:
            return ClassPlaces(max(0, granted), 0, 0)
        return ClassPlaces(granted, self.queue.holding(share), len(self._kept(share)))

    def _charge(self, owner_token: str, visitor: str) -> str:
        """The share a run starting now counts in: the visitor's address while it has room for one more kept run,
        else their class's places when they have some (a start is checked first: :meth:`check_visitor_share`)."""
        caps = self.settings.public_limits
        address = address_of(visitor)
        places = self._class_share(visitor)
        if caps is None or not places or len(self._kept(address, owner_token)) < caps.max_runs_per_visitor:
            return address
        return places

    @staticmethod
    def _kept_full(count: int, caps: Limits, places: str) -> str:
        return (f"You keep {count} runs on this server, the most one visitor may ({ONE_VISITOR}): delete one of "
                "yours (Runs on this server → Delete, /delete_run or /delete_finetune) to start another."
                + (f" Your class's {caps.class_places} places on this server are taken too (its teacher's view shows "
                   "them)." if places else ""))

    def check_visitor_share(self, owner_token: str, visitor: str, resuming: bool) -> None:
        """A public server: ended runs of every kind untouched for ``keep_hours`` go first; then one address —
        the runs its visitors' tokens started or that count on it, of every kind, whatever class memberships
        started them — keeps at most ``max_runs_per_visitor`` runs (saved or not), so nobody holds the disk
        budget; a class member past it may take one of their class's places (the admin is not counted, nor a
        resumed run)."""
        caps = self.settings.public_limits
        if caps is None:
            return
        keep = [run.run_id for run in self.manager.active_runs()]
        for kind in self.kinds:
            folders.expire_runs(kind.root, caps.keep_hours * 3600, keep=keep, now=self.wall_clock())
        if resuming or self.settings.is_admin(owner_token):
            return
        mine = self._kept(address_of(visitor), owner_token)
        if len(mine) < caps.max_runs_per_visitor:
            return
        places = self._class_share(visitor)
        if places and self._class_taken(places) < caps.class_places:
            return
        raise ValueError(self._kept_full(len(mine), caps, places))

    def _queue_shares(self, owner_token: str, visitor: str) -> list[QueueShare] | None:
        """The shares a waiting start of ``visitor`` may take, in order: their address's (while it also has room
        to keep the run), then their class's places; None where nothing is counted (locally, the admin)."""
        caps = self.settings.public_limits
        if caps is None or self.settings.is_admin(owner_token):
            return None
        address = address_of(visitor)
        shares = []
        if len(self._kept(address, owner_token)) < caps.max_runs_per_visitor:
            shares.append(QueueShare(address, caps.queued_per_address))
        places = self._class_share(visitor)
        if places:
            shares.append(QueueShare(places, caps.class_places, held=lambda: len(self._kept(places))))
        return shares

    @staticmethod
    def _queue_full(caps: Limits, places: str) -> str:
        return (f"A run from your network's address is already waiting for the training slot, and one address has "
                f"{caps.queued_per_address} waiting at a time ({ONE_VISITOR}): start yours once it has started."
                + (f" Your class's {caps.class_places} places on this server are taken too." if places else ""))

    def slot_free(self) -> bool:
        """Whether a run may start in the slot now (a slot without a live run, no GPU burst)."""
        return not self.manager.full

    def busy_seconds(self) -> float | None:
        """How long until a slot frees: 0 when one is free, the soonest known end of the live runs, None when
        none is known."""
        if not self.manager.full or not self.manager.active_runs():
            return 0.0
        known = [s for s in (run.seconds_left() for run in self.manager.active_runs()) if s is not None]
        return min(known) if known else None

    def queue_key(self, owner_token: str, visitor: str) -> str:
        """Whose turn a queued start is: the visitor (an address, or a class member wherever they are) on a
        public server, else the browser's token."""
        return ((member_of(visitor) or visitor) if self.settings.is_public and visitor else owner_token) or "local"

    def start_or_queue(self, owner_token: str, visitor: str, label: str, start: Callable[[], BackgroundRun],
                       estimate_s: float | None = None, recipe: dict | None = None,
                       check: Callable[[], Any] | None = None) -> BackgroundRun | Place:
        """Start a run now (``start``: the kind's start with the visitor's settings) when the slot is free and
        nobody waits, else queue it (one waiting run per visitor) and return its :class:`Place`. ``recipe``:
        ``{"kind": name, "settings": {...}, "options": {...}}`` (plain JSON values) — the same start as
        ``kind.start(settings, owner_token, visitor=visitor, **options)``, so a restarted server queues it again
        (:meth:`restore_queue`); without one (or with values JSON cannot hold, or over :data:`MAX_KEPT_CHARS`)
        a restart forgets it. Only ``owner_token`` (on a public server) reads its place and cancels it.
        ``check``: the kind's checks of these settings but the slot's (ValueError), run first when the start
        would wait, so a start that could never run is refused now, not queued. On a public server a waiting
        start takes a place of the visitor's address, else of their class (see the module): none left, ValueError."""
        if check is not None and not self.slot_free():
            check()
        owner = self.owner(owner_token)  # on a public server only this token reads its place and cancels it
        kept = None if recipe is None else {**recipe, "owner_token": owner_token, "visitor": visitor, "owner": owner}
        try:
            if len(json.dumps(kept)) > MAX_KEPT_CHARS:
                kept = None
        except (TypeError, ValueError):
            kept = None
        shares = self._queue_shares(owner_token, visitor)
        places = next((share.key for share in shares or () if share.key.startswith(CLASS_SHARE)), "")
        full = "" if shares is None else self._queue_full(self.settings.public_limits, places)
        return self.queue.start_or_wait(self.queue_key(owner_token, visitor), label, start, estimate_s, kept,
                                        owner=owner, shares=shares, full=full)

    def restore_queue(self) -> int:
        """At server start (every kind registered): queue again, in order, the runs that waited for the slot
        when the server stopped; each starts by itself when its turn comes. How many wait now."""
        kinds = {kind.name: kind for kind in self.kinds}

        def make_start(recipe: dict) -> Callable[[], BackgroundRun]:
            kind = kinds.get(str(recipe.get("kind")))
            if kind is None:
                raise ValueError(f"no run kind {str(recipe.get('kind'))[:40]!r} on this server")
            settings, options = dict(recipe["settings"]), dict(recipe.get("options") or {})
            token, visitor = str(recipe.get("owner_token") or ""), str(recipe.get("visitor") or "")
            return lambda: kind.start(settings, token, visitor=visitor, **options)

        return self.queue.restore(make_start)

    def queued(self, owner_token: str, visitor: str) -> Place | None:
        """Where this visitor's queued run stands (None when they have none; on a public server also when
        ``owner_token`` is not the token that queued it: a stranger behind the same address sees nothing)."""
        return self.queue.place(self.queue_key(owner_token, visitor), owner=self.owner(owner_token))

    def cancel_queued(self, owner_token: str, visitor: str) -> bool:
        """Take this visitor's waiting run out of the queue; True when there was one (on a public server only
        with the token that queued it)."""
        return self.queue.cancel(self.queue_key(owner_token, visitor), owner=self.owner(owner_token))

    def launch(self, run: BackgroundRun, owner_token: str = "", hold: object | None = None) -> BackgroundRun:
        """Start ``run`` in the slot (one at a time, this machine's lock, its cap timer); ValueError, saying
        how long the slot stays busy, when a run is under way. Then every :attr:`on_start` listener hears of it."""
        def tell(started: BackgroundRun) -> None:
            for listener in self.on_start:
                try:
                    listener(started.visitor, started.run_id, started.kind)
                except Exception:  # a listener's fault never stops the run it heard of, nor the others
                    log.exception("A run-start listener failed for run %s", started.run_id)

        run.start_listeners.append(tell)  # a later run of the same turn (Train both's second twin) is heard too
        if self.settings.is_public:
            run.share = self._charge(owner_token, run.visitor)  # recorded in its folder: the quota counts it there
        started = self.manager.start_run(run, hold=hold, owner_token=owner_token if self.settings.is_public else "")
        started.announce_start()
        return started

    # --- deleting ----------------------------------------------------------------------------------
    def check_may_delete(self, root: Path, run_id: str, owner_token: str, missing: str = folders.NO_SUCH_RUN) -> None:
        """ValueError unless ``owner_token``'s holder may delete run ``run_id`` under ``root`` (anyone locally;
        its owner or the admin on a public server), and the run has ended. A run that is none — or another
        visitor's private run, for anyone but the admin — is ``missing``."""
        admin = self.settings.is_public and self.settings.is_admin(owner_token)
        try:
            if admin:
                folders.stored_folder(root, run_id)
            else:
                folders.run_folder(root, run_id, owner_token)
        except ValueError:
            raise ValueError(missing) from None
        if self.settings.is_public and not (admin or folders.is_owner(root, run_id, owner_token)):
            raise ValueError(ONLY_OWNER_DELETES)
        if self.manager.is_busy(run_id):
            raise ValueError("That run is still active; stop it before deleting it.")

    # --- the server's start and end ----------------------------------------------------------------
    def clean_leftovers(self) -> list[str]:
        """At server start, when no run trains on this machine: each kind removes what its interrupted runs
        left. Returns the ids deleted; nothing when a run is under way (in this process or another)."""
        if self.manager.active_runs():
            return []
        try:
            lock = self.manager.try_machine_lock()
        except ValueError:  # another process trains into this runs folder: leave everything as it is
            return []
        try:
            return [run_id for kind in self.kinds for run_id in kind.clean_leftovers()]
        finally:
            lock.release()

    def shutdown(self, timeout: float = 30.0) -> bool:
        """The server is going down: stop the live run (whatever it is doing: training, paused, evaluating,
        saving) so it saves, waiting up to ``timeout`` seconds; True when nothing is left running."""
        self.queue.close()  # waiting runs stay unstarted
        live = self.manager.active_runs()
        for run in live:
            run.stop()
        deadline = time.monotonic() + timeout
        # a list, not a generator: every run is joined, also after one did not end in time
        return all([run.join(max(0.0, deadline - time.monotonic())) for run in live])  # noqa: C419

"""The fair queue for the training slot (:class:`RunQueue`): a start that finds the slot busy waits its turn
instead of being refused — one waiting run per visitor, first come first served, its place and an estimated
start shown, and cancellable. A dispatcher thread starts the head of the queue as soon as the slot is free.

Whose share a waiting run takes is the caller's to say (:class:`QueueShare`: the run service passes the visitor's
address, then their class's places): each waiting run is charged to the first share with room, and a start no share
has room for is refused, so one address holds its share of the queue however many names it takes.

The queue holds what a start needs as a callable (the kind's own ``start``, with the visitor's settings):
called when the turn comes, its checks run then, and a refusal is kept as that visitor's message. Torch-free.

A server restart keeps the waiting runs: a start queued with its ``recipe`` (plain JSON values: the kind, the
settings, the owner token, the visitor — what :meth:`bertdemo.runs.service.RunService.restore_queue` needs to
make the start again) is written, in queue order, to one file in the runs folder (``path``), replaced atomically
at every change; :meth:`RunQueue.restore` reads it back when the server starts. The file holds the owner tokens
of runs not yet started (the runs folder is the server's alone: the class database keeps its signing key there
too); each leaves it when its run starts or is cancelled.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertdemo import storage
from bertdemo.runs.slot import about

MAX_WAITING = 40  # runs waiting at once on one server
DISPATCH_S = 0.5  # how often the dispatcher looks at the slot while runs wait
log = logging.getLogger(__name__)


@dataclass
class Ticket:
    """One waiting (or just started, or refused) run."""

    key: str  # whose: one waiting run per key
    label: str  # how a sentence names it ("pretraining run")
    start: Callable[[], Any]  # starts it (the kind's start with the visitor's settings); returns the run
    estimate_s: float | None  # how long it will hold the slot, when known
    number: int  # its order of arrival
    queued_at: float
    run_id: str = ""  # set once started
    error: str = ""  # why the start was refused when its turn came
    done: threading.Event = field(default_factory=threading.Event)
    recipe: dict | None = None  # how to make ``start`` again after a restart (plain JSON); None: not kept
    owner: str = ""  # the token that queued it: only its holder reads its place or cancels it ("" = anyone)
    share: str = ""  # the share it is charged to (QueueShare.key: an address, a class's places); "" = none

    def owned_by(self, token: str | None) -> bool:
        """Whether ``token``'s holder may read this ticket's place and cancel it (None: the caller is trusted)."""
        if token is None or not self.owner:
            return True
        given = str(token).encode("utf-8", "surrogatepass")
        return secrets.compare_digest(given, self.owner.encode("utf-8", "surrogatepass"))


# what a place's sentence says (Place.sentence): a page's answer box that holds one is stale once the run is
# cancelled, started or refused (bertdemo.ui.run_queue_panel reads it)
_PLACE_SENTENCE = re.compile(r"^Your (queued )?.*?(is number \d+ in the queue for the training slot|has started \(run"
                             r"|could not start: )")


def is_place_sentence(text: object) -> bool:
    """Whether ``text`` is (or begins with) what :meth:`Place.sentence` says of a queued run."""
    return isinstance(text, str) and _PLACE_SENTENCE.match(text) is not None


@dataclass(frozen=True)
class QueueShare:
    """A share of the queue a waiting run may be charged to: at most ``most`` places held under ``key``, of which
    ``held()`` are held outside the queue (a class's kept runs, which take its places too)."""

    key: str
    most: int
    held: Callable[[], int] | None = None


@dataclass(frozen=True)
class Place:
    """Where a visitor's run stands: waiting at ``position`` (1 = next), or started (``run_id``) or refused."""

    position: int
    ahead_s: float | None  # the slot's busy time before it starts; None when unknown
    label: str
    run_id: str = ""
    error: str = ""

    def sentence(self) -> str:
        if self.error:
            return f"Your queued {self.label} could not start: {self.error}"
        if self.run_id:
            return f"Your queued {self.label} has started (run {self.run_id})."
        when = f"; it should start in {about(self.ahead_s)}" if self.ahead_s is not None else ""
        return (f"Your {self.label} is number {self.position} in the queue for the training slot{when}. "
                "It starts by itself; you may leave this page open or cancel it.")


class RunQueue:
    """Waiting starts for one slot. ``is_free()``: whether a run may start now; ``busy_s()``: how long the live
    run holds the slot (None when unknown); ``default_s``: a waiting run's length when its own is unknown."""

    def __init__(self, is_free: Callable[[], bool], busy_s: Callable[[], float | None],
                 default_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 max_waiting: int = MAX_WAITING, path: str | Path | None = None) -> None:
        self.is_free = is_free
        self.busy_s = busy_s
        self.default_s = default_s
        self.clock = clock
        self.max_waiting = max_waiting
        self.path = Path(path) if path is not None else None  # where the waiting runs' recipes are kept
        self._lock = threading.Condition()
        self._waiting: list[Ticket] = []
        self._last: dict[str, Ticket] = {}  # each key's latest ticket (its outcome, once started or refused)
        self._numbers = itertools.count(1)
        self._dispatcher: threading.Thread | None = None
        self._closed = False

    # --- a visitor ---------------------------------------------------------------------------------
    def start_or_wait(self, key: str, label: str, start: Callable[[], Any], estimate_s: float | None = None,
                      recipe: dict | None = None, owner: str = "", shares: Sequence[QueueShare] | None = None,
                      full: str = "") -> Any:
        """Start now when the slot is free and nobody waits (the run, as ``start`` returns it); else queue it
        and return its :class:`Place`. ValueError when ``key`` has a run waiting already or the queue is full.
        ``recipe``: plain JSON values from which the start can be made again after a restart (kept on disk);
        ``owner``: the token whose holder alone reads its place and cancels it ("" = anyone with ``key``);
        ``shares``: in order, the shares the waiting run may be charged to (the first with room takes it; None:
        no share is counted); when none has room, ValueError ``full``."""
        with self._lock:
            if not self._waiting and self.is_free():
                self._last.pop(key, None)
                return start()  # under the lock: a waiting run cannot slip in between the check and the start
            waiting = next((t for t in self._waiting if t.key == key), None)
            if waiting is not None and waiting.owned_by(owner):
                raise ValueError(f"You already have a run waiting (number {self.place(key).position} in the queue);"
                                 " cancel it to queue another.")
            if waiting is not None:  # another browser or API caller behind the same address: theirs to cancel
                raise ValueError("A run from your address is already waiting for the training slot, and one visitor "
                                 "queues one run at a time: start yours once that one has started.")
            if len(self._waiting) >= self.max_waiting:
                raise ValueError(f"{len(self._waiting)} runs are waiting for the training slot, the most this server "
                                 "queues; try again later.")
            share = ""
            if shares is not None:
                share = next((s.key for s in shares if self.holding(s.key) + (s.held() if s.held else 0) < s.most), None)
                if share is None:
                    raise ValueError(full or "Your share of the queue for the training slot is taken.")
            ticket = Ticket(key, label, start, estimate_s, next(self._numbers), self.clock(), recipe=recipe,
                            owner=owner, share=share)
            self._waiting.append(ticket)
            self._last[key] = ticket
            self._save()
            self._ensure_dispatcher()
            return self.place(key)

    def cancel(self, key: str, owner: str | None = None) -> bool:
        """Take ``key``'s waiting run out of the queue; True when there was one. ``owner``: the caller's token,
        which must be the one that queued it (None: the caller is trusted, e.g. the server itself)."""
        with self._lock:
            kept = [t for t in self._waiting if t.key != key or not t.owned_by(owner)]
            cancelled = len(kept) != len(self._waiting)
            self._waiting = kept
            if cancelled:
                self._last.pop(key, None)
                self._save()
            return cancelled

    def place(self, key: str, owner: str | None = None) -> Place | None:
        """Where ``key``'s latest queued run stands (None when it has none, or when ``owner``, the caller's
        token, is not the one that queued it; None as ``owner``: the caller is trusted)."""
        with self._lock:
            ticket = self._last.get(key)
            if ticket is None or not ticket.owned_by(owner):
                return None
            if ticket.run_id or ticket.error:
                return Place(0, None, ticket.label, ticket.run_id, ticket.error)
            position = next(i for i, t in enumerate(self._waiting, 1) if t is ticket)
            return Place(position, self._ahead_s(position), ticket.label)

    def _ahead_s(self, position: int) -> float | None:
        """The live run's time left plus the lengths of the runs ahead; None when one is unknown."""
        parts = [self.busy_s()] + [t.estimate_s if t.estimate_s is not None else self.default_s
                                   for t in self._waiting[:position - 1]]
        return None if any(p is None for p in parts) else float(sum(parts))

    def holding(self, share: str) -> int:
        """How many waiting runs are charged to ``share`` (a :class:`QueueShare` key)."""
        with self._lock:
            return sum(1 for t in self._waiting if share and t.share == share)

    def waiting(self) -> list[tuple[int, str, str, float | None]]:
        """The queue in order, as (position, key, label, estimated start in seconds) — the teacher's view."""
        with self._lock:
            return [(i, t.key, t.label, self._ahead_s(i)) for i, t in enumerate(self._waiting, 1)]

    # --- the dispatcher ------------------------------------------------------------------------------
    def _ensure_dispatcher(self) -> None:
        if self._dispatcher is None or not self._dispatcher.is_alive():
            self._dispatcher = threading.Thread(target=self._dispatch, name="run-queue", daemon=True)
            self._dispatcher.start()

    def dispatch_once(self) -> Ticket | None:
        """Start the head of the queue if the slot is free (its outcome kept in its ticket); the ticket."""
        with self._lock:
            if not self._waiting or not self.is_free():
                return None
            ticket = self._waiting.pop(0)
            self._save()  # out of the file before it starts: a crash while starting never starts it twice
            try:
                run = ticket.start()
                ticket.run_id = str(getattr(run, "run_id", "") or "")
            except ValueError as err:
                ticket.error = str(err)
            except Exception as err:  # the server keeps serving; the visitor reads what happened
                log.exception("A queued run failed to start")
                ticket.error = f"{type(err).__name__}: {err}"[:300]
            ticket.done.set()
            return ticket

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                if self._closed or not self._waiting:
                    self._dispatcher = None
                    return
                self._lock.wait(DISPATCH_S)
            self.dispatch_once()

    # --- kept across a restart ---------------------------------------------------------------------
    def _save(self) -> None:
        """Write the waiting runs' recipes, in queue order, to :attr:`path` (atomically; called under the lock)."""
        if self.path is None:
            return
        kept = [{"key": t.key, "label": t.label, "estimate_s": t.estimate_s, "recipe": t.recipe, "share": t.share}
                for t in self._waiting if t.recipe is not None]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            storage.write_text(self.path, json.dumps(kept))
        except OSError:  # a full or read-only disk: the queue in memory goes on
            log.exception("Could not keep the run queue in %s", self.path)

    def restore(self, make_start: Callable[[dict], Callable[[], Any]]) -> int:
        """Queue again, in their order, the runs the file at :attr:`path` keeps (a server that restarted);
        ``make_start``: a recipe -> its start (ValueError for one it cannot make: that entry is dropped).
        How many were queued; a missing or unreadable file is an empty queue."""
        if self.path is None or not self.path.is_file():
            return 0
        try:
            entries = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("The kept run queue %s is unreadable; starting with an empty queue", self.path)
            entries = []
        with self._lock:
            for entry in entries if isinstance(entries, list) else []:
                try:
                    key, label, recipe = str(entry["key"]), str(entry["label"]), dict(entry["recipe"])
                    estimate = entry.get("estimate_s")
                    start = make_start(recipe)
                except (KeyError, TypeError, ValueError) as err:
                    log.warning("A kept queued run was dropped: %s", err)
                    continue
                if len(self._waiting) >= self.max_waiting or any(t.key == key for t in self._waiting):
                    continue
                ticket = Ticket(key, label, start, float(estimate) if isinstance(estimate, (int, float)) else None,
                                next(self._numbers), self.clock(), recipe=recipe,
                                owner=str(recipe.get("owner") or ""), share=str(entry.get("share") or ""))
                self._waiting.append(ticket)
                self._last[key] = ticket
            self._save()
            if self._waiting:
                self._ensure_dispatcher()
            return len(self._waiting)

    def close(self) -> None:
        """Stop dispatching (server shutdown): waiting runs stay unstarted."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()

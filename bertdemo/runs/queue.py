"""The fair queue for the training slot (:class:`RunQueue`): a start that finds the slot busy waits its turn
instead of being refused — one waiting run per visitor, first come first served, its place and an estimated
start shown, and cancellable. A dispatcher thread starts the head of the queue as soon as the slot is free.

The queue holds what a start needs as a callable (the kind's own ``start``, with the visitor's settings):
called when the turn comes, its checks run then, and a refusal is kept as that visitor's message. Torch-free.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
                 max_waiting: int = MAX_WAITING) -> None:
        self.is_free = is_free
        self.busy_s = busy_s
        self.default_s = default_s
        self.clock = clock
        self.max_waiting = max_waiting
        self._lock = threading.Condition()
        self._waiting: list[Ticket] = []
        self._last: dict[str, Ticket] = {}  # each key's latest ticket (its outcome, once started or refused)
        self._numbers = itertools.count(1)
        self._dispatcher: threading.Thread | None = None
        self._closed = False

    # --- a visitor ---------------------------------------------------------------------------------
    def start_or_wait(self, key: str, label: str, start: Callable[[], Any], estimate_s: float | None = None) -> Any:
        """Start now when the slot is free and nobody waits (the run, as ``start`` returns it); else queue it
        and return its :class:`Place`. ValueError when ``key`` has a run waiting already or the queue is full."""
        with self._lock:
            if not self._waiting and self.is_free():
                self._last.pop(key, None)
                return start()  # under the lock: a waiting run cannot slip in between the check and the start
            if any(t.key == key for t in self._waiting):
                raise ValueError(f"You already have a run waiting (number {self.place(key).position} in the queue);"
                                 " cancel it to queue another.")
            if len(self._waiting) >= self.max_waiting:
                raise ValueError(f"{len(self._waiting)} runs are waiting for the training slot, the most this server "
                                 "queues; try again later.")
            ticket = Ticket(key, label, start, estimate_s, next(self._numbers), self.clock())
            self._waiting.append(ticket)
            self._last[key] = ticket
            self._ensure_dispatcher()
            return self.place(key)

    def cancel(self, key: str) -> bool:
        """Take ``key``'s waiting run out of the queue; True when there was one."""
        with self._lock:
            kept = [t for t in self._waiting if t.key != key]
            cancelled = len(kept) != len(self._waiting)
            self._waiting = kept
            if cancelled:
                self._last.pop(key, None)
            return cancelled

    def place(self, key: str) -> Place | None:
        """Where ``key``'s latest queued run stands (None when it has none)."""
        with self._lock:
            ticket = self._last.get(key)
            if ticket is None:
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

    def close(self) -> None:
        """Stop dispatching (server shutdown): waiting runs stay unstarted."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()

"""The machine's one training slot: a run of any kind on its daemon thread (:class:`BackgroundRun`) and the
manager that starts runs one at a time (:class:`RunManager`), in this process and — through a lock file in
``runs_dir`` — on this machine.

Every kind gets the same guarantees here, not in its own code: the owner, the share it counts in and whether it is
private (:attr:`BackgroundRun.private`: on a visitor's data; :mod:`bertdemo.models.run_access`) recorded in its
folder (:meth:`BackgroundRun.record_holders`), a private run followed only by its holders (:attr:`RunManager.current`),
the public wall-time cap (a timer started with the run, which stops it whatever it is doing — training,
paused, evaluating — so it saves and frees the slot), the machine lock released when its thread ends, and a
refused start that says how long the slot stays busy. A kind supplies its folder (:meth:`claim_folder`),
its work (:meth:`work`) and how much of its own budget is left (:meth:`own_seconds_left`). Torch-free.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from bertdemo.models import run_access
from bertdemo.runs import folders
from bertdemo.runs.control import RunControl
from bertdemo.runs.priority import lower_this_thread
from bertdemo.runs.status import ACTIVE_STATUSES, LockedSnapshot, Status
from bertdemo.traffic import address_of

LOCK_FILE = ".active-run.lock"
RECENT_RUNS = 16  # the latest runs a manager remembers, so an owner's /run_status finds theirs once it has ended
CAP_CHECK_S = 1.0  # the cap watcher looks at the run's clock at least this often (a test's clock moves by hand)
Clock = Callable[[], float]  # seconds, monotonic (time.monotonic; a test passes its own)

log = logging.getLogger(__name__)


def about(seconds: float) -> str:
    """A rough duration in words: "about 40 s", "about 3 min", "about 1.5 h"."""
    if seconds < 90:
        return f"about {max(1, round(seconds)):.0f} s"
    if seconds < 5400:
        return f"about {round(seconds / 60):.0f} min"
    return f"about {seconds / 3600:.1f} h"


PAUSING = "Pausing after this step…"  # what the status says between a pause asked and the run holding


class BackgroundRun:
    """One run of some kind on a daemon thread; every public method is safe to call from the UI thread.

    Nothing is written until :meth:`start` (which the manager calls holding the machine lock). A kind sets
    ``kind`` (its registry name) and ``label`` (how a sentence names it), and implements :meth:`claim_folder`
    and :meth:`work`; it may add clean-up after the thread in :meth:`after`."""

    kind = ""
    label = "training"
    private = False  # a run on a visitor's data (a kind sets it before the start): its holders alone use it

    def __init__(self, runs_dir: str | Path, metrics: LockedSnapshot, owner_token: str = "", visitor: str = "",
                 max_seconds: float | None = None, clock: Clock = time.monotonic) -> None:
        self.runs_dir = Path(runs_dir)
        self.metrics = metrics
        self.owner_token = owner_token  # the secret of the browser (or API caller) that started it; "" = anyone
        self.visitor = visitor  # who started it: an address, or a class member at theirs; "" = not recorded
        # the share it counts in (public servers' run quota): its address, or a class's places (RunService.launch)
        self.share = address_of(visitor)
        self.max_seconds = max_seconds  # wall-time cap (public servers): stopped and saved when reached
        self._clock = clock
        self._deadline: float | None = None  # clock() at which the cap is reached (set by start)
        self._cap_watch: threading.Thread | None = None
        self._ended = threading.Event()  # set when the run's thread has ended (the cap watcher leaves then)
        self._limit_reason = ""
        self._machine_lock: FileLock | None = None
        self.run_id = ""
        self.run_folder = Path()  # the run's folder under its kind's root
        # told of each run this one starts (its first, and any later one of the same turn: Train both's second twin)
        self.start_listeners: list[Callable[[BackgroundRun], Any]] = []
        self.control = RunControl()
        self._thread = threading.Thread(target=self._main, daemon=True)

    # what a kind supplies -------------------------------------------------------------------
    def claim_folder(self) -> None:
        """Set ``run_id`` and ``run_folder`` (a new folder, or the folder of the run it continues)."""
        raise NotImplementedError

    def work(self) -> str:
        """The run itself, on its thread: train, evaluate, save; returns the final status."""
        raise NotImplementedError

    def after(self) -> None:
        """What the kind does once its thread has ended and the slot is free (its default: nothing)."""

    def own_seconds_left(self) -> float | None:
        """Seconds the run itself expects to go on (its steps or its time budget); None when unknown."""
        return None

    # lifecycle -------------------------------------------------------------------------------
    def announce_start(self) -> None:
        """Tell every :attr:`start_listeners` that this run (``run_id``) has started; a listener's fault is
        logged and never stops the run."""
        for listener in list(self.start_listeners):
            try:
                listener(self)
            except Exception:  # a listener's fault never stops the run it heard of
                log.exception("A run-start listener failed for run %s", self.run_id)

    def start(self, machine_lock: FileLock | None = None) -> BackgroundRun:
        """Create (or take up) the run's folder, record its owner and visitor, and start the thread and the
        wall-time cap. ``machine_lock``: held by the caller; released when the run's thread ends."""
        self._machine_lock = machine_lock
        self.claim_folder()
        self.metrics.update(run_id=self.run_id)
        self.record_holders()
        self._thread.name = f"{self.kind or 'run'}-{self.run_id}"
        if self.max_seconds is not None:
            self._deadline = self._clock() + self.max_seconds
        if self.max_seconds:  # a watcher, not the loop: a paused or evaluating run meets its cap too
            self._cap_watch = threading.Thread(target=self._watch_cap, name=f"run-cap-{self.run_id}", daemon=True)
            self._cap_watch.start()
        self._thread.start()
        return self

    def record_holders(self) -> None:
        """Record in the run's folder who may control and delete it (its owner token's digest), the share whose
        quota it counts in (:attr:`share`'s digest), and whether it is private and who started it."""
        folders.record_owner(self.run_folder, self.owner_token)
        folders.record_visitor(self.run_folder, self.share)
        run_access.record_access(self.run_folder, self.private, self.visitor)

    def holders(self) -> run_access.Holders:
        """Who may use this run, from memory (what :meth:`record_holders` wrote)."""
        starter = run_access.starter_key(self.visitor) if self.visitor else ""
        return run_access.Holders(self.private, run_access.digest(self.owner_token) if self.owner_token else "",
                                  run_access.digest(starter) if starter else "")

    def watched_by(self, caller: run_access.Caller | None, token: str = "") -> bool:
        """Whether ``caller`` (None: outside a request) holding ``token`` may follow this run: its status,
        curves, probe and id."""
        return caller is None or self.holders().permit(caller, token)

    def _watch_cap(self) -> None:
        """Stop the run when its wall-time cap is reached on the run's clock, whatever the run is doing."""
        while not self._ended.wait(min(CAP_CHECK_S, self.time_left() or 0.0)):
            if self.time_left() == 0:
                self._time_up()
                return

    def _time_up(self) -> None:
        if self.active and not self._limit_reason:
            self._limit_reason = f"Stopped at the {self.max_seconds / 60:g}-minute limit of this public server."
            self.stop()

    def on_step(self, step: int) -> None:
        """Called by the loop after each step: the cap, on the run's own clock (a test moves it)."""
        if self._deadline is not None and self.time_left() == 0:
            self._time_up()

    def _main(self) -> None:
        try:
            lower_this_thread()  # when the page and the run both want a core, the page comes first
            final = self.work()
            if final == Status.STOPPED and self._limit_reason:
                self.metrics.update(message=f"{self._limit_reason} {self.metrics.get('message')}")
        except Exception as err:  # a kind's own failure handling missed it: the page says so, the server serves
            self.metrics.update(status=Status.FAILED, message=f"The run failed: {type(err).__name__}: {err}"[:500])
            log.exception("Run %s failed", self.run_id)
        finally:
            self._ended.set()  # the cap watcher leaves
            if self._machine_lock is not None:
                self._machine_lock.release()
            self.after()

    # what the pages call ---------------------------------------------------------------------
    @property
    def status(self) -> str:
        return self.metrics.get("status")

    @property
    def active(self) -> bool:
        """True while the run trains, prepares, pauses or stops (a kind may count more states busy)."""
        return self._thread.is_alive() or (not self._thread.ident and self.status in ACTIVE_STATUSES)

    def snapshot(self) -> Any:
        """A copy of the run's metrics (its kind's snapshot dataclass)."""
        return self.metrics.snapshot()

    def may_control(self, token: str, admin: bool = False) -> bool:
        """Whether the holder of ``token`` may pause, resume or stop this run (admin: stop only, checked by the caller)."""
        if admin or not self.owner_token:
            return True
        given = str(token or "").encode("utf-8", "surrogatepass")  # bytes: a non-ASCII token is simply not it
        return secrets.compare_digest(given, self.owner_token.encode("utf-8", "surrogatepass"))

    def pause(self) -> None:
        """Ask the run to hold after its current step; the status says so at once (a step on a busy server can take
        a while, and the page showed nothing until the run got there)."""
        if self.status == Status.RUNNING:
            self.control.pause_event.set()
            self.metrics.update(message=PAUSING)

    def resume(self) -> None:
        self.control.pause_event.clear()
        if self.status == Status.RUNNING and self.metrics.get("message") == PAUSING:  # resumed before it held
            self.metrics.update(message="Training.")

    def stop(self) -> None:
        if self.active:
            self.metrics.update(status=Status.STOPPING, message="Stopping after this step…")
        self.control.stop_event.set()
        self.control.pause_event.clear()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has ended."""
        if self._thread.ident:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def time_left(self) -> float | None:
        """Seconds left of the wall-time cap (None: no cap)."""
        return None if self._deadline is None else max(0.0, self._deadline - self._clock())

    def seconds_left(self) -> float | None:
        """How long this run may still hold the slot: the nearer of its own end and its wall-time cap
        (None when neither is known)."""
        known = [s for s in (self.own_seconds_left(), self.time_left()) if s is not None]
        return min(known) if known else None


class RunManager:
    """Starts runs (any kind), up to ``slots`` at once (1 by default: one at a time), at most one per visitor,
    and remembers the latest one."""

    def __init__(self, runs_dir: str | Path = "runs", clock: Clock = time.monotonic, slots: int = 1) -> None:
        self.runs_dir = Path(runs_dir)
        self.clock = clock
        self.slots = max(1, int(slots))  # runs that may train at once (app.py --parallel-runs)
        self._lock = threading.Lock()
        self._current: BackgroundRun | None = None
        self._others: list[BackgroundRun] = []  # with several slots: the earlier runs that may still be active
        self._recent: deque[BackgroundRun] = deque(maxlen=RECENT_RUNS)  # the latest runs started, active or ended
        self._hold: object | None = None  # set while something (a GPU burst) works on the current run
        # the owner token a page's poll reads for (:meth:`viewing`): request-scoped, never shared between threads
        self._viewer: contextvars.ContextVar[str] = contextvars.ContextVar(f"run-viewer-{id(self)}", default="")

    @contextmanager
    def hold(self) -> Iterator[object]:
        """Keep new runs from starting while the caller works on the current run; yields the key that
        :meth:`start_run` accepts to continue that run. ValueError when a run is held already."""
        key = object()
        with self._lock:
            if self._hold is not None:
                raise ValueError("A GPU burst is already moving this run; wait for it to end.")
            self._hold = key
        try:
            yield key
        finally:
            with self._lock:
                if self._hold is key:
                    self._hold = None

    @contextmanager
    def viewing(self, token: str) -> Iterator[None]:
        """Within it (one request's thread), :attr:`current` is the run a page holding ``token`` follows: with
        several slots, that visitor's own run (active, else their latest ended one) when they have one; else,
        and always with one slot, the latest run (everyone watches the one run)."""
        reset = self._viewer.set(str(token or ""))
        try:
            yield
        finally:
            self._viewer.reset(reset)

    @property
    def current(self) -> BackgroundRun | None:
        """The latest run the request being served may follow, active or ended (None before the first); inside
        :meth:`viewing` with several slots, the viewer's own run when they have one. Another visitor's private run
        is no one else's to follow (:mod:`bertdemo.models.run_access`): None for them."""
        token = self._viewer.get()
        if token and self.slots > 1:
            own = self.run_of(token, ended=True)
            if own is not None:
                return own
        latest = self._current
        if latest is None or latest.watched_by(run_access.current_caller(), token):
            return latest
        return None

    @property
    def latest(self) -> BackgroundRun | None:
        """The slot's latest run whoever asks (the server's own bookkeeping; never shown as it is to a visitor)."""
        return self._current

    def active_runs(self) -> list[BackgroundRun]:
        """The runs under way now, the latest last (one at most with one slot)."""
        runs = [*self._others, *([self._current] if self._current is not None else [])]
        return [run for run in runs if run.active]

    def run_of(self, token: str, ended: bool = False) -> BackgroundRun | None:
        """The active run ``token``'s holder owns (None when they own none, or for an empty token); ``ended``:
        else their latest run among the manager's recent ones, ended too."""
        if not token:
            return None
        runs = [*self.active_runs()[::-1], *(reversed(self._recent) if ended else ())]
        return next((run for run in runs if run.owner_token and run.may_control(token)), None)

    @property
    def full(self) -> bool:
        """Whether every slot holds an active run (or a GPU burst holds the slot): no run may start now."""
        return self._hold is not None or len(self.active_runs()) >= self.slots

    @property
    def held(self) -> object | None:
        """The key of :meth:`hold` while something works on the current run (None otherwise)."""
        return self._hold

    def start_run(self, run: BackgroundRun, hold: object | None = None, owner_token: str = "") -> BackgroundRun:
        """Start ``run`` in the slot: one at a time, under this machine's run lock (nothing is written before
        it is held). ``hold``: the key of :meth:`hold`, for the holder that continues the current run;
        ``owner_token``: who asks (the refusal's wording). ValueError when a run is under way."""
        with self._lock:
            self._check_free(hold, owner_token)
            self._check_one_per_visitor(run, hold)
            lock = self.try_machine_lock()
            try:
                run.start(lock)
            except BaseException:
                lock.release()
                raise
            if self._current is not None and self._current.active and hold is None:
                self._others.append(self._current)  # another slot's run, still under way
            self._others = [other for other in self._others if other.active]
            self._current = run
            self._recent.append(run)
            return run

    def try_machine_lock(self) -> FileLock:
        """One of this machine's run locks (one per slot), held (ValueError when other processes, or this
        one's runs, hold them all)."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        for slot in range(self.slots):
            name = LOCK_FILE if slot == 0 else f"{LOCK_FILE.removesuffix('.lock')}-{slot + 1}.lock"
            lock = FileLock(self.runs_dir / name, thread_local=False)  # released by the run's thread
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue
            return lock
        raise ValueError("Another process on this machine is already training in this runs folder; "
                         "wait for it to finish or stop it first.")

    def check_free(self, owner_token: str = "") -> None:
        """ValueError when a run is under way (or on a GPU burst): a new one cannot start now. The message
        says how long the slot stays busy, and tells ``owner_token``'s holder to stop the run only when it
        is theirs."""
        with self._lock:
            self._check_free(None, owner_token)

    def is_busy(self, run_id: str) -> bool:
        """Whether run ``run_id`` is under way, on a GPU burst, or held (its folder must stay)."""
        if any(run.run_id == run_id for run in self.active_runs()):
            return True
        run = self._current
        return run is not None and run.run_id == run_id and self._hold is not None

    def forget(self, run_id: str) -> None:
        """Forget the latest run when it is ``run_id`` and has ended (its folder was deleted): the pages
        stop showing its status."""
        with self._lock:
            run = self._current
            if run is not None and run.run_id == run_id and not run.active and self._hold is None:
                self._current = None

    def _check_free(self, hold: object | None, owner_token: str) -> None:
        if self._hold is not None and hold is not self._hold:
            raise ValueError("The current run is on a GPU burst; wait until it is back.")
        if hold is not None and hold is self._hold:
            return  # the holder continues the current run (a GPU burst's end)
        live = self.active_runs()
        if len(live) >= self.slots:  # the asker's own run, else the one that frees a slot first, is named
            mine = self.run_of(owner_token)
            soonest = min(live, key=lambda r: (r.seconds_left() is None, r.seconds_left() or 0.0))
            raise ValueError(busy_message(mine or soonest, owner_token))

    def _check_one_per_visitor(self, run: BackgroundRun, hold: object | None) -> None:
        """With several slots, one visitor (their token, or the share they count in: their address, whatever
        class memberships they took, or a class's places) trains one run at a time."""
        if hold is not None or self.slots == 1:
            return
        for other in self.active_runs():
            if run.owner_token and other.owner_token == run.owner_token:
                raise ValueError(f"You have a run under way already (run {other.run_id}): one run at a time per "
                                 "visitor. Stop it, or start this one when it has ended.")
            if run.share and other.share == run.share:
                raise ValueError(f"A run from your network's address is under way already (run {other.run_id}): one "
                                 "run at a time per visitor, and one visitor is everyone behind one address, class "
                                 "members too. Start this one when it has ended.")


def busy_message(run: BackgroundRun, owner_token: str = "") -> str:
    """Why a start is refused while ``run`` holds the slot: which run, for how long, and what to do (stop it
    only when it is the asker's own)."""
    snap = run.snapshot()
    left = run.seconds_left()
    busy = f"the training slot stays busy for {about(left)} more" if left is not None else \
        "the training slot stays busy until it ends"
    if not run.watched_by(run_access.current_caller(), owner_token):  # another visitor's private run: not named
        return (f"Another visitor's {run.label} run on their own data is {snap.status}; {busy}. "
                "Start yours when it has ended.")
    text = f"A {run.label} run is already {snap.status} (run {snap.run_id}, step {snap.step}/{snap.total_steps}); {busy}."
    if run.owner_token and run.may_control(owner_token):
        return text + " It is yours: stop it to start another now."
    if run.owner_token:
        return text + " It belongs to another visitor: start yours when it has ended."
    return text + " Stop it to start another now."

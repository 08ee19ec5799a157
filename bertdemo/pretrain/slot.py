"""The machine's one training slot: a pretraining run on its daemon thread (:class:`TrainingRun`) and the
manager that starts runs one at a time (:class:`RunManager`), in this process and — through a lock file in
``runs_dir`` — on this machine. Any run object with the same few methods (a fine-tuning run,
:class:`bertdemo.finetune.run.FinetuneRun`) takes the same slot. The rules of who may start, control or
delete a run live in :mod:`bertdemo.pretrain.service`. Torch-free at import: a run's thread imports its engine.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from bertdemo.import_lock import LOGIC_IMPORT_LOCK
from bertdemo.pretrain import budget, checkpoints, run_folders, uploads
from bertdemo.pretrain.config import TrainConfig, validate_probe_text
from bertdemo.pretrain.metrics import ACTIVE_STATUSES, MetricsBuffer, RunSnapshot, Status
from bertdemo.pretrain.probes import validate_expected
from bertdemo.settings import DiskRules

if TYPE_CHECKING:
    from bertdemo.pretrain.trainer import RunControl

LOCK_FILE = ".active-run.lock"
Clock = Callable[[], float]  # seconds, monotonic (time.monotonic; a test passes its own)


def claim_run_folder(runs_dir: Path, label: str) -> str:
    """A new run id, ``<date>-<time>-<label>``, whose folder this call created under ``runs_dir`` (mkdir is the
    check: two starts never share one)."""
    base = f"{datetime.now():%Y%m%d-%H%M%S}-{label}"
    run_id, n = base, 1
    while True:
        try:
            (runs_dir / run_id).mkdir(parents=True)
            return run_id
        except FileExistsError:
            n += 1
            run_id = f"{base}-{n}"


class BackgroundRun:
    """What the slot and the pages ask of any run (pretraining or fine-tuning), over its thread (``_thread``),
    its control events (``control``), its metrics (``metrics``) and its owner's token (``owner_token``);
    every method is safe to call from the UI thread."""

    owner_token: str
    metrics: Any
    _thread: threading.Thread

    def may_control(self, token: str, admin: bool = False) -> bool:
        """Whether the holder of ``token`` may pause, resume or stop this run (admin: stop only, checked by the caller)."""
        if admin or not self.owner_token:
            return True
        given = str(token or "").encode("utf-8", "surrogatepass")  # bytes: a non-ASCII token is simply not it
        return secrets.compare_digest(given, self.owner_token.encode("utf-8", "surrogatepass"))

    def snapshot(self) -> Any:
        """A copy of the run's metrics (a RunSnapshot, or a fine-tuning run's FinetuneSnapshot)."""
        return self.metrics.snapshot()

    @property
    def status(self) -> str:
        return self.metrics.get("status")

    def pause(self) -> None:
        if self.status == Status.RUNNING:
            self.control.pause_event.set()

    def resume(self) -> None:
        self.control.pause_event.clear()

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


class TrainingRun(BackgroundRun):
    """One pretraining run on a daemon thread; every public method is safe to call from the UI thread.

    Nothing is written until :meth:`start` (which the manager calls holding the machine lock)."""

    def __init__(self, cfg: TrainConfig, runs_dir: str | Path, owner_token: str = "",
                 max_seconds: float | None = None, disk: DiskRules | None = None,
                 speeds: budget.SpeedBook | None = None, clock: Clock = time.monotonic, visitor: str = "") -> None:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.pretrain.trainer import RunControl  # torch: the run's engine

        cfg.validate()
        self.cfg = cfg
        self.owner_token = owner_token  # the secret of the browser (or API caller) that started it; "" = anyone
        self.visitor = visitor  # the address it was started from (public servers' run quota); "" = not recorded
        self.max_seconds = max_seconds  # wall-time cap (public servers): stopped and saved when reached
        self.runs_dir = Path(runs_dir)
        self.disk = disk or DiskRules()
        self.speeds = speeds
        self._clock = clock
        self._deadline: float | None = None  # clock() at which the cap is reached (set by start)
        self._timer: threading.Timer | None = None
        self._limit_reason = ""
        self._machine_lock: FileLock | None = None
        self._run_info: dict[str, Any] = {}
        self.run_id = ""
        self.run_folder = Path()  # where its checkpoints are saved (<run>/steps/step-<n>, <run>/LATEST)
        if cfg.system.resume_from:
            state = checkpoints.read_state(cfg.system.resume_from)
            self.run_folder = checkpoints.run_folder_of(cfg.system.resume_from)
            self.run_id = str(state.get("run_id") or self.run_folder.name)
            self._run_info = {"run_id": self.run_id, "started_at": state.get("started_at"),
                              "elapsed_s": float(state.get("elapsed_s", 0.0))}
        self.control: RunControl = RunControl()
        self.metrics = MetricsBuffer(run_id=self.run_id, status=Status.PREPARING, message="Starting…",
                                     total_steps=cfg.optim.steps, preset=cfg.model.preset,
                                     corpus=checkpoints.corpus_display_name(cfg.data.corpus),
                                     probe_text=cfg.monitor.probe_text,
                                     probe_expected=cfg.monitor.probe_expected)
        self._thread = threading.Thread(target=self._main, daemon=True)

    # lifecycle -------------------------------------------------------------------------
    def start(self, machine_lock: FileLock | None = None) -> TrainingRun:
        """Create the run's folder (a new run), record its owner, and start the thread and the time cap.
        ``machine_lock``: held by the caller; released when the run's thread ends."""
        self._machine_lock = machine_lock
        if not self.run_id:
            self.run_id = claim_run_folder(self.runs_dir, self.cfg.model.preset)
            self.run_folder = self.runs_dir / self.run_id
            self._run_info = {"run_id": self.run_id, "started_at": datetime.now().isoformat(timespec="seconds")}
            self.metrics.update(run_id=self.run_id)
        run_folders.record_owner(self.run_folder, self.owner_token)  # who may delete it later
        run_folders.record_visitor(self.run_folder, self.visitor)  # whose quota it counts in
        self._thread.name = f"pretrain-{self.run_id}"
        if self.max_seconds is not None:
            self._deadline = self._clock() + self.max_seconds
        if self.max_seconds:
            self._timer = threading.Timer(self.max_seconds, self._time_up)
            self._timer.name, self._timer.daemon = f"run-cap-{self.run_id}", True
            self._timer.start()
        self._thread.start()
        return self

    def _time_up(self) -> None:
        if self.active and not self._limit_reason:
            minutes = self.max_seconds / 60
            self._limit_reason = f"Stopped at the {minutes:g}-minute limit of this public server."
            self.stop()

    def _on_step(self, step: int) -> None:
        if self._deadline is not None and self.time_left() == 0:  # the cap, on the run's own clock
            self._time_up()

    def _main(self) -> None:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.pretrain.trainer import run_training
            from bertdemo.pretrain.hardware import lower_this_thread

        try:
            lower_this_thread()  # when the page and the run both want a core, the page comes first
            final = run_training(self.cfg, metrics=self.metrics, run_folder=self.run_folder,
                                 control=self.control, run_info=self._run_info, on_step=self._on_step,
                                 disk=self.disk)
            if final == Status.STOPPED and self._limit_reason:
                self.metrics.update(message=f"{self._limit_reason} {self.metrics.get('message')}")
        finally:
            if self._timer is not None:
                self._timer.cancel()
            if self._machine_lock is not None:
                self._machine_lock.release()
            if self.speeds is not None:  # this machine's speed, for the next estimates
                snap = self.metrics.snapshot()
                self.speeds.record(self.cfg, float(snap.tokens_per_s or 0.0), str(snap.device or "cpu"),
                                   budget.measured_overheads(self.cfg, snap.startup_s, snap.eval_s, snap.evals,
                                                             snap.save_s, snap.saves))
            from bertdemo.pretrain.data import default_cache_dir

            own_cache = [self.cfg.data.cache_dir] if self.cfg.data.cache_dir else []
            # an upload no checkpoint refers to is deleted now, with its blocks in this run's cache too
            uploads.release_uploads(self.runs_dir, cache_dirs=[*own_cache, default_cache_dir()])

    def time_left(self) -> float | None:
        """Seconds left of the wall-time cap (None: no cap); a run continued elsewhere keeps the same deadline."""
        return None if self._deadline is None else max(0.0, self._deadline - self._clock())

    # what the UI calls -----------------------------------------------------------------
    @property
    def active(self) -> bool:
        """True while the run trains, prepares, stops, or is on a GPU burst (its thread has ended then)."""
        status = self.status
        return self._thread.is_alive() or status == Status.GPU_BURST or (
            not self._thread.ident and status in ACTIVE_STATUSES)

    def set_probe_text(self, text: str, expected: str = "") -> None:
        """Use a new probe sentence (and the word expected at its first [MASK]) from now on, and run it at
        the next step (not only at the next evaluation)."""
        self.metrics.update(probe_text=validate_probe_text(text), probe_expected=validate_expected(expected))
        self.control.probe_event.set()


class RunManager:
    """Starts runs one at a time and remembers the latest one."""

    def __init__(self, runs_dir: str | Path = "runs", disk: DiskRules | None = None,
                 speeds: budget.SpeedBook | None = None, clock: Clock = time.monotonic) -> None:
        self.runs_dir = Path(runs_dir)
        self.disk = disk or DiskRules()
        self.speeds = speeds
        self.clock = clock
        self._lock = threading.Lock()
        self._current: TrainingRun | None = None
        self._hold: object | None = None  # set while something (a GPU burst) works on the current run

    @contextmanager
    def hold(self) -> Iterator[object]:
        """Keep new runs from starting while the caller works on the current run; yields the key that
        :meth:`start` accepts to continue that run. ValueError when a run is held already."""
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

    @property
    def current(self) -> TrainingRun | None:
        """The latest run, active or ended (None before the first)."""
        return self._current

    def start(self, cfg: TrainConfig, owner_token: str = "", max_seconds: float | None = None,
              hold: object | None = None, visitor: str = "") -> TrainingRun:
        """Start a run in the background; ValueError if one is already active or the config is invalid.

        ``owner_token``: the secret that controls the run (public servers); ``visitor``: the address that
        started it (what a visitor's run quota counts); ``max_seconds``: its wall-time
        cap; ``hold``: the key of :meth:`hold`, for the holder that continues the current run. Nothing is
        written before this machine's run lock is held."""
        with self._lock:
            self._check_free(hold)
            run = TrainingRun(cfg, self.runs_dir, owner_token=owner_token, max_seconds=max_seconds,
                              disk=self.disk, speeds=self.speeds, clock=self.clock, visitor=visitor)
            return self._launch(run)

    def start_run(self, run: Any) -> Any:
        """Start a run object of another kind (a fine-tuning run) in the same slot: the same one-at-a-time
        rule and machine lock as pretraining. ValueError when a run is under way."""
        with self._lock:
            self._check_free(None)
            return self._launch(run)

    def _launch(self, run: Any) -> Any:
        lock = self.try_machine_lock()
        try:
            run.start(lock)
        except BaseException:
            lock.release()
            raise
        self._current = run
        return run

    def try_machine_lock(self) -> FileLock:
        """This machine's run lock, held (ValueError when another process holds it)."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.runs_dir / LOCK_FILE, thread_local=False)  # released by the run's thread
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise ValueError("Another process on this machine is already running a pretraining run; "
                             "wait for it to finish or stop it first.") from None
        return lock

    def check_free(self) -> None:
        """ValueError when a run is under way (or on a GPU burst): a new one cannot start now."""
        with self._lock:
            self._check_free(None)

    def is_busy(self, run_id: str) -> bool:
        """Whether run ``run_id`` is under way, on a GPU burst, or held (its folder must stay)."""
        run = self._current
        return run is not None and run.run_id == run_id and (run.active or self._hold is not None)

    def forget(self, run_id: str) -> None:
        """Forget the latest run when it is ``run_id`` and has ended (its folder was deleted): the pages
        stop showing its status."""
        with self._lock:
            run = self._current
            if run is not None and run.run_id == run_id and not run.active and self._hold is None:
                self._current = None

    def _check_free(self, hold: object | None) -> None:
        if self._hold is not None and hold is not self._hold:
            raise ValueError("The current run is on a GPU burst; wait until it is back.")
        if self._current is not None and self._current.active and not (hold is not None and hold is self._hold):
            snap = self._current.snapshot()
            kind = "fine-tuning" if getattr(self._current, "kind", "") == "finetune" else "pretraining"
            raise ValueError(f"A {kind} run is already {snap.status} (run {snap.run_id}, step "
                             f"{snap.step}/{snap.total_steps}); stop it before starting another.")

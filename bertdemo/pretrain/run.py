"""A pretraining run in a background thread, and the manager that allows one run at a time.

`TrainingRun` owns a daemon thread, its own model and optimizer (inside the loop) and a
metrics buffer behind a lock; the UI only calls `snapshot()` and the control methods.
`RunManager` keeps the latest run (so a page reload reattaches) and refuses a second active
run in this process, and — through a lock file in ``runs_dir`` — on this machine.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from bertdemo.pretrain import checkpoint as ckpt, history, priority
from bertdemo.pretrain.config import TrainConfig, validate_probe_text
from bertdemo.pretrain.loop import RunControl, run_training
from bertdemo.pretrain.metrics import ACTIVE_STATUSES, MetricsBuffer, RunSnapshot

try:
    import fcntl
except ImportError:  # Windows: the in-process check still holds
    fcntl = None

LOCK_FILE = ".active-run.lock"


def _new_run_id(runs_dir: Path, preset: str) -> str:
    base = f"{datetime.now():%Y%m%d-%H%M%S}-{preset}"
    run_id, n = base, 1
    while (runs_dir / run_id).exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def corpus_label(corpus: str) -> str:
    """What a page shows of a corpus: its name, or only the file name of an upload (never its server folder)."""
    return corpus if corpus in ("wiki", "tinystories") else Path(corpus).name


def resume_config(checkpoint: str | Path, **overrides) -> TrainConfig:
    """The TrainConfig a checkpoint was trained with, set to resume from it (e.g. overrides: steps=4000)."""
    path = Path(checkpoint)
    ckpt.read_state(path)  # ValueError if this is not a training checkpoint
    return TrainConfig.from_json(path / ckpt.CONFIG_FILE).replace(**overrides, resume_from=str(path))


class TrainingRun:
    """One pretraining run on a daemon thread; every public method is safe to call from the UI thread."""

    def __init__(self, cfg: TrainConfig, runs_dir: str | Path | None = None, owner: str = "",
                 max_seconds: float | None = None) -> None:
        cfg.validate()
        self.cfg = cfg
        self.owner = owner  # the secret of the browser (or API caller) that started it; "" = anyone
        self.max_seconds = max_seconds  # wall-time cap (public servers): stopped and saved when reached
        self._deadline: float | None = None  # time.monotonic() at which the cap is reached (set by start)
        self._limit_reason = ""
        self.runs_dir = Path(runs_dir or cfg.system.runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        if cfg.system.resume_from:
            state = ckpt.read_state(cfg.system.resume_from)
            self.run_id = str(state.get("run_id") or Path(cfg.system.resume_from).parent.name)
            self.checkpoint_dir = ckpt.run_checkpoint_dir(cfg.system.resume_from)
            self._run_info = {"run_id": self.run_id, "started_at": state.get("started_at"),
                              "elapsed_s": float(state.get("elapsed_s", 0.0))}
        else:
            self.run_id = _new_run_id(self.runs_dir, cfg.model.preset)
            self.checkpoint_dir = self.runs_dir / self.run_id / ckpt.CHECKPOINT_DIRNAME
            self._run_info = {"run_id": self.run_id, "started_at": datetime.now().isoformat(timespec="seconds")}
        history.record_owner(self.checkpoint_dir.parent, owner)  # who may delete it later (public servers)
        self.control = RunControl()
        self.metrics = MetricsBuffer(run_id=self.run_id, status="preparing", message="Starting…",
                                     total_steps=cfg.optim.steps, preset=cfg.model.preset,
                                     corpus=corpus_label(cfg.data.corpus),
                                     probe_text=cfg.monitor.probe_text)
        self._thread = threading.Thread(target=self._main, name=f"pretrain-{self.run_id}", daemon=True)
        self._lock_fh = None

    # lifecycle -------------------------------------------------------------------------
    def start(self) -> TrainingRun:
        self._thread.start()
        if self.max_seconds is not None:
            self._deadline = time.monotonic() + self.max_seconds
        if self.max_seconds:
            timer = threading.Timer(self.max_seconds, self._time_up)
            timer.daemon = True
            timer.start()
        return self

    def _time_up(self) -> None:
        if self.active:
            minutes = self.max_seconds / 60
            self._limit_reason = f"Stopped at the {minutes:g}-minute limit of this public server."
            self.stop()

    def _main(self) -> None:
        try:
            priority.lower_this_thread()  # when the page and the run both want a core, the page comes first
            final = run_training(self.cfg, metrics=self.metrics, checkpoint_dir=self.checkpoint_dir,
                                 control=self.control, run_info=self._run_info)
            if final == "stopped" and self._limit_reason:
                self.metrics.update(message=f"{self._limit_reason} {self.metrics.get('message')}")
        finally:
            self._release_lock()
            from bertdemo.pretrain import estimate, uploads

            estimate.record(self.cfg, float(self.metrics.get("tokens_per_s") or 0.0),  # this machine's speed
                            str(self.metrics.get("device") or "cpu"))
            from bertdemo.pretrain.blocks import default_cache_dir

            own_cache = [self.cfg.data.cache_dir] if self.cfg.data.cache_dir else []
            # an upload no checkpoint refers to is deleted now, with its blocks in this run's cache too
            uploads.release(self.runs_dir, cache_dirs=[*own_cache, default_cache_dir()])

    def time_left(self) -> float | None:
        """Seconds left of the wall-time cap (None: no cap); a run continued elsewhere keeps the same deadline."""
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def may_control(self, token: str, admin: bool = False) -> bool:
        """Whether the holder of ``token`` may pause, resume or stop this run (admin: stop only, checked by the caller)."""
        return admin or not self.owner or secrets.compare_digest(str(token or ""), self.owner)

    def acquire_machine_lock(self) -> None:
        """Hold an exclusive lock file in runs_dir while active; ValueError if another process has it."""
        if fcntl is None:
            return
        fh = open(self.runs_dir / LOCK_FILE, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise ValueError("Another process on this machine is already running a pretraining run; "
                             "wait for it to finish or stop it first.") from None
        fh.seek(0), fh.truncate(), fh.write(f"{os.getpid()} {self.run_id}\n"), fh.flush()
        self._lock_fh = fh

    def _release_lock(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    # what the UI calls -----------------------------------------------------------------
    def snapshot(self) -> RunSnapshot:
        return self.metrics.snapshot()

    @property
    def status(self) -> str:
        return self.metrics.get("status")

    @property
    def active(self) -> bool:
        return self._thread.is_alive() or (not self._thread.ident and self.status in ACTIVE_STATUSES)

    def pause(self) -> None:
        if self.status == "running":
            self.control.pause_event.set()

    def resume(self) -> None:
        self.control.pause_event.clear()

    def stop(self) -> None:
        if self.active:
            self.metrics.update(status="stopping", message="Stopping after this step…")
        self.control.stop_event.set()
        self.control.pause_event.clear()

    def set_probe_text(self, text: str) -> None:
        """Use a new probe sentence from now on, and run it at the next step (not only at the next evaluation)."""
        self.metrics.update(probe_text=validate_probe_text(text))
        self.control.probe_event.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has ended."""
        if self._thread.ident:
            self._thread.join(timeout)
        return not self._thread.is_alive()


class RunManager:
    """Starts runs one at a time and remembers the latest one."""

    def __init__(self, runs_dir: str | Path = "runs") -> None:
        self.runs_dir = Path(runs_dir)
        self._lock = threading.Lock()
        self._current: TrainingRun | None = None
        self._hold: object | None = None  # set while something (a GPU burst) works on the current run

    @contextmanager
    def hold(self) -> Iterator[object]:
        """Keep new runs from starting while the caller works on the current run; yields the key that
        :meth:`start` accepts to continue that run. ValueError when a run is active or held already."""
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

    def start(self, cfg: TrainConfig, owner: str = "", max_seconds: float | None = None,
              hold: object | None = None) -> TrainingRun:
        """Start a run in the background; ValueError if one is already active or the config is invalid.

        ``owner``: the secret that controls the run (public servers); ``max_seconds``: its wall-time cap;
        ``hold``: the key of :meth:`hold`, for the holder that continues the current run."""
        with self._lock:
            self._check_free(hold)
            run = TrainingRun(cfg, self.runs_dir, owner=owner, max_seconds=max_seconds)
            run.acquire_machine_lock()
            self._current = run
            return run.start()

    def check_free(self) -> None:
        """ValueError when a run is under way (or on a GPU burst): a new one cannot start now."""
        with self._lock:
            self._check_free(None)

    def _check_free(self, hold: object | None) -> None:
        if self._hold is not None and hold is not self._hold:
            raise ValueError("The current run is on a GPU burst; wait until it is back.")
        if self._current is not None and self._current.active:
            snap = self._current.snapshot()
            raise ValueError(f"A pretraining run is already {snap.status} (run {snap.run_id}, step "
                             f"{snap.step}/{snap.total_steps}); stop it before starting another.")

    def pause(self) -> None:
        if self._current is not None:
            self._current.pause()

    def resume(self) -> None:
        if self._current is not None:
            self._current.resume()

    def stop(self) -> None:
        if self._current is not None:
            self._current.stop()


_manager: RunManager | None = None
_manager_lock = threading.Lock()


def get_manager(runs_dir: str | Path = "runs") -> RunManager:
    """The process-wide RunManager; `runs_dir` applies to the runs it starts from now on."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = RunManager(runs_dir)
        elif Path(runs_dir) != _manager.runs_dir and not (_manager.current and _manager.current.active):
            _manager.runs_dir = Path(runs_dir)
        return _manager

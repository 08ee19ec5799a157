"""One fine-tuning run on a daemon thread: the run service starts it in the machine's one training slot.

Torch-free at import (the engine is imported by the thread). A :class:`~bertdemo.pretrain.slot.BackgroundRun`
like a pretraining run (``snapshot``, ``pause``, ``resume``, ``stop``, ``may_control``, ``join``), with its own
``start(lock)`` and ``active``, so fine-tuning shares the slot, the owner rules and the caps of pretraining.
Its folder is ``<runs_dir>/.finetune/<run id>/``; the checkpoint is ``model/`` in it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.import_lock import LOGIC_IMPORT_LOCK
from bertdemo.models.load_errors import shown_fault
from bertdemo.pretrain import run_folders
from bertdemo.pretrain.metrics import ACTIVE_STATUSES, Status
from bertdemo.pretrain.slot import BackgroundRun, claim_run_folder

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from bertdemo.finetune.engine import TopicTask

FINETUNE_DIRNAME = ".finetune"  # under runs_dir: not a pretraining run folder (those start with a letter or digit)
MODEL_DIRNAME = "model"


def finetune_root(runs_dir: str | Path) -> Path:
    return Path(runs_dir) / FINETUNE_DIRNAME


class FinetuneRun(BackgroundRun):
    """A fine-tuning run; every public method is safe to call from the UI thread."""

    kind = "finetune"

    def __init__(self, cfg: FinetuneConfig, runs_dir: str | Path, task_loader: Callable[[], TopicTask],
                 owner_token: str = "", visitor: str = "", max_seconds: float | None = None,
                 cache_dir: str | Path | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.pretrain.trainer import RunControl  # torch: the run's engine

        self.cfg = cfg.validate()
        self.runs_dir = Path(runs_dir)
        self.task_loader = task_loader
        self.owner_token = owner_token
        self.visitor = visitor
        self.max_seconds = max_seconds
        self.cache_dir = cache_dir
        self._clock = clock
        self._deadline: float | None = None
        self._limit_reason = ""
        self._machine_lock: FileLock | None = None
        self.run_id = ""
        self.folder = Path()
        self.control = RunControl()
        self.metrics = FinetuneMetrics(status=Status.PREPARING, message="Starting…", init=cfg.init,
                                       settings=cfg.flat(), probe_text=cfg.probe_text)
        self._thread = threading.Thread(target=self._main, daemon=True)

    def start(self, machine_lock: FileLock | None = None) -> FinetuneRun:
        self._machine_lock = machine_lock
        root = finetune_root(self.runs_dir)
        kind = self.cfg.init if self.cfg.init in ("embedded", "random") else "run"
        self.run_id = claim_run_folder(root, f"ft-{kind}")
        self.folder = root / self.run_id
        self.metrics.update(run_id=self.run_id)
        run_folders.record_owner(self.folder, self.owner_token)
        run_folders.record_visitor(self.folder, self.visitor)
        if self.max_seconds is not None:
            self._deadline = self._clock() + self.max_seconds
        self._thread.name = f"finetune-{self.run_id}"
        self._thread.start()
        return self

    def _on_step(self, step: int) -> None:
        if self._deadline is not None and self._clock() >= self._deadline and not self._limit_reason:
            self._limit_reason = f"Stopped at the {self.max_seconds / 60:g}-minute limit of this public server."
            self.stop()

    def _main(self) -> None:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.finetune.engine import run_finetune
            from bertdemo.pretrain.hardware import lower_this_thread

        try:
            lower_this_thread()  # the page comes first when both want a core
            self.metrics.update(message="Loading the topic task…")
            task = self.task_loader()
            final = run_finetune(self.cfg, task, self.metrics, self.control, self.folder / MODEL_DIRNAME,
                                 cache_dir=self.cache_dir, clock=self._clock, on_step=self._on_step)
            if final == Status.STOPPED and self._limit_reason:
                self.metrics.update(message=f"{self._limit_reason} {self.metrics.get('message')}")
        except Exception as err:  # loading the task failed: the page says so, the server keeps serving
            self.metrics.update(status=Status.FAILED, message=f"Fine-tuning failed: {shown_fault(err)}")
            log.exception("Fine-tuning failed")
        finally:
            if self._machine_lock is not None:
                self._machine_lock.release()

    @property
    def active(self) -> bool:
        return self._thread.is_alive() or (not self._thread.ident and self.status in ACTIVE_STATUSES)

    def time_left(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - self._clock())

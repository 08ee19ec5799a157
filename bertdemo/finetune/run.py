"""One fine-tuning run on a daemon thread: the fine-tuning kind of run in the machine's one training slot
(:mod:`bertdemo.runs.slot`, which gives it the owner rules, the wall-time cap and the machine lock).

Torch-free at import (the engine is imported by the thread). Its folder is
``<runs_dir>/.finetune/<run id>/``; the checkpoint is ``model/`` in it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.models import run_refs
from bertdemo.models.load_errors import shown_fault
from bertdemo.runs.folders import claim_run_folder
from bertdemo.runs.slot import BackgroundRun
from bertdemo.runs.status import Status

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from bertdemo.finetune.engine import TopicTask

KIND = "finetune"
# under runs_dir: not a pretraining run folder (those start with a letter or digit); ft:<id> names its model
FINETUNE_DIRNAME, MODEL_DIRNAME = run_refs.FINETUNE_DIRNAME, run_refs.FINETUNE_MODEL_DIRNAME


def finetune_root(runs_dir: str | Path) -> Path:
    return Path(runs_dir) / FINETUNE_DIRNAME


class FinetuneRun(BackgroundRun):
    """A fine-tuning run; every public method is safe to call from the UI thread."""

    kind = KIND
    label = "fine-tuning"
    id_label = "ft"  # a run id reads <date>-<time>-<id_label>-<start>

    def __init__(self, cfg: FinetuneConfig, runs_dir: str | Path, task_loader: Callable[[], TopicTask],
                 owner_token: str = "", visitor: str = "", max_seconds: float | None = None,
                 cache_dir: str | Path | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg.validate()
        self.task_loader = task_loader
        self.cache_dir = cache_dir
        metrics = FinetuneMetrics(status=Status.PREPARING, message="Starting…", init=cfg.init, task=cfg.task,
                                  settings=cfg.flat(), probe_text=cfg.probe_text)
        super().__init__(runs_dir, metrics, owner_token=owner_token, visitor=visitor, max_seconds=max_seconds,
                         clock=clock)

    def claim_folder(self) -> None:
        root = finetune_root(self.runs_dir)
        start = self.cfg.init if self.cfg.init in ("embedded", "random") else "run"
        self.run_id = claim_run_folder(root, f"{self.id_label}-{start}")
        self.run_folder = root / self.run_id

    def work(self) -> str:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.finetune.engine import run_finetune
            from bertdemo.finetune.token_engine import run_token_finetune

        if self.cfg.task == "names":  # a label per word: a token classifier
            run_finetune = run_token_finetune
        try:
            self.metrics.update(message=f"Loading the {self.cfg.task} task…")
            task = self.task_loader()
        except Exception as err:  # loading the task failed: the page says so, the server keeps serving
            self.metrics.update(status=Status.FAILED, message=f"Fine-tuning failed: {shown_fault(err)}")
            log.exception("Fine-tuning failed")
            return Status.FAILED
        return run_finetune(self.cfg, task, self.metrics, self.control, self.run_folder / MODEL_DIRNAME,
                            cache_dir=self.cache_dir, clock=self._clock, on_step=self.on_step)

    def own_seconds_left(self) -> float | None:
        """What is left of the run's time budget (training seconds), or of its steps at its speed so far."""
        snap = self.metrics.snapshot()
        left = []
        if self.cfg.time_budget_s:
            left.append(max(0.0, self.cfg.time_budget_s - snap.elapsed_s))
        if snap.step and snap.total_steps and snap.elapsed_s > 0:
            left.append(snap.elapsed_s / snap.step * max(0, snap.total_steps - snap.step))
        return min(left) if left else None

"""One pretraining run on its daemon thread (:class:`TrainingRun`): the pretraining kind of run in the
machine's one training slot (:mod:`bertdemo.runs.slot`, which gives it its cap, owner and lock). Torch-free
at import: the run's thread imports its engine.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.pretrain import budget, checkpoints, run_folders
from bertdemo.pretrain.config import TrainConfig, validate_probe_text
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.probes import validate_expected
from bertdemo.runs.folders import claim_run_folder
from bertdemo.runs.slot import BackgroundRun, Clock
from bertdemo.runs.status import ACTIVE_STATUSES, Status
from bertdemo.settings import DiskRules

KIND = "pretrain"


class TrainingRun(BackgroundRun):
    """One pretraining run; every public method is safe to call from the UI thread.

    Nothing is written until :meth:`start` (which the manager calls holding the machine lock)."""

    kind = KIND
    label = "pretraining"

    def __init__(self, cfg: TrainConfig, runs_dir: str | Path, owner_token: str = "",
                 max_seconds: float | None = None, disk: DiskRules | None = None,
                 speeds: budget.SpeedBook | None = None, clock: Clock = time.monotonic, visitor: str = "") -> None:
        cfg.validate()
        self.cfg = cfg
        self.disk = disk or DiskRules()
        self.speeds = speeds
        self._run_info: dict[str, Any] = {}
        metrics = MetricsBuffer(status=Status.PREPARING, message="Starting…",
                                total_steps=cfg.optim.steps, preset=cfg.model.preset, objective=cfg.objective.objective,
                                corpus=checkpoints.corpus_display_name(cfg.data.corpus),
                                probe_text=cfg.monitor.probe_text, probe_expected=cfg.monitor.probe_expected)
        super().__init__(runs_dir, metrics, owner_token=owner_token, visitor=visitor, max_seconds=max_seconds,
                         clock=clock)
        if cfg.system.resume_from:
            state = checkpoints.read_state(cfg.system.resume_from)
            self.run_folder = checkpoints.run_folder_of(cfg.system.resume_from)
            self.run_id = str(state.get("run_id") or self.run_folder.name)
            self._run_info = {"run_id": self.run_id, "started_at": state.get("started_at"),
                              "elapsed_s": float(state.get("elapsed_s", 0.0))}
            self.metrics.update(run_id=self.run_id)

    def claim_folder(self) -> None:
        if not self.run_id:  # a new run (a resumed one writes into its own folder)
            self.run_id = claim_run_folder(self.runs_dir, self.cfg.model.preset)
            self.run_folder = self.runs_dir / self.run_id
            self._run_info = {"run_id": self.run_id, "started_at": datetime.now().isoformat(timespec="seconds")}

    def work(self) -> str:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.pretrain.trainer import run_training

        return run_training(self.cfg, metrics=self.metrics, run_folder=self.run_folder, control=self.control,
                            run_info=self._run_info, on_step=self.on_step, disk=self.disk)

    def after(self) -> None:
        if self.speeds is not None:  # this machine's speed, for the next estimates
            snap = self.metrics.snapshot()
            self.speeds.record(self.cfg, float(snap.tokens_per_s or 0.0), str(snap.device or "cpu"),
                               budget.measured_overheads(self.cfg, snap.startup_s, snap.eval_s, snap.evals,
                                                         snap.save_s, snap.saves))
        from bertdemo.pretrain.data import default_cache_dir

        own_cache = [self.cfg.data.cache_dir] if self.cfg.data.cache_dir else []
        # an upload no checkpoint refers to is deleted now, with its blocks in this run's cache too
        run_folders.release_corpora(self.runs_dir, cache_dirs=[*own_cache, default_cache_dir()])

    def own_seconds_left(self) -> float | None:
        """The run's own estimate of the time to its last step (its ETA), once it has one."""
        eta = self.metrics.get("eta_s")
        return float(eta) if eta else None

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


class TwinRun(TrainingRun):
    """"Train both": the masked-LM twin, then the left-to-right twin, in one turn of the training slot — two runs
    (two folders, two checkpoints) with one recipe and one seed, so the same batches in the same order (the
    left-to-right batch maker draws the masks it does not use: :class:`bertdemo.pretrain.model.BatchMaker`) for
    the same number of steps: the time budget is off (a clock would give the slower twin fewer steps), ``steps``
    ends both. The page follows the twin that trains now; once the second starts, the first is its twin
    (:attr:`twin_id`) and the curves overlay both. A Stop (or a failure) of the first ends the pair."""

    label = "twin pretraining"

    def __init__(self, cfg: TrainConfig, runs_dir: str | Path, **kwargs: Any) -> None:
        first = cfg.replace(objective="mlm", time_budget_s=0.0)
        super().__init__(first, runs_dir, **kwargs)
        self.second_cfg = first.replace(objective="ltr")
        self.twin_id = ""  # the masked-LM twin's run id, once the left-to-right twin trains

    def work(self) -> str:
        final = super().work()
        if final != Status.FINISHED or self.control.stop_event.is_set():
            return final
        self.twin_id = self.run_id
        self.cfg = self.second_cfg
        self.metrics = MetricsBuffer(status=Status.PREPARING, total_steps=self.cfg.optim.steps,
                                     message=f"Starting the left-to-right twin of run {self.twin_id} (same batches)…",
                                     preset=self.cfg.model.preset, objective=self.cfg.objective.objective,
                                     corpus=checkpoints.corpus_display_name(self.cfg.data.corpus),
                                     probe_text=self.cfg.monitor.probe_text,
                                     probe_expected=self.cfg.monitor.probe_expected)
        self.run_id = ""
        self.claim_folder()
        self.metrics.update(run_id=self.run_id)
        self.record_holders()
        self.announce_start()  # e.g. a class records the second twin as its member's run too
        return super().work()

    def own_seconds_left(self) -> float | None:
        """The twin now training's ETA, and while the first trains, the second's steps too (about as long)."""
        left = super().own_seconds_left()
        return None if left is None else (left if self.twin_id else left * 2)

"""The app context: one server's settings and the services built from them, made once by ``app.py``.

``build_app(ctx)`` hands it to every tab; the logic takes what it uses as arguments. Nothing else
in the package keeps mutable state of its own, so a test builds a fresh context
(:meth:`AppContext.for_tests`) and nothing leaks from one test to the next. Building it imports
no torch: the model store is a :class:`~bertdemo.lazy.StoreFront` until the logic has loaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bertdemo.classroom.service import Classroom
from bertdemo.disk_meter import DiskMeter
from bertdemo.finetune.lab import FinetuneLab
from bertdemo.finetune.service import FinetuneService
from bertdemo.lazy import LogicLoader, StoreFront
from bertdemo.limits import HEAVY_SLOTS
from bertdemo.memory import MemoryBudget, MemoryTrimmer
from bertdemo.models.batching import MicroBatcher, Slots
from bertdemo.models.hub import HubProbe
from bertdemo.models.policy import AccessPolicy
from bertdemo.pretrain.service import PretrainService
from bertdemo.runs.service import RunService
from bertdemo.settings import ServerSettings


@dataclass
class AppContext:
    """One server: what it was told (``settings``) and what it runs (models, runs, batcher, loader)."""

    settings: ServerSettings
    models: StoreFront  # the model store (the real one once the logic has loaded)
    runs: RunService  # the one training slot and what every run kind shares: control, quota, clean-up, shutdown
    pretrain_runs: PretrainService  # the pretraining kind: start, list, delete, names, estimates
    finetune_runs: FinetuneService  # the fine-tuning kind: start, list, delete, ft:<id> models
    batcher: MicroBatcher  # concurrent Fill-Mask requests share a forward
    loader: LogicLoader  # imports torch and the logic after the page is served
    heavy: Slots  # requests with extra passes (PLL, whole words, two models) computing at once
    finetune: FinetuneLab  # the topic task, its landmarks, layer probes, fine-tuned models answering
    memory: MemoryBudget  # what every cache together may hold (models, answers, activations, features)
    trimmer: MemoryTrimmer  # hands freed memory back to the system (started by app.py)
    classes: Classroom  # classes, members and their answers (the database opens on first use)

    @classmethod
    def from_settings(cls, settings: ServerSettings, clock: Callable[[], float] = time.monotonic) -> AppContext:
        """Build the services of a server with these settings (torch-free: nothing heavy loads here);
        ``clock``: the runs' wall-time caps read it (a test passes one it moves by hand)."""
        hub = HubProbe(offline=settings.offline)
        public = settings.public
        policy = AccessPolicy(public.max_model_gb if public else None, public.allowed if public else frozenset(),
                              runs_dir=settings.runs_dir, hub=hub, served=public.served if public else ())
        loader = LogicLoader()
        memory = MemoryBudget.gigabytes(settings.memory_budget_gb)
        runs = RunService(settings, clock=clock)  # every run kind registers with it (runs.kinds lists them)
        classes = Classroom(settings.class_db, settings.runs_dir,  # its SQLite file counts in --disk-budget-gb
                            disk_check=DiskMeter(settings.disk).check)  # walks the disk at most once a second
        runs.on_start.append(classes.record_started_run)  # a class member's run goes to their class's gallery
        runs.class_of = classes.class_of  # whose places a member's run may take (--class-places)
        return cls(settings=settings,
                   models=StoreFront(policy, default=settings.default_model, device=settings.device, loader=loader,
                                     budget=memory),
                   runs=runs, pretrain_runs=PretrainService(runs, hub=hub), finetune_runs=FinetuneService(runs, hub=hub),
                   batcher=MicroBatcher(settings.fill_mask_batch), loader=loader,
                   heavy=Slots(HEAVY_SLOTS), finetune=FinetuneLab(settings.cache_dir, memory), memory=memory,
                   trimmer=MemoryTrimmer(), classes=classes)

    @classmethod
    def for_tests(cls, tmp_path: str | Path, public: bool = False, clock: Callable[[], float] = time.monotonic,
                  **settings) -> AppContext:
        """A context whose runs and caches live under ``tmp_path`` (offline, CPU), local unless ``public``;
        ``clock``: the runs' clock."""
        base = dict(runs_dir=Path(tmp_path) / "runs", cache_dir=Path(tmp_path) / "cache", public=public,
                    admin_token="", offline=True, device="cpu")
        base.update(settings)
        return cls.from_settings(ServerSettings.build(**base), clock=clock)

    def warm_up(self) -> None:
        """Load the default model now (the loader calls this once torch is in)."""
        self.models.get()

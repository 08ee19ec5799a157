"""One cell of Table 5 in miniature re-run live: a fine-tuning run in the machine's one training slot.

A learner picks a twin, a task and a seed; :func:`start_cell` checks them and starts a :class:`Table5Run` under
the rules every run obeys (:class:`bertdemo.runs.service.RunService`: one run at a time, the owner's token, the
public wall-time cap, the per-visitor quota). The run fine-tunes with the settings the shipped table was measured
with (:func:`bertdemo.finetune.table5.shipped_settings`), so its score lands beside the bench's seeds; it writes
the fine-tuning metrics every page reads (the validation curve, then the test score: ``test_accuracy`` for topic,
``test_macro_f1`` — the word-level F1 of NAME — for names) and saves no model: its score is its result. On a public
server the cell's time budget is the cap less room to score and end (``Limits.training_budget_s``): cut there, it is
scored with its best validation weights and says at which of its planned steps it ended; cut before a quarter of an
epoch, it says so instead of a score. Torch-free at import.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.run import FinetuneRun, finetune_root
from bertdemo.finetune.table5 import (
    CELL_ID_LABEL,
    METRICS,
    TWIN_LABELS,
    CellSettings,
    check_cell,
    shipped_settings,
    twin_config,
)
from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.models.load_errors import shown_fault
from bertdemo.runs.folders import claim_run_folder
from bertdemo.runs.slot import BackgroundRun
from bertdemo.runs.status import Status


class Table5Run(FinetuneRun):
    """A live cell: ``twin`` fine-tuned on ``task`` with ``seed``; ``folder``: another model folder to start from
    (tests' tiny twins)."""

    id_label = CELL_ID_LABEL

    def __init__(self, twin: str, task: str, seed: int, settings: CellSettings, runs_dir: str | Path,
                 task_loader: Callable[[], Any], folder: str | Path | None = None, owner_token: str = "",
                 visitor: str = "", max_seconds: float | None = None, clock: Callable[[], float] = time.monotonic,
                 time_budget_s: float = 0.0) -> None:
        self.twin, self.task, self.seed, self.folder = twin, task, seed, folder
        self.time_budget_s = time_budget_s  # under a public cap: the cell ends there with its best weights
        self.cell_settings = settings.validate()
        self.cfg = twin_config(twin, seed, self.cell_settings, task)
        self.task_loader = task_loader
        self.cache_dir = None
        metrics = FinetuneMetrics(status=Status.PREPARING, message="Starting…", init=self.cfg.init, task=task,
                                  settings={k: v for k, v in self.cfg.flat().items() if k != "init_path"})
        BackgroundRun.__init__(self, runs_dir, metrics, owner_token=owner_token, visitor=visitor,
                               max_seconds=max_seconds, clock=clock)

    def claim_folder(self) -> None:
        root = finetune_root(self.runs_dir)
        self.run_id = claim_run_folder(root, f"{self.id_label}-{self.twin}-{self.task}")
        self.run_folder = root / self.run_id

    def work(self) -> str:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.finetune.engine import too_few_sentence
            from bertdemo.finetune.twin_finetune import finetune_twin

        try:
            self.metrics.update(message=f"Loading the {self.task} task…")
            data = self.task_loader()
            result = finetune_twin(self.twin, self.task, self.seed, data, self.cell_settings, folder=self.folder,
                                   metrics=self.metrics, control=self.control, clock=self._clock,
                                   on_step=self.on_step, time_budget_s=self.time_budget_s)
        except Exception as err:  # noqa: BLE001 - the page shows it; the server keeps serving
            self.metrics.update(status=Status.FAILED, message=f"Fine-tuning failed: {shown_fault(err)}")
            return Status.FAILED
        score = "test_accuracy" if self.task == "topic" else "test_macro_f1"
        who = f"The {TWIN_LABELS[self.twin]} twin, seed {self.seed}"
        scored = not math.isnan(result.test_score)
        if result.status == Status.STOPPED:
            message = f"{who}: stopped at step {result.steps}; a stopped cell is not scored on test."
        elif not scored:
            message = f"{who}: {too_few_sentence(result.steps, result.planned_steps)}"
        else:
            message = (f"{who}: {METRICS[self.task]} {result.test_score:.1%} (the weights of step {result.chosen_step}, "
                       f"best on validation at {result.val_score:.1%}), {result.steps} steps in {result.seconds:.0f} s.")
        if scored and result.cut_by_budget:
            message += (f" This server's {self.time_budget_s:g}-second time budget ended it at step {result.steps} of "
                        f"{result.planned_steps}: the shipped table's seeds ran all {result.planned_steps}, so compare "
                        "it with them with care.")
        self.metrics.update(status=result.status, message=message, elapsed_s=result.seconds,
                            **({score: result.test_score} if scored else {}))
        return result.status


def start_cell(service: Any, twin: Any, task: Any, seed: Any, owner_token: str = "", visitor: str = "",
               task_loader: Callable[[], Any] | None = None, folder: str | Path | None = None,
               settings: CellSettings | None = None) -> Table5Run:
    """Start a live cell in the training slot of ``service`` (the server's :class:`FinetuneService`): the cell
    checked first (:func:`check_cell`), then the slot, the visitor's share of runs and the public cap, as every
    fine-tuning start. ``task_loader`` / ``folder`` / ``settings``: tests' tiny task, twin and budget; by default
    the server's task, the shipped twin and the shipped table's settings. ValueError naming what to change."""
    from bertdemo.finetune.service import default_names_task, default_topic_task

    twin, task, seed = check_cell(twin, task, seed)
    runs = service.runs
    runs.check_free(owner_token)
    runs.check_visitor_share(owner_token, visitor, resuming=False)
    default = default_topic_task if task == "topic" else default_names_task
    loader = task_loader or (lambda: default(service.settings.cache_dir))
    public = service.settings.public_limits  # under the cap, with room to score and end: the cell keeps its result
    run = Table5Run(twin, task, seed, settings or shipped_settings(), service.runs_dir, loader, folder=folder,
                    owner_token=runs.owner(owner_token), visitor=runs.visitor(visitor),
                    max_seconds=runs.cap_seconds(), clock=runs.manager.clock,
                    time_budget_s=0.0 if public is None else float(public.training_budget_s))
    runs.launch(run, owner_token)
    return run

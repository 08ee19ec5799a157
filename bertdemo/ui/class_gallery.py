"""The teacher's gallery of the class's fine-tuning runs (:func:`finetune_gallery_spec`): each member's latest
fine-tuning runs overlaid, as their pretraining runs are — the train loss and the validation score of each,
from the run's own recorded history (a live run's metrics as they are now, an ended run's saved history).
Wiring only: the drawing is :func:`bertdemo.viz.finetune.gallery_spec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertdemo.classroom.report import ClassReport
from bertdemo.finetune.metrics import FinetuneSnapshot
from bertdemo.viz import finetune as finetune_viz

if TYPE_CHECKING:
    from bertdemo.context import AppContext

FINETUNE_KIND = "finetune"  # how the class records a fine-tuning run (a Table 5 cell and an own-data run too)


def finetune_gallery_spec(ctx: AppContext, report: ClassReport, limit: int = 12) -> dict | None:
    """The members' latest ``limit`` fine-tuning runs as overlaid curves, each named by its student; None when
    there is none to draw (deleted since, or ended before its first save)."""
    live = {run.run_id: run for run in ctx.runs.manager.active_runs()}  # every run under way, not the latest alone
    drawn = []
    for nick, run_id, _kind in sorted((r for r in report.runs if r[2] == FINETUNE_KIND), key=lambda r: r[1])[-limit:]:
        try:
            snap = live[run_id].snapshot() if run_id in live else ctx.finetune_runs.load(run_id)
        except ValueError:  # deleted since, or never saved its model
            continue
        if isinstance(snap, FinetuneSnapshot):
            drawn.append((f"{nick}: {run_id}", snap))
    return finetune_viz.gallery_spec(drawn) if drawn else None

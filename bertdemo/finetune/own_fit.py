"""One fine-tune on a learner's own examples, sentence labels or word labels alike: a copy of a model built once
(so the cross-validation folds do not load the starting model again each), trained by the fine-tuning loop
(:func:`bertdemo.finetune.loop.train_steps`: seeded batches, pause / stop, warm-up then linear decay, clipping),
and, when a validation split is given, the epoch count chosen on it: the model is scored on validation at the
end of every epoch and the best epoch's weights are the ones kept (the earliest on a tie).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from bertdemo.finetune.best_weights import KeptBest
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import budget_progress
from bertdemo.finetune.loop import train_steps
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status

FUSED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class Stopped(Exception):
    """The learner pressed Stop (or the server's cap did, or the server is going down). ``chosen``: the epochs scored
    on validation before the stop (None when none was, or the fit chooses nothing); the model then holds the best
    one's weights."""

    def __init__(self, chosen: Chosen | None = None) -> None:
        super().__init__("stopped")
        self.chosen = chosen


@dataclass
class Chosen(KeptBest):
    """The epoch count chosen on validation: the end of each epoch scored (``curve``: (epoch, score) pairs),
    the best one's epoch (fractional when the time budget cut the last one short), step, score and weights."""

    epoch: float = 0.0
    score: float = -math.inf
    curve: list[tuple[float, float]] = field(default_factory=list)

    def consider(self, epoch: float, step: int, score: float, model: torch.nn.Module) -> None:
        """Keep ``model``'s weights if this epoch's score beats the kept one's."""
        if self.beats((score,)):
            self.keep(step, (score,), model)
            self.epoch, self.score = epoch, score

    def as_dict(self, on: str) -> dict:
        """What the page and the API read: which epoch was chosen, its score and what it was chosen on."""
        return {"epoch": round(self.epoch, 3), "step": self.step, "score": self.score, "on": on,
                "curve": [[round(e, 3), s] for e, s in self.curve]}


def fresh(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` as built (its seeded head included) to fine-tune; the original stays untouched."""
    return copy.deepcopy(model)


def plan(cfg: FinetuneConfig, n_train: int) -> tuple[int, int, int]:
    """(batch, steps an epoch, planned steps) of :func:`fit` on ``n_train`` examples: a batch of
    ``min(batch_size, examples)``, an epoch of ``examples // batch`` steps, ``ceil(epochs × steps an epoch)`` steps."""
    batch = min(cfg.batch_size, n_train)
    per_epoch = max(1, n_train // batch)
    return batch, per_epoch, max(1, math.ceil(cfg.epochs * per_epoch))


def fit(cfg: FinetuneConfig, model: torch.nn.Module, n_train: int, loss_of: Callable[[list[int]], torch.Tensor],
        control: RunControl, metrics: FinetuneMetrics, step0: int = 0, budget_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic, on_step: Callable[[int], None] | None = None,
        score_validation: Callable[[], float] | None = None) -> tuple[int, Chosen | None]:
    """Fine-tune ``model`` in place on ``n_train`` examples (``loss_of(indices)``: a batch's loss): a batch of
    ``min(batch_size, examples)``, an epoch of ``examples // batch`` steps (one seeded permutation, as the loop
    draws them), ``ceil(epochs × steps an epoch)`` steps; ``budget_s`` (0: none)
    may end it first (validation scoring included, the last one foreseen), the schedule following whichever end
    is nearer. With ``score_validation`` (higher is better) the model is scored at each epoch's end and at the
    last step, and left with the best epoch's weights. Returns (steps taken, the choice or None); raises
    :class:`Stopped` on a stop. The model is left in eval mode."""
    batch, per_epoch, total = plan(cfg, n_train)
    run_cfg = cfg.replace(batch_size=batch, eval_every=per_epoch if score_validation else 10**9)
    # the fused kernel: the same AdamW update, one pass over the weights instead of a dozen (the embedding matrix is
    # half the model: the unfused update took longer than the backward pass; docs/benchmarks.md)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay,
                                  fused=all(p.dtype in FUSED_DTYPES for p in model.parameters()))
    gen = torch.Generator().manual_seed(cfg.seed)  # the data order: the same for every start
    torch.manual_seed(cfg.seed)  # dropout: the same stream for every start
    start, paused, eval_s = clock(), [0.0], [0.0]
    chosen = Chosen() if score_validation else None

    def elapsed() -> float:
        return clock() - start - paused[0]

    def score_at(step: int) -> None:
        epoch = step / per_epoch
        if chosen.curve and chosen.curve[-1][0] == epoch:  # the budget ended the run at an epoch's end
            return
        began = clock()
        value = float(score_validation())
        eval_s[0] = max(0.0, clock() - began)
        chosen.curve.append((epoch, value))
        chosen.consider(epoch, step, value, model)
        model.train()

    model.train()
    steps, status = train_steps(
        run_cfg, model, optimizer, metrics, control, clock, n_train=n_train, total=total,
        batches_per_epoch=per_epoch, generator=gen, loss_of=loss_of,
        progress_of=lambda step, spent: max(step / total, budget_progress(spent, 2 * eval_s[0], budget_s)),
        elapsed=elapsed, add_paused=lambda held: paused.__setitem__(0, paused[0] + held),
        evaluate_at=score_at if score_validation else (lambda step: None), on_step=on_step, step0=step0)
    if status == Status.STOPPED:  # what was chosen so far is kept: the best scored epoch's weights
        if chosen is not None and chosen.weights is not None:
            chosen.restore(model)
            model.eval()
            raise Stopped(chosen)
        raise Stopped
    if chosen is not None:
        score_at(steps)
        if chosen.step != steps:
            chosen.restore(model)
    model.eval()
    return steps, chosen

"""The fine-tuning loop, one home for the sentence and the token tasks: draw the seeded batches, honour a pause or
a stop between two steps, follow the learning-rate schedule, take one optimiser step (clipped at norm 1.0), log the
smoothed loss and evaluate every ``eval_every`` steps."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status


def between_steps(control: RunControl, metrics, step: int, clock: Callable[[], float]) -> tuple[bool, float]:
    """(stop now?, seconds spent paused): a pause holds here (the status says so) until Resume or Stop."""
    if control.stop_event.is_set():
        return True, 0.0
    if not control.pause_event.is_set():
        return False, 0.0
    metrics.update(status=Status.PAUSED, message="Paused.")
    paused = control.wait_while_paused(step, clock)
    if control.stop_event.is_set():
        return True, paused
    metrics.update(status=Status.RUNNING, message="")
    return False, paused


def optimiser_step(model: torch.nn.Module, loss: torch.Tensor, optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Backpropagate ``loss``, clip the gradients at norm 1.0 and step at learning rate ``lr``."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def lr_factor(progress: float, warmup: float) -> float:
    """Linear warm-up to 1 over the first ``warmup`` of the run, then linear decay to 0 at its end."""
    if progress < warmup:
        return progress / warmup
    return max(0.0, (1 - progress) / (1 - warmup)) if warmup < 1 else 0.0


def train_steps(cfg, model: torch.nn.Module, optimizer: torch.optim.Optimizer, metrics, control: RunControl,
                clock: Callable[[], float], *, n_train: int, total: int, batches_per_epoch: int,
                generator: torch.Generator, loss_of: Callable[[list[int]], torch.Tensor],
                progress_of: Callable[[int, float], float], elapsed: Callable[[], float],
                add_paused: Callable[[float], None], evaluate_at: Callable[[int], None],
                on_step: Callable[[int], None] | None, step0: int = 0) -> tuple[int, str]:
    """Train until ``total`` steps, a stop, or ``progress_of(step, elapsed)`` reaching 1 (the time budget); the
    batches are seeded permutations of ``n_train`` examples, ``loss_of(indices)`` the batch's loss. (steps, status).
    ``step0``: where this fine-tune's steps start in the run's count (several fine-tunes in one run: the
    cross-validation folds), for what is logged and shown."""
    step, losses, status, position = 0, [], Status.FINISHED, 0
    order = torch.randperm(n_train, generator=generator)
    while step < total:
        stop, held = between_steps(control, metrics, step0 + step, clock)
        add_paused(held)
        if stop:
            status = Status.STOPPED
            break
        progress = progress_of(step, elapsed())
        if progress >= 1.0:
            break
        if position + cfg.batch_size > len(order):
            order, position = torch.randperm(n_train, generator=generator), 0
        idx = order[position:position + cfg.batch_size].tolist()
        position += cfg.batch_size
        lr = cfg.learning_rate * lr_factor(progress, cfg.warmup_fraction)
        loss = loss_of(idx)
        optimiser_step(model, loss, optimizer, lr)
        step += 1
        losses.append(float(loss.detach()))
        if step % 5 == 0:
            metrics.log_train(step0 + step, float(np.mean(losses)), lr, elapsed())
            losses = []
        metrics.update(step=step0 + step, epoch=round(step / batches_per_epoch, 3), elapsed_s=elapsed())
        if step % cfg.eval_every == 0 and step < total:
            evaluate_at(step)
        if on_step is not None:
            on_step(step0 + step)
    if losses:
        metrics.log_train(step0 + step, float(np.mean(losses)), cfg.learning_rate * lr_factor(1.0, cfg.warmup_fraction), elapsed())
    return step, status

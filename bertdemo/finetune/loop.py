"""What every fine-tuning loop does between and at its steps, one home for the sentence and the token tasks:
honour a pause or a stop between two steps, and take one optimiser step (clipped at norm 1.0)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status


def between_steps(control: RunControl, metrics, step: int, clock: Callable[[], float]) -> tuple[bool, float]:
    """(stop now?, seconds spent paused): a pause holds here (the status says so) until Resume or Stop."""
    if control.stop_event.is_set():
        return True, 0.0
    if not control.pause_event.is_set():
        return False, 0.0
    metrics.update(status=Status.PAUSED)
    paused = control.wait_while_paused(step, clock)
    if control.stop_event.is_set():
        return True, paused
    metrics.update(status=Status.RUNNING)
    return False, paused


def optimiser_step(model: torch.nn.Module, loss: torch.Tensor, optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Backpropagate ``loss``, clip the gradients at norm 1.0 and step at learning rate ``lr``."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

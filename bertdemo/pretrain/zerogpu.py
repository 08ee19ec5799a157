"""A GPU burst for a run on a ZeroGPU Space: N steps on the GPU, then back to the CPU.

On ZeroGPU the main process has no usable CUDA: only functions decorated with ``@spaces.GPU``
get a GPU, in a forked worker whose arguments and results are pickled, and the visitor's own
GPU quota pays for it. A burst therefore travels as plain values:

1. the run stops at a step boundary and saves its checkpoint (model and optimizer);
2. :meth:`BurstInput.from_checkpoint` reads that checkpoint's tensors into CPU state dicts
   (``safetensors.torch.load_file``: no model is built);
3. :func:`~bertdemo.pretrain.gpu_entry.gpu_train` (``@spaces.GPU`` where the ``spaces`` package is
   installed, a plain generator elsewhere; handed to :func:`run_burst` by its caller) runs
   :func:`train_burst`, which builds the run's :class:`~bertdemo.pretrain.trainer.Trainer` on the device
   from them (``Trainer.from_state``), trains, yields a :class:`BurstProgress` at every log step and finally a :class:`BurstResult` —
   the weights and optimizer state on the CPU, the metric history;
4. :func:`hand_back` writes those state dicts as the run's checkpoint, and :func:`run_burst` resumes
   the run from it on the CPU (same run id, same owner, what is left of its wall-time cap).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer

from bertdemo.pretrain import checkpoints
from bertdemo.pretrain.budget import BURST_SECONDS, BURST_TIME_SHARE
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import MetricsBuffer, history_dict, metrics_csv
from bertdemo.pretrain.run import TrainingRun
from bertdemo.pretrain.trainer import Trainer
from bertdemo.runs.slot import RunManager
from bertdemo.runs.status import Status
from bertdemo.settings import DiskRules

MAX_BURST_STEPS = 5000


@dataclass
class BurstInput:
    """Everything the GPU worker needs, as picklable CPU values."""

    train_config: dict  # TrainConfig.to_dict()
    model_config: dict  # the checkpoint's config.json: the model's architecture
    state: dict  # trainer_state.json of the checkpoint: step, run identity, metric history
    model_state: dict[str, torch.Tensor]
    optimizer_state: dict
    steps: int  # steps to train in this burst
    max_seconds: float = BURST_SECONDS * BURST_TIME_SHARE

    @classmethod
    def from_checkpoint(cls, checkpoint: str | Path, steps: int,
                        max_seconds: float = BURST_SECONDS * BURST_TIME_SHARE) -> BurstInput:
        """Read a run's checkpoint into CPU state dicts."""
        checkpoint = Path(checkpoint)
        state = checkpoints.read_state(checkpoint)
        optimizer_path = checkpoint / checkpoints.OPTIMIZER_FILE
        if not optimizer_path.is_file():
            raise ValueError("This checkpoint has no optimizer state, so a GPU burst cannot continue it.")
        train_config = json.loads((checkpoint / checkpoints.CONFIG_FILE).read_text(encoding="utf-8"))
        model_config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
        model_state = load_file(checkpoint / "model.safetensors", device="cpu")
        optimizer_state = torch.load(optimizer_path, map_location="cpu", weights_only=True)
        return cls(train_config, model_config, state, model_state, optimizer_state, int(steps), float(max_seconds))


@dataclass
class BurstProgress:
    """One log step of the burst."""

    step: int
    total_steps: int
    loss: float
    lr: float
    nsp_loss: float | None
    tokens: int
    wall_s: float
    tokens_per_s: float


@dataclass
class BurstResult:
    """What the burst hands back: weights and optimizer state on the CPU, its step and history."""

    step: int
    model_state: dict[str, torch.Tensor]
    optimizer_state: dict
    state: dict  # trainer_state.json as the burst's last save wrote it (history merged)
    metrics_csv: str
    device: str


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_cpu(v) for v in value]
    return value


def train_burst(inp: BurstInput, device: str = "cuda") -> Iterator[BurstProgress | BurstResult]:
    """Train ``inp.steps`` steps of the run on ``device`` through the run's own Trainer.

    Yields a BurstProgress at every log step and a BurstResult last. Training also ends after
    ``inp.max_seconds`` (the GPU time asked for must cover evaluation and the hand-back)."""
    started = time.perf_counter()
    cfg = TrainConfig.from_dict(inp.train_config).replace(resume_from="", init_from="")
    metrics = MetricsBuffer(run_id=str(inp.state.get("run_id", "")), status=Status.PREPARING)
    trainer = Trainer.from_state(cfg, inp.model_config, inp.model_state, inp.optimizer_state, inp.state, metrics,
                                 torch.device(device))
    end = min(trainer.start_step + inp.steps, cfg.optim.steps)
    log_every = cfg.monitor.log_every
    while trainer.step < end:
        trainer.train_step()
        out_of_time = time.perf_counter() - started > inp.max_seconds
        if trainer.step % log_every == 0 or trainer.step == end or out_of_time:
            trainer.log(False)
            snap = metrics.snapshot()
            yield BurstProgress(trainer.step, cfg.optim.steps, snap.train_loss[-1], snap.lr[-1],
                                snap.nsp_loss[-1] if snap.nsp_loss else None, snap.tokens[-1],
                                snap.wall_s[-1], float(metrics.get("tokens_per_s") or 0.0))
        if out_of_time:
            break
    trainer.evaluate(final=True)
    trainer.elapsed += time.perf_counter() - trainer.t_last
    snap = metrics.snapshot()
    state = {**inp.state, "step": trainer.step, "elapsed_s": trainer.elapsed, "history": history_dict(snap)}
    yield BurstResult(trainer.step, {k: v.detach().cpu() for k, v in trainer.model.state_dict().items()},
                      _to_cpu(trainer.optimizer.state_dict()), state, metrics_csv(snap), str(trainer.device))


def hand_back(run_folder: str | Path, result: BurstResult, disk: DiskRules | None = None) -> Path:
    """Save the burst's weights, optimizer state and history as the run's latest checkpoint (atomically),
    straight from the state dicts (with the config and tokenizer of the checkpoint it started from); returns
    its folder."""
    checkpoint = checkpoints.latest_checkpoint(run_folder)
    if checkpoint is None:
        raise ValueError("This run has no saved checkpoint to continue; start a new run.")
    config = json.loads((checkpoint / checkpoints.CONFIG_FILE).read_text(encoding="utf-8"))
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    state = {k: v for k, v in result.state.items() if k != "saved_at"}
    return checkpoints.write_checkpoint(run_folder, result.model_state, tokenizer, config, state, result.metrics_csv,
                                        result.optimizer_state, disk=disk)


def merge_progress(metrics: MetricsBuffer, item: BurstProgress) -> None:
    """Show a burst's log step in the run's live metrics (the page polls them)."""
    metrics.log_train(item.step, item.loss, item.lr, item.nsp_loss, item.tokens, item.wall_s)
    metrics.update(step=item.step, status=Status.GPU_BURST, tokens_per_s=item.tokens_per_s, elapsed_s=item.wall_s,
                   message=f"GPU burst: step {item.step:,} ({item.tokens_per_s:,.0f} tokens/s).")


def run_burst(manager: RunManager, steps: int, device: str = "cuda", *,
              train: Callable[[BurstInput, str], Iterator[BurstProgress | BurstResult]],
              join_timeout: float = 120.0) -> Iterator[BurstProgress | BurstResult]:
    """Move the manager's current run to ``device`` for ``steps`` steps, then continue it on the CPU.

    The run is stopped (and saved) first; no other run may start until the burst is over. Yields
    the burst's progress and its result. A Stop during the burst ends it at the next log step
    and keeps the checkpoint from before the burst. ValueError when there is no run to move. ``train`` runs
    the burst: :func:`bertdemo.pretrain.gpu_entry.gpu_train` on a Space (the ``@spaces.GPU`` entry point),
    :func:`train_burst` in this process."""
    with manager.hold() as hold:
        run = manager.current
        if run is None:
            raise ValueError("There is no run yet: start one, then give it a GPU burst.")
        steps = int(steps)
        if not 1 <= steps <= MAX_BURST_STEPS:
            raise ValueError(f"A GPU burst trains 1 to {MAX_BURST_STEPS:,} steps, got {steps:,}.")
        left = run.time_left()
        if run.active:
            run.stop()
            if not run.join(join_timeout):
                raise ValueError("The run did not stop in time for the GPU burst; try again in a moment.")
        snap = run.snapshot()
        latest = checkpoints.latest_checkpoint(run.run_folder)
        if snap.status not in (Status.STOPPED, Status.FINISHED) or latest is None:
            raise ValueError("This run has no saved checkpoint to continue; start a new run.")
        if snap.step >= snap.total_steps:
            raise ValueError(f"The run has done all its {snap.total_steps:,} steps; resume it with more steps first.")
        run.control.stop_event.clear()
        run.metrics.update(status=Status.GPU_BURST, message="GPU burst: waiting for a GPU…")
        inp = BurstInput.from_checkpoint(latest, steps)
        if left is not None:  # the burst's time is the run's time: it cannot outlast the cap
            inp.max_seconds = min(inp.max_seconds, left)
        result = None
        stream = train(inp, device)
        try:
            for item in stream:
                if isinstance(item, BurstResult):
                    result = item
                    break
                merge_progress(run.metrics, item)
                yield item
                if run.control.stop_event.is_set():
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
            if result is None:  # stopped, failed, or the page went away: the checkpoint before the burst stays
                run.metrics.update(status=Status.STOPPED, step=int(inp.state.get("step", 0)),
                                   message=f"GPU burst ended early: the run keeps its step-"
                                           f"{inp.state.get('step', 0)} checkpoint.")
        if result is None:
            return
        saved = hand_back(run.run_folder, result, run.disk)
        yield result
        left = run.time_left()  # the burst's wall time is charged to the run's cap
        if result.step >= snap.total_steps or run.control.stop_event.is_set() or (left is not None and left <= 0):
            run.metrics.update(status=Status.STOPPED if result.step < snap.total_steps else Status.FINISHED,
                               step=result.step, message=f"GPU burst done at step {result.step:,}; checkpoint saved.")
            return
        manager.start_run(TrainingRun(checkpoints.resume_config(saved), manager.runs_dir, owner_token=run.owner_token,
                                      max_seconds=left, disk=run.disk, speeds=run.speeds, clock=manager.clock),
                          hold=hold)

"""The training loop shared by the app's run thread and the headless CLI (also under torchrun).

Read it in one sitting: :func:`run_training` sets up a :class:`Trainer` (tokenizer, blocks,
model, optimizer), then repeats ``train_step`` and, at their intervals, ``log``,
``evaluate`` and ``save``, checking pause/stop between steps.

Data and masks never leave the device: blocks live there, an epoch permutation and fresh
masks are drawn there with a seeded generator, and the host reads the loss only every
``log_every`` steps. Under torchrun the ranks agree on a stop at those same log steps (one
all-reduce carries the losses and the stop flag), so no rank waits alone in an all-reduce.
The metrics buffer is the only thing shared with other threads.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer

from bertdemo.models.device import resolve_device
from bertdemo.models.embedded import tokenizer_dir
from bertdemo.pretrain import checkpoint as ckpt
from bertdemo.pretrain.blocks import Blocks, prepare_blocks
from bertdemo.pretrain.config import TrainConfig, param_count
from bertdemo.pretrain.evaluation import evaluate_heldout, predict_masks
from bertdemo.pretrain.faults import failure_message, is_out_of_memory, release_device_memory
from bertdemo.pretrain.hardware import autocast, keep_freed_memory, thread_count, use_bf16
from bertdemo.pretrain.metrics import MetricsBuffer, history, metrics_csv, restore_history
from bertdemo.pretrain.model_build import (apply_freeze, build_model, load_checkpoint_model,
                                           remove_position_embeddings)
from bertdemo.pretrain.objective import BatchMaker, PretrainObjective
from bertdemo.pretrain.optim import lr_at, make_optimizer


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


@dataclass
class RunControl:
    """Events the loop checks between steps (and evaluation between batches)."""

    stop_event: threading.Event = field(default_factory=threading.Event)
    pause_event: threading.Event = field(default_factory=threading.Event)  # set while paused
    probe_event: threading.Event = field(default_factory=threading.Event)  # set: run the probe at the next step


def _barrier(dist: DistInfo) -> None:
    if dist.world_size > 1:
        torch.distributed.barrier()


def training_device(cfg: TrainConfig, dist: DistInfo) -> torch.device:
    """The run's device (ValueError when the one asked for is missing); under torchrun each rank its own GPU."""
    device = resolve_device(cfg.system.device)
    if device.type == "cuda" and dist.world_size > 1:
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
    return device


class Trainer:
    """One run's model, optimizer, data and counters; each method is one part of the loop."""

    def __init__(self, cfg: TrainConfig, metrics: MetricsBuffer, checkpoint_dir: Path, dist: DistInfo,
                 run_info: dict, device: torch.device, control: RunControl) -> None:
        self.cfg, self.metrics, self.checkpoint_dir, self.dist = cfg, metrics, Path(checkpoint_dir), dist
        self.run_info, self.device, self.control = run_info, device, control
        metrics.update(status="preparing", device=str(device), message="Loading the tokenizer…")
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
        self.phases = cfg.seq_len_phases()  # (first step, block length); one unless a schedule is set
        phase_blocks = {length: self._blocks(length) for length in sorted({n for _, n in self.phases})}
        self.corpus_label = next(iter(phase_blocks.values())).corpus_label
        self.start_step = 0
        state: dict = {}
        if cfg.system.resume_from:
            state = ckpt.read_state(cfg.system.resume_from)
            self.start_step = int(state.get("step", 0))
            restore_history(metrics, state.get("history", {}))
            self.model = load_checkpoint_model(cfg.system.resume_from, cfg.objective.nsp)
            apply_freeze(self.model, cfg.model.train_layers, cfg.model.freeze_embeddings)
            if not cfg.model.position_embeddings:
                remove_position_embeddings(self.model)
        else:
            with torch.random.fork_rng(devices=[]):  # seeded init without touching the process's RNG
                torch.manual_seed(cfg.system.seed)
                self.model = build_model(cfg, self.tokenizer)
        run_info.setdefault("started_at", state.get("started_at", datetime.now().isoformat(timespec="seconds")))
        self.n_params = param_count(self.model)
        metrics.update(param_count=self.n_params, step=self.start_step, total_steps=cfg.optim.steps)
        self.objective = PretrainObjective(self.model).to(device).train()
        self.optimizer = make_optimizer(self.model, cfg, device)
        if cfg.system.resume_from:
            ckpt.load_optimizer_state(cfg.system.resume_from, self.optimizer)
        self.forward = self.objective
        if dist.world_size > 1:
            ids = [device.index] if device.type == "cuda" else None
            self.forward = torch.nn.parallel.DistributedDataParallel(self.objective, device_ids=ids)
        if cfg.system.compile and device.type == "cuda":
            self.forward = torch.compile(self.forward)
        self.data = {length: (torch.from_numpy(b.train[dist.rank :: dist.world_size].astype(np.int64)).to(device),
                              torch.from_numpy(b.heldout.astype(np.int64)).to(device))  # (N, T), (N_eval, T)
                     for length, b in phase_blocks.items()}
        for length, (train, _) in self.data.items():
            if len(train) < cfg.optim.batch_size:
                raise ValueError(f"The corpus has only {len(train)} training blocks of {length} tokens per "
                                 "process; lower the batch size below that or use more text.")
        self.make_batch = BatchMaker(cfg, self.tokenizer, device)
        self.bf16 = use_bf16(device, cfg.system.precision)
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(cfg.system.seed + 7919 * dist.rank + self.start_step)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.step = self.start_step
        self.saved_step = self.start_step if cfg.system.resume_from else -1
        self.seq_len = self.phase_length(self.step)
        self.train_blocks, self.heldout = self.data[self.seq_len]
        self.epoch = 0
        self.perm, self.cursor = torch.randperm(len(self.train_blocks), generator=self.generator, device=device), 0
        done = metrics.get("tokens")
        self.tokens_seen = done[-1] if done else self.start_step * cfg.optim.batch_size * self.seq_len * dist.world_size
        self.loss_sum = torch.zeros((), device=device)  # masked-LM loss summed since the last log
        self.nsp_loss_sum = torch.zeros((), device=device)  # NSP loss summed since the last log
        self.steps_since_log = 0
        self.elapsed = float(run_info.get("elapsed_s", 0.0))
        self.t_last = time.perf_counter()
        self.rate_window_s, self.rate_window_steps = 0.0, 0

    def phase_length(self, step: int) -> int:
        """The block length the schedule uses at `step`."""
        return [length for first, length in self.phases if first <= step][-1]

    def _blocks(self, seq_len: int) -> Blocks:
        """Packed blocks of the corpus; rank 0 tokenizes and caches first, the others then read the cache."""
        def progress(fraction: float, message: str) -> None:
            self.metrics.update(prepare_fraction=fraction, message=message)

        if not self.dist.is_main:
            _barrier(self.dist)
        blocks = prepare_blocks(self.cfg.data.corpus, self.tokenizer, seq_len, self.cfg.data.cache_dir,
                                self.cfg.data.max_corpus_tokens, self.cfg.data.heldout_fraction, progress)
        if self.dist.is_main:
            _barrier(self.dist)
        return blocks

    # one step ---------------------------------------------------------------------------
    def train_step(self) -> None:
        """One optimizer step on the next batch (new epoch order when the blocks run out; new masks always)."""
        cfg = self.cfg
        length = self.phase_length(self.step)
        if length != self.seq_len:  # the schedule moves to longer blocks: a new epoch over them
            previous, self.seq_len = self.seq_len, length
            self.train_blocks, self.heldout = self.data[length]
            self.cursor = len(self.train_blocks)
            self.metrics.update(message=f"Block length {previous} -> {length} at step {self.step}: position "
                                        f"embeddings {previous}-{length - 1} train only from now on.")
        if self.cursor + cfg.optim.batch_size > len(self.train_blocks):
            self.perm = torch.randperm(len(self.train_blocks), generator=self.generator, device=self.device)
            self.cursor = 0
            self.epoch += 1
        ids = self.perm[self.cursor : self.cursor + cfg.optim.batch_size]  # (B,) block indices
        batch = self.make_batch(self.train_blocks[ids], self.generator, block_ids=ids, epoch=self.epoch)
        self.cursor += cfg.optim.batch_size
        self.tokens_seen += cfg.optim.batch_size * length * self.dist.world_size
        self.lr = lr_at(self.step, cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        with autocast(self.device, self.bf16):
            out = self.forward(**batch)
        out["loss"].backward()
        if cfg.optim.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, cfg.optim.grad_clip, foreach=True)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.loss_sum += out["mlm_loss"].detach()
        if "nsp_loss" in out:
            self.nsp_loss_sum += out["nsp_loss"].detach()
        self.steps_since_log += 1
        self.step += 1

    # logging ----------------------------------------------------------------------------
    def log(self, stop_requested: bool) -> bool:
        """Record the mean losses since the last log (the one host sync per interval) and the speed.

        Returns whether any rank asked to stop: under torchrun the ranks agree here, together."""
        values = torch.stack([self.loss_sum, self.nsp_loss_sum]) / self.steps_since_log
        values = torch.cat([values, torch.tensor([float(stop_requested)], device=self.device)])
        if self.dist.world_size > 1:
            torch.distributed.all_reduce(values)
            values[:2] /= self.dist.world_size
        mlm_loss, nsp_loss, stops = values.tolist()
        check_finite_loss(mlm_loss + nsp_loss, self.step)  # before any save: a NaN model is never written
        now = time.perf_counter()
        self.rate_window_s += now - self.t_last
        self.rate_window_steps += self.steps_since_log
        self.elapsed += now - self.t_last
        self.t_last = now
        rate = self.rate_window_steps / max(self.rate_window_s, 1e-9)  # steps/s
        tokens_per_step = self.cfg.optim.batch_size * self.seq_len * self.dist.world_size
        self.metrics.log_train(self.step, mlm_loss, self.lr, nsp_loss if self.cfg.objective.nsp else None,
                               self.tokens_seen, self.elapsed)
        self.metrics.update(tokens_per_s=rate * tokens_per_step, eta_s=(self.cfg.optim.steps - self.step) / max(rate, 1e-9),
                            elapsed_s=self.elapsed)
        self.loss_sum.zero_(), self.nsp_loss_sum.zero_()
        self.steps_since_log = 0
        if self.rate_window_s > 5.0:  # the rate is over the last few seconds
            self.rate_window_s, self.rate_window_steps = 0.0, 0
        return stops > 0

    # evaluation and checkpoints ----------------------------------------------------------
    def evaluate(self, final: bool = False) -> None:
        """Held-out loss/accuracy and the probe's guesses at this step (rank 0 only). A Stop cuts an
        evaluation short, except the final one that a stopped run makes before its last checkpoint."""
        if not self.dist.is_main:
            return
        should_stop = (lambda: False) if final else self.control.stop_event.is_set
        result = evaluate_heldout(self.objective, self.heldout, self.make_batch, self.cfg, self.device, self.bf16,
                                  should_stop=should_stop)
        if result is not None:
            self.metrics.log_eval(self.step, result["loss"], result["acc"], result.get("nsp_loss"),
                                  result.get("nsp_acc"), self.tokens_seen, self.elapsed)
        self.probe()

    def probe(self) -> None:
        """The probe sentence's top-5 at each [MASK], now (rank 0 only)."""
        if not self.dist.is_main:
            return
        self.control.probe_event.clear()
        text = self.metrics.get("probe_text") or self.cfg.monitor.probe_text
        try:
            self.metrics.log_probe(self.step, predict_masks(self.model, self.tokenizer, text, self.device), text)
        except ValueError:
            pass  # the probe text was validated on input; never fail a run over it

    def save(self) -> None:
        """Write the checkpoint of this step atomically (rank 0 only, once per step)."""
        if not self.dist.is_main or self.step == self.saved_step:
            return
        if self.steps_since_log:  # losses not yet logged: check them (one host sync) before writing
            check_finite_loss((self.loss_sum + self.nsp_loss_sum).item(), self.step)
        self.run_info["elapsed_s"] = self.elapsed
        snap = self.metrics.snapshot()
        state = {**self.run_info, "step": self.step, "total_steps": self.cfg.optim.steps, "preset": self.cfg.model.preset,
                 "nsp": self.cfg.objective.nsp, "corpus": self.cfg.data.corpus, "param_count": self.n_params,
                 "history": history(snap)}
        path = ckpt.write_checkpoint(self.checkpoint_dir, self.model, self.tokenizer, self.cfg.to_dict(), state,
                                     metrics_csv(snap), self.optimizer)
        self.metrics.add_checkpoint(str(path))
        self.saved_step = self.step

    def evaluate_and_save_if_due(self) -> None:
        """At eval / checkpoint intervals (and the last step); that time is not counted as training."""
        cfg, step = self.cfg, self.step
        eval_due = step % cfg.monitor.eval_every == 0 or step == cfg.optim.steps
        save_due = bool(cfg.monitor.checkpoint_every) and step % cfg.monitor.checkpoint_every == 0 and step < cfg.optim.steps
        if eval_due:
            self.evaluate()
        if save_due:
            self.save()
        if eval_due or save_due:
            self.t_last = time.perf_counter()

    def wait_while_paused(self) -> None:
        """Block while the pause event is set (the stop event ends the wait)."""
        self.elapsed += time.perf_counter() - self.t_last
        self.metrics.update(status="paused", message="Paused.")
        while self.control.pause_event.is_set() and not self.control.stop_event.is_set():
            self.control.stop_event.wait(0.05)
        if not self.control.stop_event.is_set():
            self.metrics.update(status="running", message="Training.")
        self.t_last = time.perf_counter()


def check_finite_loss(loss: float, step: int) -> None:
    """ValueError (the run fails, its last good checkpoint kept) when the loss is NaN or infinite."""
    if not np.isfinite(loss):
        what = "NaN" if np.isnan(loss) else "infinite"
        raise ValueError(f"The loss became {what} at step {step}: lower the learning rate "
                         "(the last good checkpoint is kept).")


def run_training(
    cfg: TrainConfig,
    *,
    metrics: MetricsBuffer,
    checkpoint_dir: Path,
    control: RunControl | None = None,
    dist: DistInfo | None = None,
    run_info: dict | None = None,
    on_step: Callable[[int], None] | None = None,
) -> str:
    """Train per `cfg`, writing metrics and checkpoints; returns the final status (finished/stopped/failed).

    Every failure — a device that is missing, a corpus that cannot be read, a fault mid-run —
    ends the run with status "failed" and the reason in the metrics; earlier checkpoints stay.
    """
    control = control or RunControl()
    dist = dist or DistInfo()
    trainer = None
    device_name = str(cfg.system.device)
    try:
        cfg.validate()
        device = training_device(cfg, dist)
        device_name = str(device)
        if device.type == "cpu":
            keep_freed_memory()  # the same large tensors every step: reuse them, no page faults
        with thread_count(cfg.system.num_threads, dist.world_size, device):
            trainer = Trainer(cfg, metrics, checkpoint_dir, dist, dict(run_info or {}), device, control)
            metrics.update(status="running", message=f"Training on {trainer.corpus_label} "
                           f"({len(trainer.train_blocks):,} blocks, {'bf16 autocast' if trainer.bf16 else 'fp32'}).")
            if trainer.start_step == 0:
                trainer.evaluate()
            single = dist.world_size == 1
            while trainer.step < cfg.optim.steps:
                if single and control.stop_event.is_set():
                    break
                if single and control.pause_event.is_set():
                    trainer.wait_while_paused()
                    continue
                trainer.train_step()
                if trainer.step % cfg.monitor.log_every == 0 or trainer.step == cfg.optim.steps:
                    if trainer.log(control.stop_event.is_set()) and not single:
                        break  # every rank leaves at this same step
                metrics.update(step=trainer.step)
                trainer.evaluate_and_save_if_due()
                if control.probe_event.is_set():
                    trainer.probe()
                if on_step is not None:
                    on_step(trainer.step)
            stopped = trainer.step < cfg.optim.steps
            trainer.elapsed += time.perf_counter() - trainer.t_last
            if stopped and trainer.step > trainer.start_step and trainer.step not in metrics.get("eval_steps"):
                metrics.update(status="stopping", message="Final evaluation…")
                trainer.evaluate(final=True)
            metrics.update(status="stopping" if stopped else "running", elapsed_s=trainer.elapsed, eta_s=0.0,
                           message="Saving the final checkpoint…")
            trainer.save()
            final = "stopped" if stopped else "finished"
            metrics.update(status=final, message=f"{final.capitalize()} at step {trainer.step} of {cfg.optim.steps}.")
            return final
    except Exception as err:  # the thread must report, not die silently; earlier checkpoints stay
        out_of_memory = is_out_of_memory(err)
        if out_of_memory:
            trainer = None  # drop the run's tensors, then hand the cached memory back for the other tabs
            release_device_memory()
        metrics.update(status="failed", message=failure_message(err, cfg, device_name))
        if not isinstance(err, ValueError) and not out_of_memory:
            traceback.print_exc()
        if threading.current_thread() is threading.main_thread():
            raise
        return "failed"

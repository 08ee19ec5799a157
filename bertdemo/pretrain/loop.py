"""The training loop shared by the app's run thread and the headless CLI (also under torchrun).

Data and masks never leave the device: blocks live there, an epoch permutation and fresh
masks are drawn there with a seeded generator, and the host reads the loss only every
``log_every`` steps. Pause/stop are checked between steps; the metrics buffer is the only
thing shared with other threads.
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

from bertdemo.embedded import tokenizer_dir
from bertdemo.models import resolve_device
from bertdemo.pretrain import checkpoint as ckpt
from bertdemo.pretrain.blocks import prepare_blocks
from bertdemo.pretrain.config import TrainConfig, param_count
from bertdemo.pretrain.engine import (BatchMaker, PretrainObjective, apply_freeze, autocast, build_model, cpu_threads,
                                      evaluate, load_model, lr_at, make_optimizer, predict_masks,
                                      use_bf16)
from bertdemo.pretrain.metrics import MetricsBuffer, history, metrics_csv, restore_history


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
    """Events the loop checks between steps."""

    stop_event: threading.Event = field(default_factory=threading.Event)
    pause_event: threading.Event = field(default_factory=threading.Event)  # set while paused


def _barrier(dist: DistInfo) -> None:
    if dist.world_size > 1:
        torch.distributed.barrier()


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
    """Train per `cfg`, writing metrics and checkpoints; returns the final status (finished/stopped/failed)."""
    control = control or RunControl()
    dist = dist or DistInfo()
    run_info = dict(run_info or {})
    device = resolve_device(cfg.device)
    if device.type == "cuda" and dist.world_size > 1:
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
    prev_threads = torch.get_num_threads()
    if device.type == "cpu":  # process-global: restored in `finally`
        torch.set_num_threads(cpu_threads(cfg.num_threads, dist.world_size))
    state: dict = {}
    try:
        cfg.validate()
        metrics.update(status="preparing", device=str(device), message="Loading the tokenizer…")
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))

        def progress(fraction: float, message: str) -> None:
            metrics.update(prepare_fraction=fraction, message=message)

        if not dist.is_main:
            _barrier(dist)  # rank 0 tokenizes and caches first
        blocks = prepare_blocks(cfg.corpus, tokenizer, cfg.seq_len, cfg.cache_dir, cfg.max_corpus_tokens,
                                cfg.heldout_fraction, progress)
        if dist.is_main:
            _barrier(dist)
        start_step = 0
        if cfg.resume_from:
            state = ckpt.read_state(cfg.resume_from)
            start_step = int(state.get("step", 0))
            restore_history(metrics, state.get("history", {}))
            model = load_model(cfg.resume_from, cfg.nsp)
            apply_freeze(model, cfg.train_layers, cfg.freeze_embeddings)
        else:
            with torch.random.fork_rng(devices=[]):  # seeded init without touching the process's RNG
                torch.manual_seed(cfg.seed)
                model = build_model(cfg, tokenizer)
        run_info.setdefault("started_at", state.get("started_at", datetime.now().isoformat(timespec="seconds")))
        n_params = param_count(model)
        metrics.update(param_count=n_params, step=start_step, total_steps=cfg.steps)
        objective = PretrainObjective(model).to(device).train()
        optimizer = make_optimizer(model, cfg, device)
        if cfg.resume_from:
            ckpt.load_optimizer_state(cfg.resume_from, optimizer)
        forward = objective
        if dist.world_size > 1:
            ids = [device.index] if device.type == "cuda" else None
            forward = torch.nn.parallel.DistributedDataParallel(objective, device_ids=ids)
        if cfg.compile and device.type == "cuda":
            forward = torch.compile(forward)
        train = torch.from_numpy(blocks.train[dist.rank :: dist.world_size].astype(np.int64)).to(device)  # (N, T)
        heldout = torch.from_numpy(blocks.heldout.astype(np.int64)).to(device)  # (N_eval, T)
        if len(train) < cfg.batch_size:
            raise ValueError(f"The corpus has only {len(train)} training blocks per process; "
                             f"lower the batch size below that or use more text.")
        make_batch = BatchMaker(cfg, tokenizer, device)
        bf16 = use_bf16(device, cfg.precision)
        generator = torch.Generator(device=device)
        generator.manual_seed(cfg.seed + 7919 * dist.rank + start_step)
        params = [p for p in model.parameters() if p.requires_grad]

        saved_step = start_step if cfg.resume_from else -1

        def save(step: int) -> None:
            nonlocal saved_step
            if not dist.is_main or step == saved_step:
                return
            snap = metrics.snapshot()
            state_now = {**run_info, "step": step, "total_steps": cfg.steps, "preset": cfg.preset,
                         "nsp": cfg.nsp, "corpus": cfg.corpus, "param_count": n_params, "history": history(snap)}
            path = ckpt.write_checkpoint(checkpoint_dir, model, tokenizer, cfg.to_dict(), state_now,
                                         metrics_csv(snap), optimizer)
            metrics.add_checkpoint(str(path))
            saved_step = step

        def run_eval(step: int) -> None:
            if not dist.is_main:
                return
            result = evaluate(objective, heldout, make_batch, cfg, device, bf16)
            metrics.log_eval(step, result["loss"], result["acc"], result.get("nsp_loss"), result.get("nsp_acc"))
            text = metrics.get("probe_text") or cfg.probe_text
            try:
                metrics.log_probe(step, predict_masks(model, tokenizer, text, device))
            except ValueError:
                pass  # probe text was validated on input; never fail a run over it

        precision = "bf16 autocast" if bf16 else "fp32"
        metrics.update(status="running", message=f"Training on {blocks.corpus_label} ({len(train):,} blocks, "
                                                 f"{precision}).")
        if start_step == 0 and dist.is_main:
            run_eval(0)
        tokens_per_step = cfg.batch_size * cfg.seq_len * dist.world_size
        loss_acc = torch.zeros((), device=device)
        nsp_acc = torch.zeros((), device=device)
        n_acc = 0
        step = start_step
        perm, cursor = torch.randperm(len(train), generator=generator, device=device), 0
        elapsed = float(run_info.get("elapsed_s", 0.0))
        t_last = time.perf_counter()
        t_interval, steps_interval = 0.0, 0
        while step < cfg.steps:
            if control.stop_event.is_set():
                break
            if control.pause_event.is_set():
                elapsed += time.perf_counter() - t_last
                metrics.update(status="paused", message="Paused.")
                while control.pause_event.is_set() and not control.stop_event.is_set():
                    control.stop_event.wait(0.05)
                if not control.stop_event.is_set():
                    metrics.update(status="running", message="Training.")
                t_last = time.perf_counter()
                continue
            if cursor + cfg.batch_size > len(train):  # new epoch: new order (and new masks, always)
                perm, cursor = torch.randperm(len(train), generator=generator, device=device), 0
            batch = make_batch(train[perm[cursor : cursor + cfg.batch_size]], generator)
            cursor += cfg.batch_size
            lr = lr_at(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with autocast(device, bf16):
                out = forward(**batch)
            out["loss"].backward()
            if cfg.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip, foreach=True)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loss_acc += out["mlm_loss"].detach()
            if "nsp_loss" in out:
                nsp_acc += out["nsp_loss"].detach()
            n_acc += 1
            step += 1
            if step % cfg.log_every == 0 or step == cfg.steps:
                values = torch.stack([loss_acc, nsp_acc]) / n_acc
                if dist.world_size > 1:
                    torch.distributed.all_reduce(values)
                    values /= dist.world_size
                mlm_loss, nsp_loss = values.tolist()  # the one host sync per log interval
                now = time.perf_counter()
                t_interval += now - t_last
                steps_interval += n_acc
                elapsed += now - t_last
                t_last = now
                rate = steps_interval / max(t_interval, 1e-9)
                metrics.log_train(step, mlm_loss, lr, nsp_loss if cfg.nsp else None)
                metrics.update(tokens_per_s=rate * tokens_per_step, eta_s=(cfg.steps - step) / max(rate, 1e-9),
                               elapsed_s=elapsed)
                loss_acc.zero_(), nsp_acc.zero_()
                n_acc = 0
                if t_interval > 5.0:  # rate over the last few seconds
                    t_interval, steps_interval = 0.0, 0
            metrics.update(step=step)
            if step % cfg.eval_every == 0 or step == cfg.steps or (
                cfg.checkpoint_every and step % cfg.checkpoint_every == 0
            ):
                if step % cfg.eval_every == 0 or step == cfg.steps:
                    run_eval(step)
                if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and step < cfg.steps:
                    run_info["elapsed_s"] = elapsed
                    save(step)
                t_last = time.perf_counter()  # evaluation and saving are not training time
            if on_step is not None:
                on_step(step)
        stopped = step < cfg.steps
        elapsed += time.perf_counter() - t_last
        run_info["elapsed_s"] = elapsed
        metrics.update(status="stopping" if stopped else "running", elapsed_s=elapsed, eta_s=0.0,
                       message="Saving the final checkpoint…")
        save(step)
        final = "stopped" if stopped else "finished"
        metrics.update(status=final, message=f"{final.capitalize()} at step {step} of {cfg.steps}.")
        return final
    except Exception as err:  # the thread must report, not die silently; earlier checkpoints stay
        metrics.update(status="failed", message=f"{type(err).__name__}: {err}")
        if not isinstance(err, ValueError):
            traceback.print_exc()
        if threading.current_thread() is threading.main_thread():
            raise
        return "failed"
    finally:
        if device.type == "cpu":
            torch.set_num_threads(prev_threads)


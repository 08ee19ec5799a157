"""What a pretraining run may ask of this machine: public-mode caps, and a memory estimate for every mode.

Public caps (defaults sized for a 2-vCPU Space) keep one visitor's run from starving the others.
The memory estimate refuses, before anything is allocated, a run the machine cannot hold:

    parameters × 16 bytes (fp32 weights, gradients, AdamW's two moments)
  + batch × block length × hidden × layers × 180 bytes (activations kept for the backward pass)
  + batch × block length × 30,522 × 4 bytes × 15 % (the vocabulary logits of the masked positions)
  + 300 MB (the Python process, torch, the tokenizer)

The 180 is calibrated on the measured ~180 MB per 512-token sequence of bert-small (4 layers,
hidden 512): 512 × 512 × 4 × 180 B ≈ 189 MB.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from bertdemo import storage
from bertdemo.pretrain.config import VOCAB_SIZE, TrainConfig, param_count

ACTIVATION_BYTES = 180  # per (token × hidden unit × layer), kept for backward
STATE_BYTES_PER_PARAM = 16  # weights + gradients + AdamW m and v, fp32
BASE_BYTES = 300 * 2**20
HEADROOM = 0.8  # never plan to use more than this share of the memory available now
CHECKPOINT_BYTES_PER_PARAM = 12  # fp32 weights + AdamW m and v on disk
CHECKPOINT_EXTRA_BYTES = 2 * 10**6  # tokenizer, configs, metrics


@dataclass(frozen=True)
class Limits:
    """Caps on a public server's runs."""

    max_params: int = 12_000_000
    max_steps: int = 5000
    max_tokens_per_step: int = 8192  # block length × batch size
    max_minutes: float = 20.0  # wall time; the run is stopped (and saved) when it is reached

    @property
    def max_seconds(self) -> float:
        return self.max_minutes * 60.0


def check_public(cfg: TrainConfig, limits: Limits) -> None:
    """ValueError with a clear message when a run exceeds a public server's caps."""
    n_params = param_count(cfg)
    if n_params > limits.max_params:
        raise ValueError(f"This model has {n_params:,} parameters; this public server trains models up to "
                         f"{limits.max_params:,}. Choose a smaller size (bert-tiny or bert-mini).")
    if cfg.optim.steps > limits.max_steps:
        raise ValueError(f"{cfg.optim.steps:,} steps is more than this public server allows ({limits.max_steps:,}).")
    tokens = cfg.max_seq_len() * cfg.optim.batch_size
    if tokens > limits.max_tokens_per_step:
        raise ValueError(f"Block length × batch size is {cfg.max_seq_len()} × {cfg.optim.batch_size} = {tokens:,} "
                         f"tokens per step; this public server allows {limits.max_tokens_per_step:,}. "
                         "Lower the batch size or the block length.")


def estimate_memory_bytes(cfg: TrainConfig) -> int:
    """Rough peak memory of a run (see the module docstring for the formula)."""
    layers, hidden, _, _ = cfg.model_shape()
    tokens = cfg.optim.batch_size * cfg.max_seq_len()
    activations = tokens * hidden * layers * ACTIVATION_BYTES
    logits = int(tokens * VOCAB_SIZE * 4 * cfg.objective.mlm_probability)
    return param_count(cfg) * STATE_BYTES_PER_PARAM + activations + logits + BASE_BYTES


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation now: MemAvailable of /proc/meminfo, else free pages (None if unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def checkpoint_bytes(cfg: TrainConfig) -> int:
    """Disk one checkpoint of this run takes (weights and optimizer state)."""
    return param_count(cfg) * CHECKPOINT_BYTES_PER_PARAM + CHECKPOINT_EXTRA_BYTES


def check_disk(cfg: TrainConfig, runs_dir: str | Path, keep: int) -> int:
    """Disk the run's ``keep`` checkpoints need; ValueError when the server's disk budget or the free
    space of ``runs_dir``'s disk cannot hold them (in every mode)."""
    need = checkpoint_bytes(cfg) * max(1, keep)
    storage.check_disk_budget(adding=need)
    folder = Path(runs_dir)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return need
    if need > free:
        raise ValueError(f"This run's checkpoints need about {storage.size_text(need)} of disk, but only "
                         f"{storage.size_text(free)} is free. Choose a smaller model, or delete earlier runs.")
    return need


def check_memory(cfg: TrainConfig, available: int | None = None, processes: int = 1) -> int:
    """The run's memory estimate (``processes`` ranks of it on this machine); ValueError when it will not
    fit in the memory available now."""
    need = estimate_memory_bytes(cfg) * max(1, processes)
    available = available_memory_bytes() if available is None else available
    if available is not None and need > available * HEADROOM:
        raise ValueError(f"This run needs about {need / 2**30:.1f} GB of memory, but only {available / 2**30:.1f} GB "
                         "is free on this machine. Lower the batch size, the block length or the model size.")
    return need

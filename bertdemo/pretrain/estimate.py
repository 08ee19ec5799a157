"""How long a run will take on this machine, before it starts.

A run's work is counted in floating-point operations per trained token (forward + backward):

    6 × (encoder weights: layers × (4·hidden² + 2·hidden·ffn))      the dense layers
  + 12 × layers × hidden × block length                              attention scores and mixing
  + 6 × hidden × 30,522 × masking rate                               the vocabulary logits, masked tokens only

plus held-out evaluations (a forward pass: a third of that per token). The machine's speed in
operations per second comes from the last run this process measured (its tokens/s times its
cost per token) or, before any run, from a quick calibration: a few steps of a small BERT through
the run's own training code.
"""

from __future__ import annotations

import threading
import time

from bertdemo.pretrain.config import VOCAB_SIZE, TrainConfig

CALIBRATION_STEPS = 3
_lock = threading.Lock()
_rates: dict[str, float] = {}  # device type ("cpu", "cuda") -> operations per second it sustains in training


def flops_per_token(cfg: TrainConfig) -> float:
    """Training operations per token (forward + backward) of this run's model at its longest block."""
    layers, hidden, _, ffn = cfg.model_shape()
    dense = layers * (4 * hidden * hidden + 2 * hidden * ffn)
    attention = 2 * layers * hidden * cfg.max_seq_len()
    logits = hidden * VOCAB_SIZE * cfg.objective.mlm_probability
    return 6.0 * (dense + attention + logits)


def work_flops(cfg: TrainConfig, steps: int | None = None) -> float:
    """Operations of ``steps`` (default: all) training steps and the evaluations due in them."""
    steps = cfg.optim.steps if steps is None else steps
    tokens_per_step = cfg.optim.batch_size * cfg.max_seq_len()
    evals = steps // cfg.monitor.eval_every + 1
    eval_tokens = evals * cfg.monitor.eval_batches * tokens_per_step
    return flops_per_token(cfg) * (steps * tokens_per_step + eval_tokens / 3.0)


def record(cfg: TrainConfig, tokens_per_s: float, device: str = "cpu") -> None:
    """Remember the speed a run measured on this machine's ``device`` (used for the next estimates)."""
    if tokens_per_s > 0:
        with _lock:
            _rates[device.split(":")[0]] = tokens_per_s * flops_per_token(cfg)


def run_device(cfg: TrainConfig) -> str:
    """The device type the run will train on ("cpu" on ZeroGPU and where there is no GPU)."""
    from bertdemo.models.device import resolve_device

    return resolve_device(cfg.system.device).type


def machine_rate(device: str = "cpu") -> float:
    """Operations per second on ``device``: the last run's measured speed, else a calibration (once)."""
    with _lock:
        if device not in _rates:
            _rates[device] = calibrate(device)
        return _rates[device]


def calibrate(device_type: str = "cpu") -> float:
    """Time a few steps of the run's own training code (objective, masking, optimizer, precision) on a
    small BERT on ``device_type``, with the threads a run gets; returns operations per second."""
    import torch
    from transformers import AutoTokenizer

    from bertdemo.models.embedded import tokenizer_dir
    from bertdemo.pretrain.hardware import autocast, thread_count, use_bf16
    from bertdemo.pretrain.model_build import build_model
    from bertdemo.pretrain.objective import BatchMaker, PretrainObjective
    from bertdemo.pretrain.optim import make_optimizer

    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                                intermediate_size=512, seq_len=128, batch_size=16, device=device_type)
    device = torch.device(device_type)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    with thread_count(cfg.system.num_threads, 1, device), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = build_model(cfg, tokenizer)
        objective = PretrainObjective(model).to(device).train()
        optimizer = make_optimizer(model, cfg, device)
        make_batch, bf16 = BatchMaker(cfg, tokenizer, device), use_bf16(device, cfg.system.precision)
        generator = torch.Generator(device=device).manual_seed(0)
        blocks = torch.randint(1000, VOCAB_SIZE, (cfg.optim.batch_size, cfg.data.seq_len), generator=generator,
                               device=device)

        def step() -> None:
            with autocast(device, bf16):
                out = objective(**make_batch(blocks, generator))
            out["loss"].backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        step()  # warm-up: allocations, kernel choice
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        sync()
        started = time.perf_counter()
        for _ in range(CALIBRATION_STEPS):
            step()
        sync()
        elapsed = time.perf_counter() - started
    tokens = CALIBRATION_STEPS * cfg.optim.batch_size * cfg.data.seq_len
    return tokens * flops_per_token(cfg) / max(elapsed, 1e-6)


def estimate_seconds(cfg: TrainConfig, steps: int | None = None, rate: float | None = None) -> float:
    """Wall time of the run (or of ``steps`` of it) on this machine, on the device it will train on."""
    return work_flops(cfg, steps) / (rate or machine_rate(run_device(cfg)))


def duration_text(seconds: float) -> str:
    """e.g. "about 40 s", "about 12 min", "about 3.5 h"."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def check_time(cfg: TrainConfig, max_seconds: float, rate: float | None = None) -> float:
    """The run's time estimate; ValueError when it exceeds ``max_seconds`` (a public server's cap),
    naming the number of steps that would fit."""
    seconds = estimate_seconds(cfg, rate=rate)
    if seconds > max_seconds:
        per_step = seconds / max(cfg.optim.steps, 1)
        fit = int(max_seconds / per_step)
        raise ValueError(f"This run would take {duration_text(seconds)} here; this public server stops runs after "
                         f"{max_seconds / 60:g} minutes. Lower Steps to about {fit:,}, or the batch size, "
                         "the block length or the model size.")
    return seconds

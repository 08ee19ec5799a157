"""How fast this machine trains and evaluates, timed through the run's own code on a small BERT: the
speed book's calibrations (:class:`bertdemo.pretrain.budget.SpeedBook`) before any run has measured one."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import nn
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from bertdemo.models.embedded import tokenizer_dir
from bertdemo.pretrain import budget
from bertdemo.pretrain.config import VOCAB_SIZE, TrainConfig
from bertdemo.pretrain.evaluation import TOKENS_PER_BATCH, answer_questions
from bertdemo.pretrain.hardware import autocast, thread_count, use_bf16
from bertdemo.pretrain.heldout import heldout_questions
from bertdemo.pretrain.model import BatchMaker, PretrainObjective, build_model
from bertdemo.pretrain.trainer import make_optimizer

CALIBRATION_SHAPE = dict(preset="custom", num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                         intermediate_size=512, seq_len=128, batch_size=16)  # a small BERT: a second or two


@contextlib.contextmanager
def _calibration_model(
        device_type: str) -> Iterator[tuple[TrainConfig, torch.device, PreTrainedTokenizerBase, nn.Module]]:
    """The calibrations' small seeded BERT on ``device_type``, under the threads a run gets."""
    cfg = TrainConfig.from_flat(**CALIBRATION_SHAPE, device=device_type)
    device = torch.device(device_type)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    with thread_count(cfg.system.num_threads, 1, device), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        yield cfg, device, tokenizer, build_model(cfg, tokenizer)


def calibrate(device_type: str = "cpu") -> float:
    """Time a few steps of the run's own training code (objective, masking, optimizer, precision) on a
    small BERT on ``device_type``, with the threads a run gets; returns operations per second."""
    with _calibration_model(device_type) as (cfg, device, tokenizer, model):
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

        elapsed = _timed(step, device, budget.CALIBRATION_STEPS)
    tokens = budget.CALIBRATION_STEPS * cfg.optim.batch_size * cfg.data.seq_len
    return tokens * budget.flops_per_token(cfg) / max(elapsed, 1e-6)


def calibrate_evaluation(device_type: str = "cpu") -> float:
    """Time the run's own held-out evaluation (:func:`answer_questions`: every asked position scored over the
    whole vocabulary, its rank counted) on the calibration model and one evaluation batch of random tokens;
    returns operations per second as :func:`bertdemo.pretrain.budget.evaluation_flops` counts them. An
    evaluation does less per operation than a training step (full-vocabulary ranks, small batches)."""
    with _calibration_model(device_type) as (cfg, device, tokenizer, model):
        model.to(device)
        rng = np.random.default_rng(0)
        blocks = rng.integers(1000, VOCAB_SIZE, (TOKENS_PER_BATCH // cfg.data.seq_len, cfg.data.seq_len))
        q = heldout_questions(blocks, tokenizer.all_special_ids, tokenizer.mask_token_id)
        questions = (torch.from_numpy(q.input_ids).to(device), torch.from_numpy(q.labels).to(device))
        bf16 = use_bf16(device, cfg.system.precision)
        elapsed = _timed(lambda: answer_questions(model, questions, device, bf16), device, 1)
    return TOKENS_PER_BATCH * budget.flops_per_token(cfg) / 3.0 / max(elapsed, 1e-6)


def _timed(work: Callable[[], object], device: torch.device, repeats: int) -> float:
    """Seconds ``repeats`` calls of ``work`` take after one warm-up call (allocations, kernel choice)."""
    work()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    started = time.perf_counter()
    for _ in range(repeats):
        work()
    sync()
    return time.perf_counter() - started

"""The optimizer and its schedule: AdamW with weight decay on matrices only, linear warmup then
linear decay to zero.
"""

from __future__ import annotations

import torch
from torch import nn

from bertdemo.pretrain.config import TrainConfig


def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW, weight decay on matrices only (not biases / LayerNorm); the fused kernel (one pass over
    each parameter) on CUDA and CPU, where the multi-tensor form would run op by op."""
    params = {id(p): p for p in model.parameters() if p.requires_grad}.values()  # tied weights once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    extra = {"fused": True} if device.type in ("cuda", "cpu") else {"foreach": True}
    return torch.optim.AdamW(groups, lr=cfg.optim.lr, betas=(0.9, 0.999), eps=1e-8, **extra)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to cfg.optim.lr over warmup_steps, then linear decay to 0 at cfg.optim.steps."""
    if step < cfg.optim.warmup_steps:
        return cfg.optim.lr * (step + 1) / cfg.optim.warmup_steps
    remaining = max(1, cfg.optim.steps - cfg.optim.warmup_steps)
    return cfg.optim.lr * max(0.0, 1.0 - (step - cfg.optim.warmup_steps) / remaining)

"""The masked-LM step's speed-ups change no number: the last layer at the predicted positions only
(its forward is tested against the full encoder in tests/test_partial_forward.py), the fused AdamW
on the CPU, and the allocator setting."""

from __future__ import annotations

import ctypes
import sys

import pytest
import torch

from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.hardware import keep_freed_memory
from bertdemo.pretrain.model import PretrainObjective
from bertdemo.pretrain.trainer import make_optimizer
from tests.helpers import masked_blocks, tiny_pretrain_bert


@pytest.mark.parametrize("fused_ce", [True, False])
def test_sparse_training_step_has_the_dense_loss_and_gradients(fused_ce: bool) -> None:
    input_ids, labels, positions = masked_blocks()
    results = []
    for sparse in (True, False):
        model = tiny_pretrain_bert(2)  # dropout 0: the two paths must agree number for number
        objective = PretrainObjective(model, fused_ce=fused_ce, sparse_encoder=sparse).train()
        loss = objective(input_ids=input_ids, labels=labels, positions=positions)["loss"]
        loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (loss_s, grads_s), (loss_d, grads_d) = results
    torch.testing.assert_close(loss_s, loss_d, rtol=1e-5, atol=1e-6)
    assert grads_s.keys() == grads_d.keys()
    assert "bert.encoder.layer.1.attention.self.query.weight" in grads_s
    for name in grads_d:
        torch.testing.assert_close(grads_s[name], grads_d[name], rtol=1e-4, atol=1e-6, msg=name)


def test_cpu_adamw_is_the_fused_kernel_with_the_same_update() -> None:
    cfg = TrainConfig.from_flat(lr=1e-2, weight_decay=0.1)
    fused_model, plain_model = tiny_pretrain_bert(1), tiny_pretrain_bert(1)
    fused = make_optimizer(fused_model, cfg, torch.device("cpu"))
    assert fused.defaults["fused"] is True
    plain = torch.optim.AdamW([{"params": g["params"], "weight_decay": g["weight_decay"]}
                               for g in make_optimizer(plain_model, cfg, torch.device("cpu")).param_groups],
                              lr=1e-2, betas=(0.9, cfg.optim.adam_beta2), foreach=False)
    input_ids, labels, positions = masked_blocks()
    for model, opt in ((fused_model, fused), (plain_model, plain)):
        for _ in range(3):
            PretrainObjective(model).train()(input_ids=input_ids, labels=labels, positions=positions)["loss"].backward()
            opt.step()
            opt.zero_grad()
    compared = 0
    for (name, a), b in zip(fused_model.named_parameters(), plain_model.parameters()):
        if name.endswith("key.bias"):  # its true gradient is 0 (softmax ignores it): Adam amplifies rounding
            continue
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
        compared += 1
    assert compared == len(list(plain_model.parameters())) - 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_is_accepted_by_glibc() -> None:
    try:
        ctypes.CDLL("libc.so.6").gnu_get_libc_version  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc")
    assert keep_freed_memory() is True
    assert keep_freed_memory() is True  # idempotent

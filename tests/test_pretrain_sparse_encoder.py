"""The masked-LM step's speed-ups change no number: the last layer at the predicted positions only,
the fused AdamW on the CPU, and the allocator setting."""

from __future__ import annotations

import ctypes
import sys

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.model import PretrainObjective, encode_at
from bertdemo.pretrain.trainer import keep_freed_memory, make_optimizer


def _model(layers: int, dropout: float = 0.0) -> BertForMaskedLM:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    return BertForMaskedLM(config)


def _batch(B: int = 3, T: int = 20, k: int = 5):
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, 100, (B, T), generator=g)
    positions = torch.rand((B, T), generator=g).topk(k, dim=1).indices  # (B, k)
    labels = torch.full((B, T), -100).scatter(1, positions, torch.randint(5, 100, (B, k), generator=g))
    return input_ids, labels, positions


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_last_layer_at_the_positions_equals_the_full_encoder(layers: int) -> None:
    model = _model(layers).eval()
    input_ids, _, positions = _batch()
    token_type_ids = (torch.arange(20) >= 9).long().expand(3, 20)
    with torch.no_grad():
        full = model.bert(input_ids=input_ids, token_type_ids=token_type_ids).last_hidden_state  # (B, T, H)
        sparse = encode_at(model.bert, input_ids, positions, token_type_ids)  # (B, k, H)
    expected = full.gather(1, positions.unsqueeze(-1).expand(-1, -1, 32))
    assert sparse.shape == (3, 5, 32)
    torch.testing.assert_close(sparse, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fused_ce", [True, False])
def test_sparse_training_step_has_the_dense_loss_and_gradients(fused_ce: bool) -> None:
    input_ids, labels, positions = _batch()
    results = []
    for sparse in (True, False):
        model = _model(2)  # dropout 0: the two paths must agree number for number
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


def test_dropout_still_applies_in_the_sparse_last_layer() -> None:
    model = _model(1, dropout=0.5).train()
    model.bert.embeddings.eval()  # the only layer is the sparse last one: its dropout alone is left
    input_ids, _, positions = _batch()
    torch.manual_seed(0)
    a = encode_at(model.bert, input_ids, positions)
    torch.manual_seed(1)
    b = encode_at(model.bert, input_ids, positions)
    assert not torch.allclose(a, b)
    model.eval()
    torch.testing.assert_close(encode_at(model.bert, input_ids, positions), encode_at(model.bert, input_ids, positions))


def test_cpu_adamw_is_the_fused_kernel_with_the_same_update() -> None:
    cfg = TrainConfig.from_flat(lr=1e-2, weight_decay=0.1)
    fused_model, plain_model = _model(1), _model(1)
    fused = make_optimizer(fused_model, cfg, torch.device("cpu"))
    assert fused.defaults["fused"] is True
    plain = torch.optim.AdamW([{"params": g["params"], "weight_decay": g["weight_decay"]}
                               for g in make_optimizer(plain_model, cfg, torch.device("cpu")).param_groups],
                              lr=1e-2, foreach=False)
    input_ids, labels, positions = _batch()
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

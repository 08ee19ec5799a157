"""Helpers the tests share (imported as ``from tests.helpers import ...``; fixtures live in conftest.py)."""

from __future__ import annotations

import socket
import time
from typing import Callable

import torch
from transformers import BertConfig, BertForMaskedLM


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.002,
               what: str | None = None) -> None:
    """Poll ``predicate`` until it is true; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            name = what or getattr(predicate, "__name__", repr(predicate))
            raise AssertionError(f"timed out after {timeout:g} s waiting for {name}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_bert_config(**overrides):
    """A 2-layer, hidden-32 BERT over the full uncased vocabulary (max 64 positions)."""
    cfg = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=64)
    cfg.update(overrides)
    return BertConfig(**cfg)


def tiny_run_config(corpus: str, tmp_path, **overrides):
    """A one-layer, hidden-32 pretraining run on CPU that trains in about a second."""
    from bertdemo.pretrain.config import TrainConfig

    base = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus=corpus, seq_len=32, batch_size=8, steps=20, lr=3e-3, warmup_steps=2, log_every=5,
                eval_every=10, eval_batches=2, checkpoint_every=0, cache_dir=str(tmp_path / "cache"),
                runs_dir=str(tmp_path), device="cpu", num_threads=1)
    base.update(overrides)
    return TrainConfig.from_flat(**base)


def manual_logits(model: BertForMaskedLM, ids, mask, off: set[tuple[int, int]]) -> torch.Tensor:
    """BERT's forward written out from the weights, with the heads in ``off`` multiplied by 0."""
    bert = model.bert
    h = bert.embeddings(input_ids=ids)  # (B, S, D)
    b, s, d = h.shape
    n_heads = model.config.num_attention_heads
    hd = d // n_heads
    additive = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min  # (B, 1, 1, S)
    for i, layer in enumerate(bert.encoder.layer):
        sa = layer.attention.self
        q, k, v = (lin(h).view(b, s, n_heads, hd).transpose(1, 2) for lin in (sa.query, sa.key, sa.value))
        probs = ((q @ k.transpose(-1, -2)) / hd**0.5 + additive).softmax(-1)  # (B, H, S, S)
        for layer_idx, head in off:
            if layer_idx == i:
                probs[:, head] = 0
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, d)
        attn = layer.attention.output(ctx, h)
        h = layer.output(layer.intermediate(attn), attn)
    return model.cls(h)


def tiny_pretrain_bert(layers: int, dropout: float = 0.0) -> BertForMaskedLM:
    """A 100-word, hidden-32 BertForMaskedLM as pretraining builds it (transformers' own SDPA attention)."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    return BertForMaskedLM(config)


def masked_blocks(B: int = 3, T: int = 20, k: int = 5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids (B, T), labels (B, T) -100 but at the positions, positions (B, k)) for that tiny BERT."""
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, 100, (B, T), generator=g)
    positions = torch.rand((B, T), generator=g).topk(k, dim=1).indices  # (B, k)
    labels = torch.full((B, T), -100).scatter(1, positions, torch.randint(5, 100, (B, k), generator=g))
    return input_ids, labels, positions

"""Helpers the tests share (imported as ``from tests.helpers import ...``; fixtures live in conftest.py)."""

from __future__ import annotations

import socket
import time
from typing import Callable


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.01,
               what: str = "the condition") -> None:
    """Poll ``predicate`` until it is true; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_bert_config(**overrides):
    """A 2-layer, hidden-32 BERT over the full uncased vocabulary (max 64 positions)."""
    from transformers import BertConfig

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

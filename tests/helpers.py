"""Helpers shared by test modules (import as ``from tests.helpers import ...``; never from conftest)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from transformers import BertConfig

from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain.config import TrainConfig


def wait_until(predicate: Callable[[], object], timeout: float = 60.0, interval: float = 0.02,
               message: Callable[[], str] | str = "") -> None:
    """Poll ``predicate`` until it is true; AssertionError after ``timeout`` seconds (never hangs)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout:g} s: {message() if callable(message) else message}")
        time.sleep(interval)


def tiny_bert_config(**overrides) -> BertConfig:
    """A 2-layer, hidden-32 BERT over the full uncased vocabulary."""
    cfg = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=64)
    cfg.update(overrides)
    return BertConfig(**cfg)


def wiki_corpus_file(folder: Path, n_docs: int = 200) -> str:
    """``n_docs`` embedded Wikipedia summaries as a .jsonl corpus file in ``folder``."""
    path = Path(folder) / "wiki.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:n_docs]), encoding="utf-8")
    return str(path)


def tiny_run_config(corpus: str, tmp_path: Path, **overrides) -> TrainConfig:
    """A one-layer, hidden-32 pretraining run on CPU that trains in about a second (runs in tmp_path)."""
    base = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus=corpus, seq_len=32, batch_size=8, steps=20, lr=3e-3, warmup_steps=2, log_every=5,
                eval_every=10, eval_batches=2, checkpoint_every=0, cache_dir=str(tmp_path / "cache"),
                runs_dir=str(tmp_path), device="cpu", num_threads=1)
    base.update(overrides)
    return TrainConfig.from_flat(**base)


class FakeClock:
    """A monotonic clock a test moves by hand (``clock.now += 60``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

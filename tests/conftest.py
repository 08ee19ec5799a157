"""Shared fixtures: the embedded tokenizer, tiny masked-LMs built in the test, a small corpus file and
a tiny pretraining config (no network)."""

from __future__ import annotations

import json
import os

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from bertdemo.models import embedded
from bertdemo.pretrain.config import TrainConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded uncased WordPiece tokenizer (ids identical to bert-base-uncased)."""
    return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))


def tiny_bert_config(**overrides) -> BertConfig:
    """A 2-layer, hidden-32 BERT over the full uncased vocabulary."""
    cfg = dict(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )
    cfg.update(overrides)
    return BertConfig(**cfg)


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, tokenizer):
    """A tiny BertForMaskedLM + tokenizer saved as a normal model folder (max 64 positions)."""
    torch.manual_seed(0)
    model = BertForMaskedLM(tiny_bert_config())
    path = tmp_path_factory.mktemp("tiny-mlm")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_loaded(tiny_mlm_dir):
    """The tiny model loaded through the app's own loader."""
    from bertdemo.models.store import load_masked_lm

    return load_masked_lm(str(tiny_mlm_dir), "cpu")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> str:
    """200 of the embedded Wikipedia summaries as a .jsonl corpus file (one {"text": ...} per line)."""
    path = tmp_path_factory.mktemp("corpus") / "wiki200.jsonl"
    path.write_text("\n".join(json.dumps({"text": t}) for t in embedded.wiki_summaries()[:200]), encoding="utf-8")
    return str(path)


def tiny_run_config(corpus: str, tmp_path, **overrides) -> TrainConfig:
    """A one-layer, hidden-32 pretraining run on CPU that trains in about a second."""
    base = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus=corpus, seq_len=32, batch_size=8, steps=20, lr=3e-3, warmup_steps=2, log_every=5,
                eval_every=10, eval_batches=2, checkpoint_every=0, cache_dir=str(tmp_path / "cache"),
                runs_dir=str(tmp_path), device="cpu", num_threads=1)
    base.update(overrides)
    return TrainConfig.from_flat(**base)

"""Shared fixtures: the embedded tokenizer and tiny masked-LMs built in the test (no network)."""

from __future__ import annotations

import os

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from bertdemo.models import embedded

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

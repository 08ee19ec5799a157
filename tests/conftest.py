"""Shared fixtures: the embedded tokenizer, tiny masked-LMs built in the test, a small corpus file and
a tiny pretraining config (no network)."""

from __future__ import annotations

import json
import os

import pytest
import torch
from transformers import AutoTokenizer, BertForMaskedLM

from bertdemo.models import embedded
from tests.helpers import tiny_bert_config, tiny_run_config  # noqa: F401 - shared with the test modules

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded uncased WordPiece tokenizer (ids identical to bert-base-uncased)."""
    return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))


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

"""Shared fixtures: the embedded tokenizer, tiny masked-LMs built in the test, a small corpus file, and
the markers every test gets from where it lives (no network). Helpers live in tests/helpers.py."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

# Before anything reads them: no hub, no analytics, and the app's cache in a folder of this session
# (tests never write to the real ~/.cache; the launched apps inherit it).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bertdemo-test-cache-")
# One OpenMP thread per process: the two workers (pytest.ini) and the apps they launch already hold both cores, and
# an idle OpenMP thread spins while it waits for work, on the core another process needs (a tensor-heavy set of
# files ran 30 % faster on one thread than on two, 2026-12-03). A test about thread counts sets its own.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from transformers import AutoTokenizer, BertForMaskedLM

from bertdemo.models import embedded
from tests.helpers import tiny_model_dir

_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items) -> None:
    """Tests under tests/e2e are ``e2e``; those that open a browser page are ``browser`` too. The files that hold a
    ``slow`` test run first, then the other e2e files, then the rest (each file's tests in their order): the two
    workers take files as they free up, so the long ones start early and short ones fill the end, where a long file
    taken last would leave the other worker idle (60 s of the suite's end on 2026-12-03)."""
    for item in items:
        if (_TESTS / "e2e") in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
        if {"browser_page", "_browser"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: 0 if item.path in slow_files else 1 if item.get_closest_marker("e2e") else 2)


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded uncased WordPiece tokenizer (ids identical to bert-base-uncased)."""
    return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, tokenizer):
    """A tiny BertForMaskedLM + tokenizer saved as a normal model folder (max 64 positions)."""
    return tiny_model_dir(BertForMaskedLM, tmp_path_factory.mktemp("tiny-mlm"), tokenizer)


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

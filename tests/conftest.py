"""Shared fixtures: the embedded tokenizer, tiny masked-LMs built in the test, a small corpus file, and
the markers every test gets from where it lives (no network). Helpers live in tests/helpers.py."""

from __future__ import annotations

import json
import os
import sys
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
# Bytecode caches (__pycache__, ignored by git) are written even where the environment asks Python not to
# (PYTHONDONTWRITEBYTECODE, as in this machine's environment): otherwise every worker rewrites all the test files' assertions
# and every launched app and fresh interpreter compiles the project again (~7 CPU-s a worker, ~1 a process).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from bertdemo.models import embedded  # after the environment above; it imports neither torch nor transformers

_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items) -> None:
    """Tests under tests/e2e are ``e2e``; those that open a browser page are ``browser`` too. The files run in an
    order that keeps both workers busy to the end (pytest.ini keeps it: ``--no-loadscope-reorder``): the unit files by
    their number of tests, most first (xdist's own order), with the heavy files (e2e, or holding a ``slow`` test)
    spread evenly among them over the first three quarters. xdist's order alone ran the heavy files, which hold few
    tests, last (the one-test torchrun file last of all, the other worker idle for a minute); the heavy files first ran
    two long training tests at once, each waiting longer for its steps while its open-ended runs kept training
    (both: 2026-12-03)."""
    for item in items:
        if (_TESTS / "e2e") in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
        if {"browser_page", "_browser"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
    counts: dict[Path, int] = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    heavy = slow | {item.path for item in items if item.get_closest_marker("e2e")}
    spread = sorted(heavy, key=lambda path: (path not in slow, str(path)))  # the slow ones first
    order = sorted((path for path in counts if path not in heavy), key=lambda path: -counts[path])
    others = len(order)
    for i, path in enumerate(spread):  # one heavy file every so many others, within the first three quarters
        order.insert(i + (i * 3 * others) // (4 * len(spread)), path)
    rank = {path: i for i, path in enumerate(order)}
    items.sort(key=lambda item: rank[item.path])


# The fixtures import torch and transformers themselves: the xdist controller loads this file as well, before it starts
# the workers (~6 s of one core while the other waits), and needs none of them.
@pytest.fixture(scope="session")
def tokenizer():
    """The embedded uncased WordPiece tokenizer (ids identical to bert-base-uncased)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, tokenizer):
    """A tiny BertForMaskedLM + tokenizer saved as a normal model folder (max 64 positions)."""
    from transformers import BertForMaskedLM

    from tests.helpers import tiny_model_dir

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

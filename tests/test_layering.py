"""Layering: Attention and Inside BERT do not load Fill-Mask; the messages and limits the page needs are torch-free.

Runs in a fresh interpreter: this test process has everything imported already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _loaded_after(code: str) -> dict:
    probe = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in sys.argv[1:]}))"
    done = subprocess.run([sys.executable, "-c", probe, "torch", "bertdemo.explore.fill_mask",
                           "bertdemo.models.batching"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # torch and transformers imported in a fresh interpreter: about 10 s on two busy cores
def test_attention_and_inside_do_not_import_fill_mask():
    loaded = _loaded_after("import bertdemo.explore.attention, bertdemo.explore.inside, "
                           "bertdemo.explore.inside_layer, bertdemo.explore.inside_output")
    assert loaded["torch"] and not loaded["bertdemo.explore.fill_mask"]


def test_messages_and_limits_are_torch_free():
    loaded = _loaded_after("import bertdemo.explore.messages, bertdemo.explore.input_limits, bertdemo.models.batching")
    assert not loaded["torch"] and not loaded["bertdemo.explore.fill_mask"]


IMPORT_EACH_ALONE = """
import importlib, json, pkgutil, sys
import bertdemo
names = sorted(m.name for m in pkgutil.walk_packages(bertdemo.__path__, "bertdemo."))
failed = {}
for name in names:
    for loaded in [m for m in sys.modules if m == "bertdemo" or m.startswith("bertdemo.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - every failure is reported
        failed[name] = f"{type(exc).__name__}: {exc}"[:300]
print(json.dumps({"count": len(names), "failed": failed}))
"""


@pytest.mark.slow  # about 100 imports in a fresh interpreter: 30 s on two busy cores
def test_every_module_imports_first():
    """Each bertdemo module imported before any other bertdemo module (the libraries stay loaded): a circle that
    works only in one import order fails here on the day it is written."""
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_ALONE], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["count"] > 90 and result["failed"] == {}


def test_settings_import_nothing_from_pretrain():
    loaded = subprocess.run([sys.executable, "-c", "import sys, bertdemo.settings; "
                             "print(sorted(m for m in sys.modules if m.startswith('bertdemo.pretrain')))"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loaded.stdout.strip() == "[]", loaded.stderr[-500:]

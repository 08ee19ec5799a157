"""Layering: Attention and Inside BERT do not load Fill-Mask; the messages and limits the page needs are torch-free.

Runs in a fresh interpreter: this test process has everything imported already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _loaded_after(code: str) -> dict:
    probe = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in sys.argv[1:]}))"
    done = subprocess.run([sys.executable, "-c", probe, "torch", "bertdemo.explore.fill_mask",
                           "bertdemo.explore.batching"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_attention_and_inside_do_not_import_fill_mask():
    loaded = _loaded_after("import bertdemo.explore.attention, bertdemo.explore.inside, "
                           "bertdemo.explore.inside_layer, bertdemo.explore.inside_output")
    assert loaded["torch"] and not loaded["bertdemo.explore.fill_mask"]


def test_messages_and_limits_are_torch_free():
    loaded = _loaded_after("import bertdemo.explore.messages, bertdemo.explore.input_limits, bertdemo.explore.batching")
    assert not loaded["torch"] and not loaded["bertdemo.explore.fill_mask"]

"""The Fill-Mask tab's handler while the app is still starting: it shows the same "Starting up…"
progress as the other tabs (it asks the store for the model before anything that waits for torch).

Runs in a fresh interpreter: this test process has torch loaded already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a fresh interpreter
def test_fill_mask_says_starting_up_while_the_logic_loads(tmp_path):
    code = f"""
import json, sys
from bertdemo.context import AppContext
from bertdemo.models import embedded
from bertdemo.ui import build_app
ctx = AppContext.for_tests({str(tmp_path)!r}, default_model=embedded.EMBEDDED_MLM_NAME)
demo = build_app(ctx)
ctx.loader.start()  # as app.py does once the page is served
handler = next(f.fn for f in demo.fns.values() if f.api_name == "fill_mask")
before = "torch" in sys.modules
messages = []
figure, filled, table, raw = handler("Nice to [MASK] you.", "", "", 5, "meet, see",
                                     progress=lambda fraction, desc=None: messages.append(desc))
print(json.dumps({{"before": before, "messages": messages, "filled": filled,
                  "targets": [t["word"] for t in raw[0]["targets"]]}}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] is False  # the handler started before PyTorch was in
    assert out["messages"][0] == "Starting up: loading PyTorch and transformers…"
    assert out["filled"].startswith("**Filled with the top choices:** Nice to **")
    assert out["targets"] == ["meet", "see"]

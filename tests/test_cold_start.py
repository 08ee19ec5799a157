"""Cold start: the page is built without torch, --offline reaches the Hugging Face libraries before
they are imported, and handlers wait for the logic that loads after the page is served.

The import checks run in fresh interpreters (this test process has torch loaded already).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "bertdemo.models.store", "bertdemo.explore.fill_mask", "bertdemo.pretrain.trainer")


def run_python(code: str, timeout: float = 240) -> dict:
    """Run ``code`` in a fresh interpreter at the repo root; it prints one JSON line, returned here."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_building_the_page_imports_no_torch(tmp_path):
    out = run_python(f"""
import json, sys
from bertdemo.ui import build_app, lazy
demo = build_app(lazy.StoreFront(device="cpu"), runs_dir={str(tmp_path)!r})
demo.get_config_file()
api = demo.get_api_info()
print(json.dumps({{"heavy": [m for m in {HEAVY!r} if m in sys.modules], "gradio": "gradio" in sys.modules,
                  "endpoints": sorted(api["named_endpoints"])}}))
""")
    assert out["heavy"] == []
    assert out["gradio"]
    assert {"/fill_mask", "/tokenize", "/attention", "/nsp_pairs", "/start_run"} <= set(out["endpoints"])


def test_offline_flag_is_in_the_environment_before_huggingface_hub_is_imported(tmp_path):
    # A spy stops app.main at the first import of huggingface_hub and reports the environment then.
    out = run_python(f"""
import importlib.abc, json, os, sys

class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "huggingface_hub":
            print(json.dumps({{var: os.environ.get(var) for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}}))
            raise SystemExit(0)

for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.pop(var, None)
sys.meta_path.insert(0, Spy())
import app
app.main(["--offline", "--port", "0", "--runs-dir", {str(tmp_path)!r}])
print(json.dumps({{"error": "huggingface_hub was never imported"}}))
""")
    assert out == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_store_front_waits_for_the_logic_and_says_so(tmp_path):
    out = run_python("""
import json, sys
from bertdemo.models import catalog, embedded
from bertdemo.ui import lazy
front = lazy.StoreFront(default=embedded.EMBEDDED_ENCODER_NAME, device="cpu")
front.set_extra_choices(lambda: [("my run (checkpoint)", "run:1")])
choices, before = front.choices(), "torch" in sys.modules
messages = []
loaded = front.get(progress=lambda fraction, message: messages.append(message))
store = front.real()
print(json.dumps({"before": before, "messages": messages, "name": loaded.name,
                  "same_choices": choices == store.choices(), "last": choices[-1],
                  "cached": front.cached_names(), "fill_mask": lazy.is_loaded("bertdemo.explore.fill_mask")}))
""")
    assert out["before"] is False  # the choices came without torch
    assert out["messages"][0] == "Starting up: loading PyTorch and transformers…"
    assert out["name"] == "embedded/minilm-l6-uncased" and out["cached"] == ["embedded/minilm-l6-uncased"]
    assert out["same_choices"] and out["last"] == ["my run (checkpoint)", "run:1"]
    assert out["fill_mask"]  # the loader thread, started by the first request, went on with FIRST


def test_lazy_module_loads_on_first_use():
    from bertdemo.ui import lazy

    fill_mask = lazy.LazyModule("bertdemo.explore.fill_mask")
    assert fill_mask.MAX_TOP_K == 50 and callable(fill_mask.predict)
    assert lazy.is_loaded("bertdemo.explore.fill_mask")
    with pytest.raises(ModuleNotFoundError):
        lazy.LazyModule("bertdemo.no_such_module").anything  # noqa: B018 - the access is the test


def test_pretrain_package_names_load_on_first_use():
    import bertdemo.pretrain as pretrain

    assert pretrain.RunService.__module__ == "bertdemo.pretrain.service"
    assert pretrain.PRESETS["bert-tiny"] == (2, 128, 2, 512)
    assert "RunService" in dir(pretrain)
    with pytest.raises(AttributeError):
        pretrain.no_such_name  # noqa: B018


def test_gradio_import_skips_stub_rewrites_and_keeps_the_docstrings():
    out = run_python("""
import json
import bertdemo.ui
from bertdemo.ui import gradio_import
import gradio as gr
import gradio.component_meta as meta
print(json.dumps({"rewriter": meta.create_or_modify_pyi.__name__, "again": gradio_import.skip_stub_rewrites(),
                  "click": gr.Button.click.__doc__.splitlines()[0], "textbox": gr.Textbox(label="x").label}))
""")
    assert out == {"rewriter": "_no_stub_rewrite", "again": False, "click": "Triggered when the Button is clicked.",
                   "textbox": "x"}

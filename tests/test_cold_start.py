"""Cold start: the page is built without torch, --offline reaches the Hugging Face libraries before
they are imported, handlers (Fill-Mask's among them) wait for the logic that loads after the page is served and
say so, and gradio's faster import gives every component the same docstrings.

The import checks run in fresh interpreters (this test process has torch loaded already): marked slow.
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


@pytest.mark.slow  # fresh interpreters
def test_the_page_builds_without_torch_and_fill_mask_says_starting_up_while_the_logic_loads(tmp_path):
    """The page, its config and its API are built with no heavy module imported; the Fill-Mask handler, called
    before the logic has loaded, shows the same "Starting up…" progress as the other tabs (it asks the store for the
    model before anything that waits for torch), then answers."""
    out = run_python(f"""
import json, sys
from bertdemo.context import AppContext
from bertdemo.models import embedded
from bertdemo.ui import build_app
ctx = AppContext.for_tests({str(tmp_path)!r}, default_model=embedded.EMBEDDED_MLM_NAME)
demo = build_app(ctx)
demo.get_config_file()
api = demo.get_api_info()
heavy = [m for m in {HEAVY!r} if m in sys.modules]
ctx.loader.start()  # as app.py does once the page is served
handler = next(f.fn for f in demo.fns.values() if f.api_name == "fill_mask")
before = "torch" in sys.modules
messages = []
figure, filled, table, raw = handler("Nice to [MASK] you.", "", "", 5, "meet, see",
                                     progress=lambda fraction, desc=None: messages.append(desc))
print(json.dumps({{"heavy": heavy, "gradio": "gradio" in sys.modules, "endpoints": sorted(api["named_endpoints"]),
                  "before": before, "messages": messages, "filled": filled,
                  "targets": [t["word"] for t in raw[0]["targets"]]}}))
""")
    assert out["heavy"] == []
    assert out["gradio"]
    assert {"/fill_mask", "/tokenize", "/attention", "/nsp_pairs", "/start_run"} <= set(out["endpoints"])
    assert out["before"] is False  # the handler started before PyTorch was in
    assert out["messages"][0] == "Starting up: loading PyTorch and transformers…"
    assert out["filled"].startswith("**Filled with the top choices:** Nice to **")
    assert out["targets"] == ["meet", "see"]


@pytest.mark.slow  # fresh interpreters
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


@pytest.mark.slow  # fresh interpreters
def test_store_front_waits_for_the_logic_and_says_so(tmp_path):
    out = run_python("""
import json, sys
from bertdemo.models import embedded
from bertdemo.models.policy import AccessPolicy
from bertdemo import lazy
loader = lazy.LogicLoader()
front = lazy.StoreFront(AccessPolicy(), default=embedded.EMBEDDED_ENCODER_NAME, device="cpu", loader=loader)
front.set_extra_choices(lambda: [("my run (checkpoint)", "run:1")])
choices, before = front.choices(), "torch" in sys.modules
loader.start()
messages = []
loaded = front.get(progress=lambda fraction, message: messages.append(message))
store = front.real()
loader.start().join(timeout=200)
print(json.dumps({"before": before, "messages": messages, "name": loaded.name,
                  "same_choices": choices == store.choices(), "last": choices[-1], "cached": front.cached_names(),
                  "loaded": [name for name in lazy.FIRST + lazy.REST if loader.is_loaded(name)]}))
""")
    assert out["before"] is False  # the choices came without torch
    assert out["messages"][0] == "Starting up: loading PyTorch and transformers…"
    assert out["name"] == "embedded/minilm-l6-uncased" and out["cached"] == ["embedded/minilm-l6-uncased"]
    assert out["same_choices"] and out["last"] == ["my run (checkpoint)", "run:1"]
    from bertdemo.lazy import FIRST, REST
    assert out["loaded"] == list(FIRST + REST)  # the loader went on with every module


def test_lazy_module_loads_on_first_use():
    from bertdemo import lazy

    fill_mask = lazy.LazyModule("bertdemo.explore.fill_mask")
    assert fill_mask.MAX_TOP_K == 50 and callable(fill_mask.predict)
    with pytest.raises(ModuleNotFoundError):
        lazy.LazyModule("bertdemo.no_such_module").anything  # noqa: B018 - the access is the test


def test_a_module_that_fails_to_load_is_reported_and_the_rest_still_load():
    from bertdemo.lazy import LogicLoader

    warmed = []
    loader = LogicLoader(first=("json",), rest=("bertdemo.no_such_module", "csv"))
    loader.start(warm_up=lambda: warmed.append(loader.is_loaded("json"))).join(timeout=60)
    assert warmed == [True]  # the warm-up ran after FIRST, before REST
    assert loader.is_loaded("csv") and not loader.is_loaded("bertdemo.no_such_module")
    assert isinstance(loader.failed("bertdemo.no_such_module"), ModuleNotFoundError)


def test_pretrain_package_names_load_on_first_use():
    from bertdemo import pretrain

    assert pretrain.PretrainService.__module__ == "bertdemo.pretrain.service"
    assert pretrain.PRESETS["bert-tiny"] == (2, 128, 2, 512)
    assert "PretrainService" in dir(pretrain)
    assert pretrain.__all__ == sorted(pretrain._HOME)  # the literal list names every lazy name
    with pytest.raises(AttributeError):
        pretrain.no_such_name  # noqa: B018


LISTENER_DOCS = """
import json, os, sys
from bertdemo import gradio_import
applied = gradio_import.skip_stub_rewrites()
import gradio as gr
import gradio.component_meta as meta
docs = {}
for name in sorted(dir(gr)):
    cls = getattr(gr, name)
    if isinstance(cls, type) and issubclass(cls, gr.blocks.Block):
        for event in getattr(cls, "EVENTS", []):
            event_name = event if isinstance(event, str) else event.event_name
            listener = getattr(cls, event_name, None)
            if listener is not None:
                docs[f"{name}.{event_name}"] = listener.__doc__
print(json.dumps({"applied": applied, "rewriter": meta.create_or_modify_pyi.__name__, "docs": docs,
                  "textbox": gr.Textbox(label="x").label}))
"""


@pytest.mark.slow  # fresh interpreters
def test_gradio_import_skips_stub_rewrites_and_keeps_every_docstring():
    patched = run_python(LISTENER_DOCS)
    plain = run_python("import os; os.environ['BERTDEMO_GRADIO_PATCH'] = '0'\n" + LISTENER_DOCS)
    assert (patched["applied"], patched["rewriter"]) == (True, "_no_stub_rewrite")
    assert (plain["applied"], plain["rewriter"]) == (False, "create_or_modify_pyi")  # the opt-out
    assert len(patched["docs"]) > 100 and patched["docs"] == plain["docs"]  # every listener of every component
    assert patched["docs"]["Button.click"].splitlines()[0] == "Triggered when the Button is clicked."
    assert patched["textbox"] == "x"

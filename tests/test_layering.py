"""Layering: Attention and Inside BERT do not load Fill-Mask; the messages and limits the page needs are torch-free;
the import graph of bertdemo/ (read from the source with ast, every import at any depth, nothing imported) has no
circle, between modules or between floors, and no import running up a floor.

The import checks run in a fresh interpreter: this test process has everything imported already.
"""

from __future__ import annotations

import ast
import functools
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


@pytest.mark.slow  # torch and transformers in a fresh interpreter (the one that then imports every module)
def test_attention_and_inside_do_not_import_fill_mask(every_module_imported):
    loaded = every_module_imported["after attention and inside"]
    assert loaded["torch"] and not loaded["bertdemo.explore.fill_mask"]


def test_messages_and_limits_are_torch_free():
    loaded = _loaded_after("import bertdemo.explore.messages, bertdemo.limits, bertdemo.models.batching")
    assert not loaded["torch"] and not loaded["bertdemo.explore.fill_mask"]


IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
import bertdemo.explore.attention, bertdemo.explore.inside, bertdemo.explore.inside_layer, bertdemo.explore.inside_output
watched = ("torch", "bertdemo.explore.fill_mask")
after_attention = {m: m in sys.modules for m in watched}
import bertdemo
names = sorted(m.name for m in pkgutil.walk_packages(bertdemo.__path__, "bertdemo."))
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - every failure is reported
        failed[name] = f"{type(exc).__name__}: {exc}"[:300]
print(json.dumps({"after attention and inside": after_attention, "count": len(names), "failed": failed}))
"""


@pytest.fixture(scope="module")
def every_module_imported() -> dict:
    """One fresh interpreter (torch and transformers imported once, not once per check): what Attention and Inside
    BERT loaded, then every module imported."""
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERY_MODULE], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # every module, in a fresh interpreter
def test_every_module_imports(every_module_imported):
    """Every bertdemo module imports. In any order: the import graph (imports inside functions too) has no circle
    (test_the_import_graph_has_no_circle), so no module imports only after another has been imported first (each
    module imported alone, in a fresh set of modules, took a minute of the suite for the same guarantee)."""
    assert every_module_imported["count"] > 90 and every_module_imported["failed"] == {}


def test_settings_import_nothing_from_pretrain():
    loaded = subprocess.run([sys.executable, "-c", "import sys, bertdemo.settings; "
                             "print(sorted(m for m in sys.modules if m.startswith('bertdemo.pretrain')))"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loaded.stdout.strip() == "[]", loaded.stderr[-500:]


PACKAGE = ROOT / "bertdemo"
LOGIC = ("explore", "models", "corpus", "pretrain", "finetune", "learn", "snippets", "viz", "tools", "assets", "classroom")
GRADIO_TOUCHPOINTS = {"bertdemo.compat", "bertdemo.gradio_import"}  # the only modules below ui/ that touch gradio
FLOORS = {  # package -> the packages it must never import (each one sits above it)
    # the bottom floor: a run's checkpoint is named from models/checkpoint_layout.py, never from pretrain/
    "models": {"explore", "pretrain", "finetune", "runs", "corpus", "classroom", "learn", "snippets", "viz", "ui",
               "context", "settings"},
    "explore": {"viz", "learn", "snippets", "ui", "context"},
    "snippets": {"learn", "ui", "context"},
    "learn": {"ui", "context"},
    "viz": {"learn", "snippets", "ui", "context"},
    "settings": {"explore", "pretrain", "finetune", "learn", "snippets", "viz", "ui", "context"},
    # the labelled data both run kinds read sits below them
    "corpus": {"explore", "pretrain", "finetune", "runs", "learn", "snippets", "viz", "ui", "context"},
    # what every run kind shares sits below them all; the two kinds never import each other
    "runs": {"pretrain", "finetune", "explore", "learn", "snippets", "viz", "ui", "context"},
    # the views read the engine's masking; the limits both check sit below both (bertdemo/limits.py)
    "pretrain": {"explore", "finetune", "learn", "snippets", "ui", "context"},
    "finetune": {"pretrain", "learn", "snippets", "ui", "context"},
    # classes and their database: standard library (and psycopg) only, below everything that records into it
    "classroom": {"explore", "models", "pretrain", "finetune", "runs", "learn", "snippets", "viz", "ui", "context"},
    # the app context builds the services the tabs are given: it never reaches into the page
    "context": {"ui", "learn"},
    # what every view, engine and endpoint checks: below them all, it imports nothing of the package
    "limits": {"models", "explore", "pretrain", "finetune", "runs", "corpus", "classroom", "learn", "snippets",
               "viz", "ui", "context", "settings", "request_budget", "lazy"},
    # one budget for every view that runs a model (explore, finetune, learn and the page charge it)
    "request_budget": {"explore", "pretrain", "finetune", "runs", "learn", "snippets", "viz", "ui", "context"},
    # the logic loader names the modules it loads, it imports none of them
    "lazy": {"explore", "pretrain", "finetune", "runs", "learn", "snippets", "viz", "ui", "context"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every module ``path`` imports, at module level or inside a function: ``from a import b`` names
    ``a.b`` when that is a module of the package, else ``a``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            found.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                         for a in node.names)
    return found


@functools.cache  # the package's source, parsed once for every check below (about 1 CPU-s each time)
def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path, set(paths)) for name, path in paths.items()}


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan), over the package's own modules."""
    inner = {n: {m for m in deps if m in graph and m != n} for n, deps in graph.items()}
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(inner[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for name in sorted(inner):
        if name not in index:
            visit(name)
    return groups


def _room(module: str) -> str:
    """``bertdemo.explore.tokens`` -> ``explore``; ``bertdemo.settings`` -> ``settings``."""
    parts = module.split(".")
    return parts[1] if parts[0] == "bertdemo" and len(parts) > 1 else parts[0]


def _rooms(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between floors: a package of bertdemo/ or a module at its top is one node."""
    rooms: dict[str, set[str]] = {}
    for name, deps in graph.items():
        rooms.setdefault(_room(name), set()).update(_room(m) for m in deps if m in graph)
    return rooms


def test_the_import_graph_has_no_circle():
    assert [sorted(c) for c in _circles(_graph())] == []


def test_no_two_floors_import_each_other():
    """A circle between floors (pretrain -> explore.input_limits while explore reads pretrain's masking; the
    context -> ui.lazy while every tab reads the context) means a module sits on the wrong floor."""
    rooms = _rooms(_graph())
    assert [sorted(c) for c in _circles(rooms)] == []
    assert "bertdemo.explore.input_limits" not in _graph() and "bertdemo.ui.lazy" not in _graph()


def test_a_circle_between_floors_is_found():
    graph = {"bertdemo.ui.tab": {"bertdemo.context"}, "bertdemo.context": {"bertdemo.ui.lazy"},
             "bertdemo.ui.lazy": set(), "bertdemo.models.store": {"gradio"}}
    assert _circles(_rooms(graph)) == [{"ui", "context"}]


def test_a_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [{"a", "b", "c"}]


def test_ui_never_imports_torch_and_logic_never_imports_gradio():
    graph = _graph()
    ui_torch = sorted((n, m) for n, deps in graph.items() if _room(n) == "ui" for m in deps
                      if m.split(".")[0] == "torch")
    logic_gradio = sorted((n, m) for n, deps in graph.items() for m in deps
                          if m.split(".")[0] == "gradio" and _room(n) != "ui" and n not in GRADIO_TOUCHPOINTS)
    assert ui_torch == [] and logic_gradio == []
    assert {_room(n) for n in graph} >= set(LOGIC) | {"ui"}  # every floor named above exists


def test_no_import_runs_up_a_floor():
    upward = sorted((n, m) for n, deps in _graph().items() for m in deps
                    if m.startswith("bertdemo.") and _room(m) in FLOORS.get(_room(n), ()))
    assert upward == []


def test_an_import_inside_a_function_is_in_the_graph(tmp_path):
    source = tmp_path / "kind.py"
    source.write_text("def f():\n    from bertdemo.pretrain.trainer import run_training\n    import bertdemo.ui\n")
    assert _imports(source, {"bertdemo.pretrain.trainer"}) == {"bertdemo.pretrain.trainer", "bertdemo.ui"}


def test_budget_and_the_trainer_form_no_circle():
    """The time budget is torch-free and below the training loop: it never imports the trainer (nor the
    calibration, which times the trainer's own step); the trainer may read the budget."""
    assert not _graph()["bertdemo.pretrain.budget"] & {"bertdemo.pretrain.trainer", "bertdemo.pretrain.calibration"}

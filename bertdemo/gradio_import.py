"""Import gradio faster: skip work its import does for gradio's own developers.

Every time it is imported, gradio

* re-creates the ``.pyi`` stub of each of its ~80 component classes
  (``gradio.component_meta.create_or_modify_pyi``: read the source, parse it, render a template,
  compare with the stub shipped in the wheel and, when they differ, write into site-packages);
* renders each event listener's docstring through a fresh Jinja template
  (``gradio.events.EventListener.set_doc``) only to put the component's name into it.

Together that is about 60 % of ``import gradio`` (docs/lab/benchmarks.md, "Cold start").
:func:`skip_stub_rewrites`, called before gradio is imported, makes the first a no-op and the
second a plain string replacement (the same docstrings); the components themselves are untouched.

It is applied by ``app.py`` (never as a side effect of importing a bertdemo module), only to the
gradio releases it was checked on (:data:`CHECKED`), and not at all when ``BERTDEMO_GRADIO_PATCH=0``;
it logs why when it does not apply.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import logging
import os
import sys
from collections.abc import Callable
from types import ModuleType

log = logging.getLogger(__name__)

CHECKED = ((6, 20), (7, 0))  # gradio releases from the first to before the second: the patch was verified there
OPT_OUT_ENV = "BERTDEMO_GRADIO_PATCH"  # "0": import gradio as it comes
TEMPLATE_FIELD = "{{ component }}"  # the only template field in gradio's listener docstrings


def _no_stub_rewrite(*args, **kwargs) -> None:
    """Stands in for gradio's stub rewriter: the stubs shipped with gradio stay as they are."""


def _set_doc(self, component: str) -> None:
    """``EventListener.set_doc`` without Jinja: the component's name put into the docstring."""
    doc = self.listener.__doc__
    if doc:
        doc = doc.replace(TEMPLATE_FIELD, component)
        self.listener.__doc__ = doc.removesuffix("\n")  # as Jinja renders it


def _patch_component_meta(module: ModuleType) -> None:
    if callable(getattr(module, "create_or_modify_pyi", None)):
        module.create_or_modify_pyi = _no_stub_rewrite


def _patch_events(module: ModuleType) -> None:
    listener = getattr(module, "EventListener", None)
    if listener is not None and callable(getattr(listener, "set_doc", None)):
        listener.set_doc = _set_doc


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "gradio.component_meta": _patch_component_meta,
    "gradio.blocks_events": _patch_component_meta,  # imports create_or_modify_pyi by name
    "gradio.events": _patch_events,
}


class _Patcher(importlib.abc.MetaPathFinder):
    """Finds the modules of :data:`PATCHES` like the default finder, and patches each once it has run."""

    def __init__(self) -> None:
        self.pending = dict(PATCHES)

    def find_spec(self, name, path, target=None):
        patch = self.pending.pop(name, None)
        if patch is None:
            return None
        if not self.pending:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _checked_release() -> str | None:
    """Why the installed gradio is not one the patch was verified on (None when it is)."""
    try:
        version = importlib.metadata.version("gradio")
    except importlib.metadata.PackageNotFoundError:
        return "gradio is not installed"
    try:
        release = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return f"gradio {version} has an unexpected version number"
    if not CHECKED[0] <= release < CHECKED[1]:
        return f"gradio {version} is outside the checked releases"
    return None


def skip_stub_rewrites() -> bool:
    """Install the patcher before gradio is imported; False (logged, nothing done) when it cannot apply."""
    reason = None
    if os.environ.get(OPT_OUT_ENV, "").strip() == "0":
        reason = f"{OPT_OUT_ENV}=0"
    elif any(name in sys.modules for name in PATCHES):
        reason = "gradio is imported already"
    elif any(isinstance(f, _Patcher) for f in sys.meta_path):
        return True
    else:
        reason = _checked_release()
    if reason is not None:
        log.info("gradio imported as it comes (%s)", reason)
        return False
    sys.meta_path.insert(0, _Patcher())
    return True

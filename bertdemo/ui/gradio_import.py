"""Import gradio faster: skip its rewrite of the components' type stubs.

Every time it is imported, gradio re-creates the ``.pyi`` stub of each of its ~80 component classes
(``gradio.component_meta.create_or_modify_pyi``: read the source, parse it, render a template,
compare with the stub shipped in the wheel and, when they differ, write into site-packages). That
is editor support for gradio's own developers and about half of ``import gradio`` (measured in
docs/benchmarks.md, "Cold start"). :func:`skip_stub_rewrites` makes it a no-op for this process,
before gradio is imported; the components themselves are untouched.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

MODULE = "gradio.component_meta"
FUNCTION = "create_or_modify_pyi"


def _no_stub_rewrite(*args, **kwargs) -> None:
    """Stands in for gradio's stub rewriter: the stubs shipped with gradio stay as they are."""


class _StubSkipper(importlib.abc.MetaPathFinder):
    """Finds ``gradio.component_meta`` like the default finder, then swaps the stub rewriter out."""

    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # one module, once
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            if callable(getattr(module, FUNCTION, None)):
                setattr(module, FUNCTION, _no_stub_rewrite)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def skip_stub_rewrites() -> bool:
    """Install the skipper; False (and nothing done) when gradio is imported already."""
    if MODULE in sys.modules or any(isinstance(f, _StubSkipper) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _StubSkipper())
    return True

"""One process-wide lock around importing the heavy logic (torch, transformers and the modules that use them).

transformers' top-level package is a lazy module: ``from transformers import AutoTokenizer`` imports
submodules on first use. Two threads doing that at once — the background loader that imports the
logic after the page is served, and a request that needs the same modules now (a run started in the
first seconds) — can see a half-initialised submodule and fail with "cannot import name". So the
heavy imports run one thread at a time under :data:`LOGIC_IMPORT_LOCK`; a module already imported is
returned without waiting. Standard library only.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

LOGIC_IMPORT_LOCK = threading.RLock()
"""Held while a logic module is imported (by the loader, a LazyModule, or the run service)."""


def import_logic(name: str) -> ModuleType:
    """The module ``name``: at once when it is fully imported, else imported under the lock."""
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    with LOGIC_IMPORT_LOCK:
        return importlib.import_module(name)

"""Every lock that works around an upstream library's thread-unsafety, in one place, each naming it.

* :data:`LOGIC_IMPORT_LOCK` (:func:`import_logic`): transformers' top-level package is a lazy module, and
  two threads importing the same submodule at once can see it half-initialised ("cannot import name").
* :data:`MODEL_INIT_LOCK`: transformers 5 changes process-wide state while it builds a model
  (``PreTrainedModel.tie_weights`` a no-op, torch's default dtype) and puts it back afterwards.
* :func:`tokenizer_lock` / :func:`tokenize` / :func:`pieces_of`: a fast tokenizer (transformers' ``TokenizersBackend``) changes
  its backend's truncation and padding state on every call that passes different settings
  (``no_truncation()``, ``enable_truncation()``, ``enable_padding()``), unlocked; two threads calling one
  tokenizer with different settings then race (huggingface/transformers#47085, "RuntimeError: Already
  borrowed"). ``tokenizer.tokenize(word)`` is such a call too (it encodes with truncation and padding off), so
  a word's pieces asked beside another visitor's padded batch left that batch ragged. Each tokenizer gets its own
  lock, held around every such call.

Standard library only: every floor of the package may use it.
"""

from __future__ import annotations

import importlib
import sys
import threading
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

LOGIC_IMPORT_LOCK = threading.RLock()
"""Held while a logic module is imported (by the loader, a LazyModule, or the run service)."""

MODEL_INIT_LOCK = threading.RLock()
"""Held while a model is built or loaded (``from_pretrained``, ``BertForMaskedLM(config)``)."""

_TOKENIZER_LOCK_ATTRIBUTE = "_bertdemo_call_lock"
_NEW_TOKENIZER_LOCK = threading.Lock()  # held only while a tokenizer's own lock is created


def import_logic(name: str) -> ModuleType:
    """The module ``name``: at once when it is fully imported, else imported under the lock."""
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    with LOGIC_IMPORT_LOCK:
        return importlib.import_module(name)


def tokenizer_lock(tokenizer: Any) -> AbstractContextManager:
    """The lock of this tokenizer object (made on first use, kept on the tokenizer itself, so it lives and
    dies with it): hold it around every call that passes truncation or padding settings."""
    lock = getattr(tokenizer, _TOKENIZER_LOCK_ATTRIBUTE, None)
    if lock is None:
        with _NEW_TOKENIZER_LOCK:
            lock = getattr(tokenizer, _TOKENIZER_LOCK_ATTRIBUTE, None)
            if lock is None:
                lock = threading.RLock()
                object.__setattr__(tokenizer, _TOKENIZER_LOCK_ATTRIBUTE, lock)
    return lock


def tokenize(tokenizer: Any, *args: Any, **kwargs: Any) -> Any:
    """``tokenizer(*args, **kwargs)`` under :func:`tokenizer_lock` (the one way the app calls a shared
    tokenizer with truncation or padding settings)."""
    with tokenizer_lock(tokenizer):
        return tokenizer(*args, **kwargs)


def pieces_of(tokenizer: Any, text: str) -> list[str]:
    """``tokenizer.tokenize(text)`` under :func:`tokenizer_lock`: a fast tokenizer's ``tokenize`` encodes with its
    truncation and padding switched off, which a padded call in another thread would otherwise see."""
    with tokenizer_lock(tokenizer):
        return tokenizer.tokenize(text)

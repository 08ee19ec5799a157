"""Live mini masked-LM pretraining: a small BERT learns from a corpus in a background thread.

Public API (pure Python, no UI): `TrainConfig`, `get_manager(runs_dir)` -> `RunManager`
(`start(cfg)`, `current`, `pause()`, `resume()`, `stop()`), `TrainingRun.snapshot()` ->
`RunSnapshot`, `list_checkpoints(runs_dir)`, `param_count(...)`. Headless:
``python -m bertdemo.pretrain --help`` (also under ``torchrun``).

The names are loaded on first use (PEP 562), so importing a light submodule (``config``,
``limits``, ``metrics``, ``checkpoint``) does not load the training loop and PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "list_checkpoints": "checkpoint",
    "CUSTOM": "config", "PRESETS": "config", "TrainConfig": "config", "bert_config": "config",
    "param_count": "config", "validate_probe_text": "config",
    "RunSnapshot": "metrics",
    "RunManager": "run", "TrainingRun": "run", "get_manager": "run", "resume_config": "run",
}

__all__ = sorted(_HOME)

if TYPE_CHECKING:
    from bertdemo.pretrain.checkpoint import list_checkpoints
    from bertdemo.pretrain.config import CUSTOM, PRESETS, TrainConfig, bert_config, param_count, validate_probe_text
    from bertdemo.pretrain.metrics import RunSnapshot
    from bertdemo.pretrain.run import RunManager, TrainingRun, get_manager, resume_config


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))

"""Live mini masked-LM pretraining: a small BERT learns from a corpus in a background thread.

Public API (pure Python, no UI): `TrainConfig`, `RunService(settings)` (start, control, delete, the
runs and checkpoints of a server), `TrainingRun.snapshot()` -> `RunSnapshot`, `list_checkpoints(runs_dir)`,
`param_count(...)`. Headless: ``python -m bertdemo.pretrain --help`` (also under ``torchrun``).

The package, read in order: ``config`` (settings) and ``form`` (a request -> a config), ``budget``
(caps, memory / disk / time), ``data`` modules ``corpus`` and ``blocks``, ``masking``, ``model_build``
and ``objective`` (+ ``sparse_encoder``, ``fused_ce``), ``trainer`` (the loop), ``metrics``, ``runs``
(folders on disk), ``service`` (the run thread and its rules), ``zerogpu`` + ``gpu_entry`` (GPU bursts).

The names are loaded on first use (PEP 562), so importing a light submodule (``config``, ``budget``,
``metrics``, ``runs``, ``service``) does not load the training loop and PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "list_checkpoints": "runs", "resume_config": "runs",
    "CUSTOM": "config", "PRESETS": "config", "TrainConfig": "config", "bert_config": "config",
    "param_count": "config", "validate_probe_text": "config",
    "RunSnapshot": "metrics",
    "RunManager": "service", "RunService": "service", "TrainingRun": "service",
}

__all__ = sorted(_HOME)

if TYPE_CHECKING:
    from bertdemo.pretrain.runs import list_checkpoints, resume_config
    from bertdemo.pretrain.config import CUSTOM, PRESETS, TrainConfig, bert_config, param_count, validate_probe_text
    from bertdemo.pretrain.metrics import RunSnapshot
    from bertdemo.pretrain.service import RunManager, RunService, TrainingRun


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))

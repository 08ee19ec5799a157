"""Live mini masked-LM pretraining: a small BERT learns from a corpus in a background thread.

Public API (pure Python, no UI): `TrainConfig`, `RunService(settings)` (start, control, delete, the
runs and checkpoints of a server), `TrainingRun.snapshot()` -> `RunSnapshot`, `list_checkpoints(runs_dir)`,
`param_count(...)`. Headless: ``python -m bertdemo.pretrain --help`` (also under ``torchrun``).

The package, read in order: ``config`` (a run's settings) and ``form`` (a page's or API caller's
request -> a config), ``data`` (corpus -> packed blocks), ``masking``, ``model`` (the BERT and the
objective; ``fused_ce`` its loss kernel), ``trainer`` (the loop, evaluation, optimizer, threads),
``metrics``, ``checkpoints`` (step folders and the pointer to the latest), ``run_folders`` (runs on
disk, their owners, expiry), ``uploads`` (uploaded corpora), ``budget`` (caps, memory / disk / time),
``slot`` (the run threads and the one-at-a-time manager), ``service`` (every rule of a run), ``zerogpu``
+ ``gpu_entry`` (GPU bursts).

The names are loaded on first use (PEP 562), so importing a light submodule (``config``, ``budget``,
``metrics``, ``checkpoints``, ``run_folders``, ``slot``, ``service``) does not load the training loop and
PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "list_checkpoints": "checkpoints", "resume_config": "checkpoints",
    "CUSTOM": "config", "PRESETS": "config", "TrainConfig": "config", "bert_config": "config",
    "param_count": "config", "validate_probe_text": "config",
    "RunSnapshot": "metrics",
    "RunManager": "slot", "RunService": "service", "TrainingRun": "slot",
}

__all__ = sorted(_HOME)

if TYPE_CHECKING:
    from bertdemo.pretrain.checkpoints import list_checkpoints, resume_config
    from bertdemo.pretrain.config import CUSTOM, PRESETS, TrainConfig, bert_config, param_count, validate_probe_text
    from bertdemo.pretrain.metrics import RunSnapshot
    from bertdemo.pretrain.service import RunService
    from bertdemo.pretrain.slot import RunManager, TrainingRun


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))

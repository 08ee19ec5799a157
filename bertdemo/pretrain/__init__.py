"""Live mini masked-LM pretraining: a small BERT learns from a corpus in a background thread.

Public API (pure Python, no UI): `TrainConfig`, `PretrainService(runs)` (start, delete, the runs and
checkpoints of a server; the slot and its control are :mod:`bertdemo.runs`'), `TrainingRun.snapshot()`
-> `RunSnapshot`, `list_checkpoints(runs_dir)`, `param_count(...)`. Headless: ``python -m bertdemo.pretrain
--help`` (also under ``torchrun``).

The package, read in order: ``config`` (a run's settings) and ``form`` (a page's or API caller's
request -> a config), ``data`` (corpus -> packed blocks), ``masking``, ``model`` (the BERT and the
objective; ``fused_ce`` its loss kernel), ``trainer`` (the loop, optimizer, threads), ``evaluation``
(held-out scores and probes), ``calibration`` (this machine's speed before any run), ``metrics``,
``checkpoints`` (step folders and the pointer to the latest), ``run_folders`` (saved runs and what each
was, the corpora they use), ``budget`` (caps, memory / disk / time), ``run`` (a run on its
thread in the shared slot), ``service`` (pretraining's own rules), ``zerogpu`` + ``gpu_entry`` (GPU bursts).

The names are loaded on first use (PEP 562), so importing a light submodule (``config``, ``budget``,
``metrics``, ``checkpoints``, ``run_folders``, ``run``, ``service``) does not load the training loop and
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
    "PretrainService": "service", "TrainingRun": "run",
}

__all__ = [  # the names of _HOME, sorted (a literal list, so that linters and IDEs read it)
    "CUSTOM", "PRESETS", "PretrainService", "RunSnapshot", "TrainConfig", "TrainingRun", "bert_config",
    "list_checkpoints", "param_count", "resume_config", "validate_probe_text",
]

if TYPE_CHECKING:
    from bertdemo.pretrain.checkpoints import list_checkpoints, resume_config
    from bertdemo.pretrain.config import CUSTOM, PRESETS, TrainConfig, bert_config, param_count, validate_probe_text
    from bertdemo.pretrain.metrics import RunSnapshot
    from bertdemo.pretrain.run import TrainingRun
    from bertdemo.pretrain.service import PretrainService


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))

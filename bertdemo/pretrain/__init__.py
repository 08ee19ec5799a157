"""Live mini masked-LM pretraining: a small BERT learns from a corpus in a background thread.

Public API (pure Python, no UI): `TrainConfig`, `get_manager(runs_dir)` -> `RunManager`
(`start(cfg)`, `current`, `pause()`, `resume()`, `stop()`), `TrainingRun.snapshot()` ->
`RunSnapshot`, `list_checkpoints(runs_dir)`, `param_count(...)`. Headless:
``python -m bertdemo.pretrain --help`` (also under ``torchrun``).
"""

from bertdemo.pretrain.checkpoint import list_checkpoints
from bertdemo.pretrain.config import (
    CUSTOM, PRESETS, TrainConfig, bert_config, param_count, validate_probe_text,
)
from bertdemo.pretrain.metrics import RunSnapshot
from bertdemo.pretrain.run import RunManager, TrainingRun, get_manager, resume_config

__all__ = [
    "CUSTOM", "PRESETS", "RunManager", "RunSnapshot", "TrainConfig", "TrainingRun", "bert_config",
    "get_manager", "list_checkpoints", "param_count", "resume_config", "validate_probe_text",
]

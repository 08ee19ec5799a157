"""The settings a person gives for a run (the page's form or an API caller's dict) -> a validated TrainConfig.

Settings use TrainConfig's own leaf names (``num_hidden_layers``, ``batch_size``, ``probe_text``…),
plus ``upload`` (a file the page received, used when ``corpus`` is ``"upload"``). Numbers from
web forms arrive as floats: whole numbers are accepted for integer settings. Resuming takes the
model, corpus and block length from the checkpoint; ``steps`` is then the new total.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bertdemo.pretrain import checkpoint as ckpt
from bertdemo.pretrain.config import TrainConfig, leaf_fields
from bertdemo.pretrain.run import resume_config

UPLOAD = "upload"  # the corpus choice meaning "the file the page received"
UPLOAD_SUFFIXES = (".txt", ".jsonl")
_KINDS = {f.name: str(f.type) for _, f in leaf_fields()}


def _coerce(name: str, value: Any) -> Any:
    """Web-form values -> the setting's type (2.0 -> 2 for integers, 1 -> 1.0 for floats)."""
    kind = _KINDS[name]
    if kind == "int" and isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{name} must be a whole number, got {value}.")
        return int(value)
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "str" and value is None:
        return ""
    return value


def config_from_settings(settings: dict[str, Any], runs_dir: str) -> TrainConfig:
    """A validated TrainConfig for these settings (ValueError with a clear message otherwise)."""
    settings = dict(settings)
    upload = settings.pop("upload", None)
    unknown = sorted(set(settings) - set(_KINDS))
    if unknown:
        raise ValueError(f"Unknown settings: {', '.join(unknown)}.")
    values = {name: _coerce(name, value) for name, value in settings.items()}
    resume = values.pop("resume_from", "")
    if resume:
        done = int(ckpt.read_state(resume).get("step", 0))
        steps = values.get("steps", 0)
        if steps <= done:
            raise ValueError(f"That checkpoint is at step {done}; set Steps above {done} to continue training.")
        keep = {name: values[name] for name in ("steps", "probe_text") if name in values}
        cfg = resume_config(resume, **keep, runs_dir=runs_dir)
    else:
        if values.get("corpus") == UPLOAD:
            values["corpus"] = _uploaded_corpus(upload)
        cfg = TrainConfig.from_flat(**{**values, "runs_dir": runs_dir})
    cfg.validate()
    return cfg


def _uploaded_corpus(upload: Any) -> str:
    """The path of the file the page received, checked to be .txt or .jsonl."""
    if not upload:
        raise ValueError("Upload a .txt or .jsonl file first, or choose another corpus.")
    path = Path(upload if isinstance(upload, str) else getattr(upload, "name", upload))
    if path.suffix.lower() not in UPLOAD_SUFFIXES:
        raise ValueError(f"{path.name} is not a .txt or .jsonl file.")
    return str(path)

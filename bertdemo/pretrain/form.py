"""The settings a person gives for a run (the page's form or an API caller's dict) -> a validated TrainConfig.

Settings use TrainConfig's own leaf names (``num_hidden_layers``, ``batch_size``, ``probe_text``…),
plus ``upload`` (a file the page received, used when ``corpus`` is ``"upload"``). Numbers from
web forms arrive as floats: whole numbers are accepted for integer settings. Resuming takes the
model, corpus and block length from the checkpoint; ``steps`` is then the new total.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bertdemo.models.policy import is_within
from bertdemo.pretrain import checkpoints
from bertdemo.pretrain.budget import check_public
from bertdemo.pretrain.config import TrainConfig, setting_types
from bertdemo.pretrain.data import UPLOAD_SUFFIXES, check_upload
from bertdemo.settings import Limits

UPLOAD = "upload"  # the corpus choice meaning "the file the page received"
PUBLIC_CORPORA = ("wiki", "tinystories", UPLOAD)
# settings that reach the server's file system, devices or threads: fixed on a public server
SERVER_SETTINGS = ("cache_dir", "init_from", "tokenizer", "runs_dir", "device", "num_threads", "compile", "precision")
NOT_YOURS_RESUME = "Only checkpoints of this server's runs can be resumed here."


def _coerce(name: str, value: Any) -> Any:
    """Web-form values -> the setting's type (2.0 -> 2 for integers, 1 -> 1.0 for floats)."""
    kind = setting_types()[name]
    if kind is int and isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{name} must be a whole number, got {value}.")
        return int(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is str and value is None:
        return ""
    return value


def config_from_settings(settings: dict[str, Any], runs_dir: str | Path, public_limits: Limits | None = None,
                         upload_root: str | None = None) -> TrainConfig:
    """A validated TrainConfig for these settings (ValueError with a clear message otherwise).

    ``public_limits``: this server is public and these are its caps. Then settings that reach the server's
    files or hardware are refused, a checkpoint to resume must be one of ``runs_dir``'s, the corpus
    is wiki, tinystories or the page's upload (a file under ``upload_root``), and the caps hold.
    """
    settings = dict(settings)
    upload = settings.pop("upload", None)
    unknown = sorted(set(settings) - set(setting_types()))
    if unknown:
        raise ValueError(f"Unknown settings: {', '.join(unknown)}.")
    values = {name: _coerce(name, value) for name, value in settings.items()}
    runs_dir = str(runs_dir)
    if public_limits is not None:
        _check_public_settings(values, runs_dir, upload, upload_root)
    resume = values.pop("resume_from", "")
    if resume:
        done = int(checkpoints.read_state(resume).get("step", 0))
        steps = values.get("steps", 0)
        if steps <= done:
            raise ValueError(f"That checkpoint is at step {done}; set Steps above {done} to continue training.")
        keep = {name: values[name] for name in ("steps", "probe_text", "probe_expected") if name in values}
        cfg = checkpoints.resume_config(resume, **keep, runs_dir=runs_dir)
    else:
        if values.get("corpus") == UPLOAD:
            values["corpus"] = _uploaded_corpus(upload)
        cfg = TrainConfig.from_flat(**{**values, "runs_dir": runs_dir})
    cfg.validate()
    if public_limits is not None:
        check_public(cfg, public_limits)
    return cfg


def _check_public_settings(values: dict[str, Any], runs_dir: str, upload: Any, upload_root: str | None) -> None:
    """ValueError for what a visitor of a public server may not set (see config_from_settings)."""
    defaults = TrainConfig().flat()
    for name in SERVER_SETTINGS:
        if name in values and values[name] != defaults[name]:
            raise ValueError(f"{name} cannot be set on this public server.")
    resume = values.get("resume_from") or ""
    if resume and not (is_within(resume, runs_dir) and Path(resume).resolve() != Path(runs_dir).resolve()):
        raise ValueError(NOT_YOURS_RESUME)
    corpus = values.get("corpus", "wiki")
    if corpus not in PUBLIC_CORPORA:
        raise ValueError("On this public server the corpus is 'wiki', 'tinystories' or 'upload' (a file "
                         "uploaded on the page).")
    if corpus == UPLOAD and upload and (upload_root is None or not is_within(_upload_path(upload), upload_root)):
        raise ValueError("Upload your file on the page; other files on this server cannot be used.")


def _upload_path(upload: Any) -> Path:
    return Path(upload if isinstance(upload, str) else getattr(upload, "name", upload))


def _uploaded_corpus(upload: Any) -> str:
    """The path of the file the page received, checked to be .txt or .jsonl."""
    if not upload:
        raise ValueError("Upload a .txt or .jsonl file first, or choose another corpus.")
    path = _upload_path(upload)
    if path.suffix.lower() not in UPLOAD_SUFFIXES:
        raise ValueError(f"{path.name} is not a .txt or .jsonl file.")
    return str(check_upload(path))

"""Earlier runs on this server, read back from their checkpoints: to list, compare and delete.

Every run's checkpoint keeps its settings (``train_config.json``) and its metric history
(``trainer_state.json``), so runs stay listed after a restart. Runs are named by their folder
under ``runs_dir`` (the run id); only names of existing direct children are ever touched.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bertdemo import storage
from bertdemo.pretrain import checkpoint as ckpt
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import MetricsBuffer, RunSnapshot, restore_history

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# settings that say nothing about the experiment (where and how often), left out of run labels
_NOT_EXPERIMENT = {"runs_dir", "resume_from", "cache_dir", "device", "num_threads", "compile", "log_every",
                   "eval_every", "eval_batches", "checkpoint_every", "probe_text", "steps"}


@dataclass
class RunRecord:
    """One finished or stopped run as its latest checkpoint describes it."""

    run_id: str
    checkpoint: Path
    settings: dict  # TrainConfig.flat()
    snapshot: RunSnapshot  # its metric history


def run_dir(runs_dir: str | Path, run_id: str) -> Path:
    """The folder of run `run_id`: a plain name of an existing run under runs_dir (ValueError otherwise)."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise ValueError("No such run.")
    folder = Path(runs_dir) / run_id
    if not (folder / ckpt.CHECKPOINT_DIRNAME).is_dir():
        raise ValueError("No such run.")
    return folder


def load_run(runs_dir: str | Path, run_id: str) -> RunRecord:
    """A run's settings and history from its checkpoint (read once per saved checkpoint: the live view
    redraws compared runs every second)."""
    checkpoint = run_dir(runs_dir, run_id) / ckpt.CHECKPOINT_DIRNAME
    try:
        saved = (checkpoint / ckpt.STATE_FILE).stat().st_mtime_ns
    except OSError:
        saved = 0
    return _read_run(str(checkpoint), run_id, saved)


@lru_cache(maxsize=32)
def _read_run(checkpoint_dir: str, run_id: str, saved_ns: int) -> RunRecord:
    checkpoint = Path(checkpoint_dir)
    state = ckpt.read_state(checkpoint)
    cfg = TrainConfig.from_json(checkpoint / ckpt.CONFIG_FILE)
    buffer = MetricsBuffer(run_id=run_id, status="finished", step=int(state.get("step", 0)),
                           total_steps=cfg.optim.steps, preset=cfg.model.preset, corpus=_shown(cfg.data.corpus),
                           param_count=int(state.get("param_count", 0)))
    restore_history(buffer, state.get("history", {}))
    return RunRecord(run_id, checkpoint, cfg.flat(), buffer.snapshot())


def list_runs(runs_dir: str | Path) -> list[str]:
    """Ids of the runs with a checkpoint, newest first."""
    return [path.parent.name for _, path in ckpt.list_checkpoints(runs_dir)]


OWNER_FILE = "owner.sha256"  # a digest of the token that started the run; the token itself is never stored


def _digest(token: str) -> str:
    return hashlib.sha256(str(token).encode("utf-8")).hexdigest()


def record_owner(folder: str | Path, token: str) -> None:
    """Remember who started the run in ``folder`` (its first owner stays; nothing when ``token`` is empty)."""
    path = Path(folder) / OWNER_FILE
    if token and not path.exists():
        Path(folder).mkdir(parents=True, exist_ok=True)
        storage.write_text(path, _digest(token))


def is_owner(runs_dir: str | Path, run_id: str, token: str) -> bool:
    """Whether ``token`` is the one that started run ``run_id`` (False for a run with no recorded owner)."""
    path = run_dir(runs_dir, run_id) / OWNER_FILE
    if not token or not path.is_file():
        return False
    return hmac.compare_digest(path.read_text(encoding="utf-8").strip(), _digest(token))


def delete_run(runs_dir: str | Path, run_id: str) -> None:
    """Remove a run's folder (its checkpoint and metrics)."""
    shutil.rmtree(run_dir(runs_dir, run_id))


def _shown(corpus: str) -> str:
    """A corpus as the page may show it: its name, never a server path."""
    return Path(corpus).name if ("/" in corpus or "\\" in corpus) else corpus


def differing_labels(records: list[RunRecord]) -> dict[str, str]:
    """run_id -> a label naming the settings in which it differs from the others (e.g. "lr=0.003")."""
    if len(records) < 2:
        return {r.run_id: r.run_id for r in records}
    names = [n for n in records[0].settings if n not in _NOT_EXPERIMENT
             and len({repr(r.settings.get(n)) for r in records}) > 1]
    labels = {}
    for r in records:
        parts = [f"{n}={_shown(r.settings.get(n)) if n == 'corpus' else r.settings.get(n)}" for n in names]
        labels[r.run_id] = f"{r.run_id[-12:]} ({', '.join(parts)})" if parts else r.run_id
    return labels

"""A server's run folders: which runs there are, who started them, how long they stay, what each was.

Torch-free at import. Runs are named by their folder under ``runs_dir`` (the run id); only names of
existing direct children are ever touched. A run's checkpoints (:mod:`bertdemo.pretrain.checkpoints`)
keep its settings and metric history, so runs stay listed after a restart. ``owner.sha256`` remembers
who started a run (a digest of the token that controls it), ``visitor.sha256`` from which address (what
a visitor's run quota counts). Fine-tuning runs keep their folders the same way under ``.finetune/``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bertdemo import storage
from bertdemo.pretrain.checkpoints import (
    CONFIG_FILE,
    NOT_EXPERIMENT,
    STATE_FILE,
    corpus_display_name,
    latest_checkpoint,
    list_checkpoints,
    read_state,
    run_folder_of,
)
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import RunSnapshot, snapshot_from_history

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
OWNER_FILE = "owner.sha256"  # a digest of the token that started the run; the token itself is never stored
VISITOR_FILE = "visitor.sha256"  # a digest of the address that started the run (public servers), for the quota


@dataclass
class RunRecord:
    """One finished or stopped run as its latest checkpoint describes it."""

    run_id: str
    checkpoint: Path
    settings: dict  # TrainConfig.flat()
    snapshot: RunSnapshot  # its metric history


def run_dir(runs_dir: str | Path, run_id: str, saved: bool = True) -> Path:
    """The folder of run `run_id`: a plain name of an existing run under runs_dir (ValueError otherwise);
    ``saved=False`` also finds a run that never saved a checkpoint (failed, stopped at once, killed)."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise ValueError("No such run.")
    folder = Path(runs_dir) / run_id
    if not folder.is_dir() or (saved and latest_checkpoint(folder) is None):
        raise ValueError("No such run.")
    return folder


def run_checkpoint(runs_dir: str | Path, run_id: str) -> Path:
    """The folder of run ``run_id``'s latest checkpoint (ValueError for a name that is no saved run)."""
    checkpoint = latest_checkpoint(run_dir(runs_dir, run_id))
    if checkpoint is None:  # deleted meanwhile
        raise ValueError("No such run.")
    return checkpoint


def load_run(runs_dir: str | Path, run_id: str) -> RunRecord:
    """A run's settings and history from its latest checkpoint (read once per saved checkpoint: the live
    view redraws compared runs every second)."""
    checkpoint = run_checkpoint(runs_dir, run_id)
    try:
        saved = (checkpoint / STATE_FILE).stat().st_mtime_ns
    except OSError:
        saved = 0
    return _read_run(str(checkpoint), run_id, saved)


@lru_cache(maxsize=32)
def _read_run(checkpoint_dir: str, run_id: str, saved_ns: int) -> RunRecord:
    checkpoint = Path(checkpoint_dir)
    state = read_state(checkpoint)
    cfg = TrainConfig.from_json(checkpoint / CONFIG_FILE)
    snapshot = snapshot_from_history(state.get("history", {}), run_id=run_id, status="finished",
                                     step=int(state.get("step", 0)), total_steps=cfg.optim.steps,
                                     preset=cfg.model.preset, corpus=corpus_display_name(cfg.data.corpus),
                                     param_count=int(state.get("param_count", 0)))
    return RunRecord(run_id, checkpoint, cfg.flat(), snapshot)


def list_runs(runs_dir: str | Path) -> list[str]:
    """Ids of the runs with a checkpoint, newest first."""
    return [run_folder_of(path).name for _, path in list_checkpoints(runs_dir)]


def run_choices(runs_dir: str | Path) -> list[tuple[str, str]]:
    """(label, run id) of the runs with a checkpoint, newest first: what each run was, for a run list."""
    return [(label, run_folder_of(path).name) for label, path in list_checkpoints(runs_dir)]


def _digest(token: str) -> str:
    return hashlib.sha256(str(token).encode("utf-8", "surrogatepass")).hexdigest()


def record_visitor(folder: str | Path, visitor: str) -> None:
    """Remember from which address the run in ``folder`` was started (nothing when ``visitor`` is empty)."""
    if visitor:
        Path(folder).mkdir(parents=True, exist_ok=True)
        storage.write_text(Path(folder) / VISITOR_FILE, _digest(visitor))


def _started_from(runs_dir: str | Path, run_id: str, visitor: str) -> bool:
    path = run_dir(runs_dir, run_id, saved=False) / VISITOR_FILE
    return bool(visitor) and path.is_file() and hmac.compare_digest(path.read_text(encoding="utf-8").strip(),
                                                                    _digest(visitor))


def record_owner(folder: str | Path, token: str) -> None:
    """Remember who started the run in ``folder`` (its first owner stays; nothing when ``token`` is empty)."""
    path = Path(folder) / OWNER_FILE
    if token and not path.exists():
        Path(folder).mkdir(parents=True, exist_ok=True)
        storage.write_text(path, _digest(token))


def is_owner(runs_dir: str | Path, run_id: str, token: str) -> bool:
    """Whether ``token`` is the one that started run ``run_id`` (False for a run with no recorded owner)."""
    path = run_dir(runs_dir, run_id, saved=False) / OWNER_FILE
    if not token or not path.is_file():
        return False
    return hmac.compare_digest(path.read_text(encoding="utf-8").strip(), _digest(token))


def delete_run_folder(runs_dir: str | Path, run_id: str) -> None:
    """Remove a run's folder (its checkpoints and metrics; or what a run that never saved left)."""
    shutil.rmtree(run_dir(runs_dir, run_id, saved=False))


def run_ids(runs_dir: str | Path) -> list[str]:
    """Every run folder under runs_dir, saved or not (not the uploads or lock files)."""
    root = Path(runs_dir)
    return sorted(p.name for p in root.iterdir() if p.is_dir() and _RUN_ID.match(p.name)) if root.is_dir() else []


def runs_owned_by(runs_dir: str | Path, token: str, visitor: str = "") -> list[str]:
    """The runs (saved or not) that ``token`` started, or that were started from the address ``visitor``
    (whatever token they carry: a visitor who invents a token per run is still one visitor)."""
    return [run_id for run_id in run_ids(runs_dir)
            if is_owner(runs_dir, run_id, token) or _started_from(runs_dir, run_id, visitor)]


def last_touched(folder: Path) -> float:
    """The newest modification time of anything in ``folder`` (seconds since the epoch)."""
    times = [folder.stat().st_mtime]
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                times.append(os.lstat(os.path.join(dirpath, name)).st_mtime)
            except OSError:  # removed meanwhile
                pass
    return max(times)


def expire_runs(runs_dir: str | Path, older_than_s: float, keep: Iterable[str] = (),
                now: float | None = None) -> list[str]:
    """Delete the run folders (saved or not) untouched for ``older_than_s`` seconds, except ``keep``; their ids."""
    now = time.time() if now is None else now
    expired = [run_id for run_id in run_ids(runs_dir) if run_id not in set(keep)
               and now - last_touched(Path(runs_dir) / run_id) > older_than_s]
    for run_id in expired:
        shutil.rmtree(Path(runs_dir) / run_id, ignore_errors=True)
    return expired


def differing_labels(records: list[RunRecord]) -> dict[str, str]:
    """run_id -> a label naming the settings in which it differs from the others (e.g. "lr=0.003")."""
    if len(records) < 2:
        return {r.run_id: r.run_id for r in records}
    names = [n for n in records[0].settings if n not in NOT_EXPERIMENT
             and len({repr(r.settings.get(n)) for r in records}) > 1]
    labels = {}
    for r in records:
        parts = [f"{n}={corpus_display_name(r.settings.get(n)) if n == 'corpus' else r.settings.get(n)}" for n in names]
        labels[r.run_id] = f"{r.run_id[-12:]} ({', '.join(parts)})" if parts else r.run_id
    return labels

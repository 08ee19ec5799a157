"""A server's pretraining runs on disk: which saved runs there are and what each was (settings, history,
the label that tells it from the others).

Torch-free at import. Runs are named by their folder under ``runs_dir`` (the run id); what every kind's
folders share (owner, visitor, expiry, deletion) is :mod:`bertdemo.runs.folders`. A run's checkpoints
(:mod:`bertdemo.pretrain.checkpoints`) keep its settings and metric history, so runs stay listed after a
restart; an uploaded corpus stays while a run refers to it (:func:`release_corpora`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bertdemo.pretrain.checkpoints import (
    CONFIG_FILE,
    NOT_EXPERIMENT,
    STATE_FILE,
    corpus_display_name,
    latest_checkpoint,
    list_checkpoints,
    read_state,
    run_checkpoints,
    run_folder_of,
    setting_text,
)
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import RunSnapshot, snapshot_from_history
from bertdemo.runs import uploads
from bertdemo.runs.folders import run_folder, run_ids


@dataclass
class RunRecord:
    """One finished or stopped run as its latest checkpoint describes it."""

    run_id: str
    checkpoint: Path
    settings: dict  # TrainConfig.flat()
    snapshot: RunSnapshot  # its metric history


def run_dir(runs_dir: str | Path, run_id: str) -> Path:
    """The folder of saved run ``run_id``: a plain name of a run under runs_dir with a checkpoint
    (ValueError otherwise)."""
    folder = run_folder(runs_dir, run_id)
    if latest_checkpoint(folder) is None:
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
                                     objective=cfg.objective.objective,
                                     param_count=int(state.get("param_count", 0)))
    return RunRecord(run_id, checkpoint, cfg.flat(), snapshot)


def list_runs(runs_dir: str | Path) -> list[str]:
    """Ids of the runs with a checkpoint, newest first."""
    return [run_folder_of(path).name for _, path in list_checkpoints(runs_dir)]


def run_choices(runs_dir: str | Path) -> list[tuple[str, str]]:
    """(label, run id) of the runs with a checkpoint, newest first: what each run was, for a run list."""
    return [(label, run_folder_of(path).name) for label, path in list_checkpoints(runs_dir)]


_STARTED = re.compile(r"^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})-")  # a run id: <date>-<time>-<label>


def started_text(run_id: str, with_day: bool = False) -> str:
    """When run ``run_id`` started, read from its id: "started 22:29:04" (``with_day``: "started 2026-12-01
    22:29:04"); the run id itself when it is not a dated one."""
    found = _STARTED.match(run_id)
    if found is None:
        return run_id
    year, month, day, hour, minute, second = found.groups()
    return f"started {year}-{month}-{day} {hour}:{minute}:{second}" if with_day else f"started {hour}:{minute}:{second}"


def differing_labels(records: list[RunRecord]) -> dict[str, str]:
    """run_id -> a label a learner tells the runs apart by: the objective in words when the runs' objectives
    differ, when the run started (the day too when the runs span days), and the other settings in which it
    differs from the others, e.g. "left-to-right LM · started 22:30:03", "started 22:29:04 (lr=0.003)"."""
    names = [n for n in (records[0].settings if records else ()) if n not in NOT_EXPERIMENT
             and len({repr(r.settings.get(n)) for r in records}) > 1]
    with_day = len({r.run_id[:8] for r in records if _STARTED.match(r.run_id)}) > 1  # the runs span days
    labels = {}
    for r in records:
        head = [setting_text(n, r.settings.get(n)) for n in names if n == "objective"]
        parts = [setting_text(n, r.settings.get(n)) for n in names if n != "objective"]
        label = " · ".join([*head, started_text(r.run_id, with_day)])
        labels[r.run_id] = f"{label} ({', '.join(parts)})" if parts else label
    return labels


def corpora_in_use(runs_dir: str | Path, active: Iterable[str] = ()) -> set[Path]:
    """The corpus files the runs under ``runs_dir`` refer to: ``active`` (runs under way) and every kept
    checkpoint's (a saved run may be resumed)."""
    used = {Path(c).resolve() for c in active if c}
    for run_id in run_ids(runs_dir):
        for checkpoint in run_checkpoints(Path(runs_dir) / run_id):
            try:
                data = json.loads((checkpoint / CONFIG_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            section = data.get("data")
            corpus = section.get("corpus") if isinstance(section, dict) else data.get("corpus")
            if isinstance(corpus, str) and corpus:
                used.add(Path(corpus).resolve())
    return used


def release_corpora(runs_dir: str | Path, active: Iterable[str] = (), cache_dirs: Iterable[str | Path] = ()) -> list[str]:
    """Delete the uploaded corpora no run refers to (``active``: corpora of runs under way) and their block
    caches in ``cache_dirs`` (default: the app's block cache). Returns the file names deleted."""
    if not uploads.uploads_dir(runs_dir).is_dir():
        return []
    from bertdemo.pretrain.data import default_cache_dir  # numpy: only when something may be released

    caches = [Path(c) for c in cache_dirs] or [default_cache_dir()]
    return uploads.release_uploads(runs_dir, corpora_in_use(runs_dir, active), caches)

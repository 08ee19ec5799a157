"""Checkpoints of a run: written atomically, read back, and listed for the other tabs.

A checkpoint folder holds the model (``save_pretrained``, safetensors), the tokenizer,
``train_config.json``, ``metrics.csv``, ``optimizer.pt`` and ``trainer_state.json`` (step,
run identity, metric history) — everything needed to load it with
``AutoModelForMaskedLM.from_pretrained`` or to resume training. It is written into a temp
folder beside the target and then renamed into place, so no half-written checkpoint is ever
visible (:func:`bertdemo.storage.atomic_folder`); a crash in the middle leaves the previous
checkpoint, which the next read or write puts back in place.

A run keeps its last ``keep`` checkpoints (:func:`set_keep`, default 2): the latest in
``<run>/checkpoint``, earlier ones in ``<run>/previous/step-<n>`` (hard links where the file system
allows, so keeping one costs no copy). A write that would take the runs past the server's disk
budget (:func:`bertdemo.storage.set_disk_budget`) is refused and the previous checkpoint stays.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bertdemo import storage

if TYPE_CHECKING:  # torch loads only to write or read an optimizer state: listing checkpoints needs none
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

STATE_FILE = "trainer_state.json"
CONFIG_FILE = "train_config.json"
METRICS_FILE = "metrics.csv"
OPTIMIZER_FILE = "optimizer.pt"
CHECKPOINT_DIRNAME = "checkpoint"
PREVIOUS_DIRNAME = "previous"
DEFAULT_KEEP = 2
_keep = DEFAULT_KEEP
_write_lock = threading.Lock()  # one checkpoint write (or writer-side recovery) at a time in this process


def set_keep(n: int) -> None:
    """Keep the last ``n`` (at least 1) checkpoints of every run from now on."""
    global _keep
    if int(n) < 1:
        raise ValueError(f"keep at least 1 checkpoint per run, got {n}.")
    _keep = int(n)


def kept() -> int:
    """How many checkpoints each run keeps."""
    return _keep


def previous_checkpoints(target: str | Path) -> list[Path]:
    """The earlier checkpoints kept beside ``target`` (``<run>/previous/step-<n>``), newest first."""
    folder = Path(target).parent / PREVIOUS_DIRNAME
    found = [p for p in folder.glob("step-*") if p.is_dir() and p.name[5:].isdigit()] if folder.is_dir() else []
    return sorted(found, key=lambda p: int(p.name[5:]), reverse=True)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _keep_previous(target: Path, keep: int, new_step: object) -> Path | None:
    """Before ``target`` is replaced by step ``new_step``: keep it as ``previous/step-<n>`` (returned when
    made now); a save of the same step again replaces it without keeping it."""
    if keep < 2 or not (target / STATE_FILE).is_file():
        return None
    step = int(json.loads((target / STATE_FILE).read_text(encoding="utf-8")).get("step", 0))
    dest = target.parent / PREVIOUS_DIRNAME / f"step-{step}"
    if dest.exists() or str(step) == str(new_step):
        return None
    with storage.atomic_folder(dest, replace=False) as tmp:
        shutil.copytree(target, tmp, dirs_exist_ok=True, copy_function=_link_or_copy)
    return dest


def _prune_previous(target: Path, keep: int) -> None:
    for old in previous_checkpoints(target)[max(keep - 1, 0):]:
        shutil.rmtree(old, ignore_errors=True)


def recover(target: str | Path) -> None:
    """Undo an interrupted write of ``target``: put the previous checkpoint back, drop unfinished folders.

    Only the checkpoint's writer calls this (it removes ``.tmp-`` folders a write in progress uses);
    readers go through :func:`read_state` / :func:`list_checkpoints`, which only restore.
    """
    with _write_lock:
        storage.recover_folder(Path(target))


def _restore(target: Path) -> None:
    """Reader's half of :func:`recover`: put back a checkpoint left aside by a crash mid-swap."""
    if not target.exists():
        storage.recover_folder(target, drop_temp=False)


def write_checkpoint(
    target: str | Path,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    train_config: dict,
    state: dict,
    metrics_csv: str,
    optimizer: torch.optim.Optimizer | None = None,
) -> Path:
    """Write a complete checkpoint to ``target`` atomically (temp folder beside it, then swapped in).

    ValueError (``target`` untouched) when it would take the runs past the server's disk budget."""
    target = Path(target)
    with _write_lock:
        kept = _keep_previous(target, _keep, state.get("step"))
        try:
            pruned = previous_checkpoints(target)[max(_keep - 1, 0):]
            freed = sum(storage.unshared_bytes(p) for p in [target, *pruned] if p.is_dir())
            _write(target, model, tokenizer, train_config, state, metrics_csv, optimizer, freed)
        except BaseException:
            if kept is not None:
                shutil.rmtree(kept, ignore_errors=True)
            raise
        _prune_previous(target, _keep)
    return target


def _write(target: Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, train_config: dict,
           state: dict, metrics_csv: str, optimizer: torch.optim.Optimizer | None, freed: int) -> None:
    with storage.atomic_folder(target) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / CONFIG_FILE).write_text(json.dumps(train_config, indent=2), encoding="utf-8")
        (tmp / METRICS_FILE).write_text(metrics_csv, encoding="utf-8")
        if optimizer is not None:
            import torch

            torch.save(optimizer.state_dict(), tmp / OPTIMIZER_FILE)
        state = {**state, "saved_at": datetime.now().isoformat(timespec="seconds")}
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")
        storage.check_disk_budget(freeing=freed)  # tmp is already counted: it lies among the runs


def read_state(checkpoint: str | Path) -> dict:
    """trainer_state.json of a checkpoint folder; ValueError if it is not one of ours."""
    _restore(Path(checkpoint))
    path = Path(checkpoint) / STATE_FILE
    if not path.is_file():
        raise ValueError(f"{checkpoint} is not a training checkpoint (no {STATE_FILE}).")
    return json.loads(path.read_text(encoding="utf-8"))


def load_optimizer_state(checkpoint: str | Path, optimizer: torch.optim.Optimizer) -> bool:
    """Load ``optimizer.pt`` of a checkpoint into ``optimizer``; False when the checkpoint has none."""
    path = Path(checkpoint) / OPTIMIZER_FILE
    if not path.is_file():
        return False
    import torch

    optimizer.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return True


def checkpoint_label(state: dict) -> str:
    """e.g. "run 2026-11-21 11:05 bert-tiny step 400"."""
    started = state.get("started_at", "")
    try:
        when = datetime.fromisoformat(started).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        when = started or "?"
    return f"run {when} {state.get('preset', 'bert')} step {state.get('step', 0)}"


def list_checkpoints(runs_dir: str | Path, include_previous: bool = False) -> list[tuple[str, Path]]:
    """(label, folder) of every run's latest checkpoint under runs_dir, newest first; with
    ``include_previous`` each run's earlier kept checkpoints follow its latest ("… step 200, earlier")."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    found: list[tuple[str, str, Path]] = []
    for run_dir in root.iterdir():
        ck = run_dir / CHECKPOINT_DIRNAME
        if not run_dir.is_dir() or run_dir.name.startswith("."):
            continue
        _restore(ck)
        if not (ck / "config.json").is_file():  # (mid-swap for a microsecond, or no checkpoint yet)
            continue
        try:
            state = read_state(ck)
        except (ValueError, json.JSONDecodeError):
            continue
        found.append((state.get("saved_at", ""), checkpoint_label(state), ck))
    found.sort(key=lambda item: item[0], reverse=True)
    listed: list[tuple[str, Path]] = []
    for _, label, path in found:
        listed.append((label, path))
        for earlier in previous_checkpoints(path) if include_previous else []:
            try:
                listed.append((checkpoint_label(read_state(earlier)) + ", earlier", earlier))
            except (ValueError, json.JSONDecodeError):
                continue
    return listed


def run_checkpoint_dir(checkpoint: str | Path) -> Path:
    """The folder a run resumed from ``checkpoint`` saves into: the run's latest ``checkpoint`` folder."""
    path = Path(checkpoint)
    return path.parent.parent / CHECKPOINT_DIRNAME if path.parent.name == PREVIOUS_DIRNAME else path

"""A server's runs on disk: checkpoints, run folders and their owners, uploaded corpora, run names.

Torch-free at import: the page lists runs and checkpoints before torch loads.

Checkpoints. A checkpoint folder holds the model (``save_pretrained``, safetensors), the tokenizer,
``train_config.json``, ``metrics.csv``, ``optimizer.pt`` and ``trainer_state.json`` (step, run
identity, metric history) — everything needed to load it with ``AutoModelForMaskedLM.from_pretrained``
or to resume training. It is written into a temp folder beside the target and then renamed into
place, so no half-written checkpoint is ever visible (:func:`bertdemo.storage.atomic_folder`); a
crash in the middle leaves the previous checkpoint, which the next read or write puts back in place.
A run keeps its last ``disk.keep_checkpoints`` checkpoints (:class:`bertdemo.settings.DiskRules`): the
latest in ``<run>/checkpoint``, earlier ones in ``<run>/previous/step-<n>`` (hard links where the file
system allows, so keeping one costs no copy). A write that would take the runs past the server's disk
budget is refused and the previous checkpoint stays.

Run folders. Every run's checkpoint keeps its settings and its metric history, so runs stay listed
after a restart. Runs are named by their folder under ``runs_dir`` (the run id); only names of
existing direct children are ever touched. ``owner.sha256`` remembers who started a run (the token that
controls it), ``visitor.sha256`` from which address (what a visitor's run quota counts).

Uploads. A file the page receives lands in the web server's upload folder, whose files anyone can
fetch by URL. :func:`adopt_upload` moves a corpus from there to ``<runs_dir>/.uploads/<content hash>/<name>``
(one file for the same content uploaded twice); the run trains on that copy and can be resumed from
it. :func:`release_uploads` deletes the uploads that no run's checkpoint (and not the active run)
refers to any more, and the packed-block caches made from them.

Run names. The pages never see a server folder: ``run:<run id>/checkpoint`` names a run's latest
checkpoint, ``run:<run id>/previous/step-<n>`` an earlier one (:func:`bertdemo.models.run_refs.run_reference`,
:func:`resolve_run_reference`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from bertdemo import storage
from bertdemo.pretrain.config import CUSTOM, TrainConfig
from bertdemo.pretrain.metrics import RunSnapshot, snapshot_from_history
from bertdemo.settings import DiskRules

if TYPE_CHECKING:  # torch loads only to write or read an optimizer state: listing checkpoints needs none
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

STATE_FILE = "trainer_state.json"
CONFIG_FILE = "train_config.json"
METRICS_FILE = "metrics.csv"
OPTIMIZER_FILE = "optimizer.pt"
CHECKPOINT_DIRNAME = "checkpoint"
PREVIOUS_DIRNAME = "previous"
_write_lock = threading.Lock()  # one checkpoint write (or writer-side recovery) at a time in this process


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
    optimizer: torch.optim.Optimizer | dict | None = None,
    disk: DiskRules | None = None,
) -> Path:
    """Write a complete checkpoint to ``target`` atomically (temp folder beside it, then swapped in).

    ``model``: a model, or its state dict (written as ``model.safetensors`` beside the ``config.json``
    already in ``target``); ``optimizer``: an optimizer or its state dict. ``disk``: how many checkpoints
    the run keeps and the server's disk budget (default: 2, no budget). ValueError (``target``
    untouched) when the write would take the runs past the budget."""
    target, disk = Path(target), disk or DiskRules()
    keep = disk.keep_checkpoints
    with _write_lock:
        kept = _keep_previous(target, keep, state.get("step"))
        try:
            pruned = previous_checkpoints(target)[max(keep - 1, 0):]
            freed = sum(storage.unshared_bytes(p) for p in [target, *pruned] if p.is_dir())
            _write(target, model, tokenizer, train_config, state, metrics_csv, optimizer, freed, disk)
        except BaseException:
            if kept is not None:
                shutil.rmtree(kept, ignore_errors=True)
            raise
        _prune_previous(target, keep)
    return target


def _write(target: Path, model: PreTrainedModel | dict, tokenizer: PreTrainedTokenizerBase, train_config: dict,
           state: dict, metrics_csv: str, optimizer: torch.optim.Optimizer | dict | None, freed: int,
           disk: DiskRules) -> None:
    with storage.atomic_folder(target) as tmp:
        if isinstance(model, dict):  # a state dict: the architecture is the checkpoint's own config.json
            from safetensors.torch import save_file

            shutil.copy2(target / "config.json", tmp / "config.json")
            save_file(_without_aliases(model), tmp / "model.safetensors", metadata={"format": "pt"})
        else:
            model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / CONFIG_FILE).write_text(json.dumps(train_config, indent=2), encoding="utf-8")
        (tmp / METRICS_FILE).write_text(metrics_csv, encoding="utf-8")
        if optimizer is not None:
            import torch

            torch.save(optimizer if isinstance(optimizer, dict) else optimizer.state_dict(), tmp / OPTIMIZER_FILE)
        state = {**state, "saved_at": datetime.now().isoformat(timespec="seconds")}
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")
        disk.check(freeing=freed)  # tmp is already counted: it lies among the runs


def _without_aliases(state: dict) -> dict:
    """A state dict with tied tensors once (the first name kept; loading ties the other names again)."""
    kept, seen = {}, set()
    for name, tensor in state.items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if key not in seen:
            seen.add(key)
            kept[name] = tensor.contiguous()
    return kept


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


def resume_config(checkpoint: str | Path, **overrides) -> TrainConfig:
    """The TrainConfig a checkpoint was trained with, set to resume from it (e.g. overrides: steps=4000)."""
    path = Path(checkpoint)
    read_state(path)  # ValueError if this is not a training checkpoint
    return TrainConfig.from_json(path / CONFIG_FILE).replace(**overrides, resume_from=str(path))


_SHAPE = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")


def experiment_label(settings: dict) -> str:
    """What a run was: its preset and the settings in which it differs from the default run
    (``settings``: ``TrainConfig.flat()``), e.g. "bert-mini · lr=0.003, nsp=True"; "bert-tiny · defaults"."""
    default = TrainConfig().flat()
    preset = settings.get("preset") or "bert"
    parts = []
    for name, value in settings.items():
        if name in _NOT_EXPERIMENT or name in _SHAPE or name == "preset" or name not in default:
            continue  # (a preset names its shape)
        if value != default[name]:
            parts.append(f"{name}={corpus_display_name(value) if name == 'corpus' else value}")
    if preset == CUSTOM:
        preset += " ({} layers, hidden {}, {} heads, FFN {})".format(*(settings.get(n, "?") for n in _SHAPE))
    return f"{preset} · {', '.join(parts) or 'defaults'}"


def _settings_of(checkpoint: Path) -> dict | None:
    try:
        return TrainConfig.from_json(checkpoint / CONFIG_FILE).flat()
    except (ValueError, TypeError, KeyError):
        return None


def checkpoint_label(state: dict, settings: dict | None = None) -> str:
    """e.g. "bert-tiny · lr=0.003 · step 400 · 2026-11-21 11:05" (``settings``: the run's
    ``TrainConfig.flat()``; without them only the preset the state names)."""
    started = state.get("started_at", "")
    try:
        when = datetime.fromisoformat(started).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        when = started or "?"
    what = experiment_label(settings) if settings else state.get("preset", "bert")
    return f"{what} · step {state.get('step', 0)} · {when}"


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
        found.append((state.get("saved_at", ""), checkpoint_label(state, _settings_of(ck)), ck))
    found.sort(key=lambda item: item[0], reverse=True)
    listed: list[tuple[str, Path]] = []
    for _, label, path in found:
        listed.append((label, path))
        for earlier in previous_checkpoints(path) if include_previous else []:
            try:
                listed.append((checkpoint_label(read_state(earlier), _settings_of(earlier)) + ", earlier", earlier))
            except (ValueError, json.JSONDecodeError):
                continue
    return listed


def run_checkpoint_dir(checkpoint: str | Path) -> Path:
    """The folder a run resumed from ``checkpoint`` saves into: the run's latest ``checkpoint`` folder."""
    path = Path(checkpoint)
    return path.parent.parent / CHECKPOINT_DIRNAME if path.parent.name == PREVIOUS_DIRNAME else path


# --- run folders ------------------------------------------------------------------------------------

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# settings that say nothing about the experiment (where and how often), left out of run labels
_NOT_EXPERIMENT = {"runs_dir", "resume_from", "cache_dir", "device", "num_threads", "compile", "log_every",
                   "eval_every", "eval_batches", "checkpoint_every", "probe_text", "probe_expected", "steps"}


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
    if not (folder / CHECKPOINT_DIRNAME).is_dir() and (saved or not folder.is_dir()):
        raise ValueError("No such run.")
    return folder


def load_run(runs_dir: str | Path, run_id: str) -> RunRecord:
    """A run's settings and history from its checkpoint (read once per saved checkpoint: the live view
    redraws compared runs every second)."""
    checkpoint = run_dir(runs_dir, run_id) / CHECKPOINT_DIRNAME
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
    return [path.parent.name for _, path in list_checkpoints(runs_dir)]


def run_choices(runs_dir: str | Path) -> list[tuple[str, str]]:
    """(label, run id) of the runs with a checkpoint, newest first: what each run was, for a run list."""
    return [(label, path.parent.name) for label, path in list_checkpoints(runs_dir)]


OWNER_FILE = "owner.sha256"  # a digest of the token that started the run; the token itself is never stored


def _digest(token: str) -> str:
    return hashlib.sha256(str(token).encode("utf-8", "surrogatepass")).hexdigest()


VISITOR_FILE = "visitor.sha256"  # a digest of the address that started the run (public servers), for the quota


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
    """Remove a run's folder (its checkpoint and metrics; or what a run that never saved left)."""
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


def corpus_display_name(corpus: str) -> str:
    """What a page shows of a corpus: its name ("wiki", "tinystories"), or only the file name of an
    upload (never its server folder)."""
    return corpus if corpus in ("wiki", "tinystories") else Path(corpus).name


def differing_labels(records: list[RunRecord]) -> dict[str, str]:
    """run_id -> a label naming the settings in which it differs from the others (e.g. "lr=0.003")."""
    if len(records) < 2:
        return {r.run_id: r.run_id for r in records}
    names = [n for n in records[0].settings if n not in _NOT_EXPERIMENT
             and len({repr(r.settings.get(n)) for r in records}) > 1]
    labels = {}
    for r in records:
        parts = [f"{n}={corpus_display_name(r.settings.get(n)) if n == 'corpus' else r.settings.get(n)}" for n in names]
        labels[r.run_id] = f"{r.run_id[-12:]} ({', '.join(parts)})" if parts else r.run_id
    return labels


# --- uploaded corpora -------------------------------------------------------------------------------

UPLOADS_DIRNAME = ".uploads"
HASH_CHARS = 20  # as the block cache keys files: file-<first 20 hex digits of the SHA-256>


def uploads_dir(runs_dir: str | Path) -> Path:
    return Path(runs_dir) / UPLOADS_DIRNAME


def adopt_upload(upload: str | Path, runs_dir: str | Path) -> Path:
    """A private copy of an uploaded corpus under ``runs_dir`` (a hard link where possible)."""
    from bertdemo.pretrain.data import file_sha256  # the block cache's key of a file

    upload = Path(upload)
    folder = uploads_dir(runs_dir) / file_sha256(upload)[:HASH_CHARS]
    target = folder / upload.name
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with storage.atomic_path(target) as tmp:
            try:
                tmp.unlink()
                os.link(upload, tmp)
            except OSError:
                shutil.copyfile(upload, tmp)
    return target


def forget_original_upload(upload: str | Path) -> None:
    """Delete the web server's copy of an adopted upload: nobody can fetch it by URL any more."""
    Path(upload).unlink(missing_ok=True)


def _corpora_in_use(runs_dir: Path, active: Iterable[str]) -> set[Path]:
    used = {Path(c).resolve() for c in active if c}
    for config in [*runs_dir.glob(f"*/{CHECKPOINT_DIRNAME}/{CONFIG_FILE}"),
                   *runs_dir.glob(f"*/{PREVIOUS_DIRNAME}/*/{CONFIG_FILE}")]:
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        corpus = (data.get("data") or {}).get("corpus") if isinstance(data.get("data"), dict) else data.get("corpus")
        if isinstance(corpus, str) and corpus:
            used.add(Path(corpus).resolve())
    return used


def release_uploads(runs_dir: str | Path, active: Iterable[str] = (), cache_dirs: Iterable[str | Path] = ()) -> list[str]:
    """Delete the uploads no run refers to (``active``: corpora of runs under way) and their block caches
    in ``cache_dirs`` (default: the app's block cache). Returns the file names deleted."""
    from bertdemo.pretrain.data import default_cache_dir  # numpy: only when something is released

    root = uploads_dir(runs_dir)
    if not root.is_dir():
        return []
    used = _corpora_in_use(Path(runs_dir), active)
    caches = [Path(c) for c in cache_dirs] or [default_cache_dir()]
    deleted = []
    for folder in root.iterdir():
        files = [f for f in folder.iterdir() if f.is_file()] if folder.is_dir() else []
        if any(f.resolve() in used for f in files):
            continue
        for cache in caches:
            for cached in cache.glob(f"file-{folder.name}-*") if cache.is_dir() else []:
                cached.unlink(missing_ok=True)
        deleted.extend(f.name for f in files)
        shutil.rmtree(folder, ignore_errors=True)
    return deleted

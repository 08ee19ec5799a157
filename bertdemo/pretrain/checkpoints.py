"""A run's checkpoints on disk: immutable step folders and a pointer file naming the latest.

Torch-free at import: the page lists runs and checkpoints before torch loads.

A checkpoint folder holds the model (``save_pretrained``, safetensors), the tokenizer,
``train_config.json``, ``metrics.csv``, ``optimizer.pt`` and ``trainer_state.json`` (step, run
identity, metric history) — everything needed to load it with ``AutoModelForMaskedLM.from_pretrained``
or to resume training.

Layout (as Hugging Face's Trainer keeps ``checkpoint-<step>/``)::

    <run>/steps/step-<n>/   one folder per save, never changed once in place
    <run>/LATEST            one line: the name of the latest step folder ("step-400")

A save writes ``steps/step-<n>`` into a temp folder beside it and renames it into place
(:func:`bertdemo.storage.atomic_folder`), then replaces ``LATEST`` atomically (temp file, fsync,
``os.replace``), and only then deletes the step folders beyond ``disk.keep_checkpoints``, except the
log-spaced milestones (``disk.keep_milestones``: the first save at or after each power-of-two multiple of the
run's first saved step, so "when did the run learn word order?" has points early in the run, where
things change fastest; :func:`milestone_folders`) (:class:`bertdemo.settings.DiskRules`; each renamed to a hidden name first, so a deletion cut off
half-way leaves nothing that looks like a checkpoint). A crash at any point leaves the old latest or
the new one readable: a step folder the pointer never reached is listed as an earlier checkpoint, and
a pointer naming a folder that is gone falls back to the step folder of the highest step. Readers only
read. A save of a step already on disk (a GPU burst that trained no step, a run resumed from an earlier
checkpoint reaching a step another branch saved) goes to ``step-<n>.1`` (``.2``, …); after the pointer
moves the other folders of that step are deleted. A write that would take the runs past the server's
disk budget is refused and the latest checkpoint stays.

Earlier layout: ``<run>/checkpoint/`` (the latest, replaced by a two-rename swap) and
``<run>/previous/step-<n>/`` (earlier ones). Such runs are read as they are; the first write into one,
or :func:`clean_unfinished` at server start, moves them to ``steps/`` once (pointer first, so that
until the latest has moved the pointer names a missing folder and readers keep reading
``checkpoint/``). A run of that layout killed between the two renames of its swap has no
``checkpoint/`` until then: the move puts its ``.checkpoint.old-`` folder back first.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bertdemo import storage
from bertdemo.models.checkpoint_layout import (  # the read side, on the models floor (run names read it)
    CONFIG_FILE,
    LATEST_FILE,
    LEGACY_EARLIER_DIRNAME,
    LEGACY_LATEST_DIRNAME,
    STATE_FILE,
    STEPS_DIRNAME,
    is_checkpoint,
    latest_checkpoint,
    pointed_step,
    run_checkpoints,
    run_folder_of,
    step_folders,
    step_of,
)
from bertdemo.pretrain.config import CUSTOM, LTR, MLM, TrainConfig
from bertdemo.settings import DiskRules

if TYPE_CHECKING:  # torch loads only to write or read an optimizer state: listing checkpoints needs none
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

METRICS_FILE = "metrics.csv"
OPTIMIZER_FILE = "optimizer.pt"
_write_lock = threading.Lock()  # one checkpoint write (or writer-side cleanup) at a time in this process


# --- writing ------------------------------------------------------------------------------------

def write_checkpoint(
    run: str | Path,
    model: PreTrainedModel | dict,
    tokenizer: PreTrainedTokenizerBase,
    train_config: dict,
    state: dict,
    metrics_csv: str,
    optimizer: torch.optim.Optimizer | dict | None = None,
    disk: DiskRules | None = None,
) -> Path:
    """Save a complete checkpoint as run ``run``'s latest (``<run>/steps/step-<n>``, then the pointer);
    returns its folder.

    ``model``: a model, or its state dict (written as ``model.safetensors`` beside the ``config.json`` of
    the run's latest checkpoint); ``optimizer``: an optimizer or its state dict. ``disk``: how many
    checkpoints the run keeps and the server's disk budget (default: 2, no budget). ValueError (nothing
    changed) when the write would take the runs past the budget."""
    run, disk = Path(run), disk or DiskRules()
    step = int(state.get("step", 0))
    with _write_lock:
        _tidy(run)
        previous = latest_checkpoint(run)
        taken = {p.name for p in (run / STEPS_DIRNAME).iterdir()} if (run / STEPS_DIRNAME).is_dir() else set()
        name = _free_name(taken, step)
        folder = run / STEPS_DIRNAME / name
        rewarm_at = int(state.get("rewarm_at") or 0)  # the save a continued run began again from stays
        pruned = _pruned_after(run, folder, disk.keep_checkpoints, disk.keep_milestones, rewarm_at)
        freed = sum(storage.unshared_bytes(p) for p in pruned)
        try:
            with storage.atomic_folder(folder) as tmp:
                _fill(tmp, previous, model, tokenizer, train_config, state, metrics_csv, optimizer)
                disk.check(freeing=freed)  # tmp is already counted: it lies among the runs
        except BaseException:
            if previous is None:  # a run's first save failed: no empty steps/ left to look like a run
                with contextlib.suppress(OSError):
                    folder.parent.rmdir()  # only when empty
            raise
        try:
            storage.write_text(run / LATEST_FILE, name + "\n")
        except BaseException:
            if pointed_step(run) != folder:  # the pointer did not move: the new folder goes, the latest stays
                _discard(folder)
            raise
        for old in _pruned_after(run, folder, disk.keep_checkpoints, disk.keep_milestones, rewarm_at):
            _discard(old)
    return folder


def _discard(folder: Path) -> None:
    """Delete a step folder: renamed to a hidden name first, so a deletion cut off half-way never leaves a
    folder that looks like a checkpoint (the next save or start removes what is left)."""
    hidden = storage.temp_name(folder, "old")
    try:
        folder.rename(hidden)
    except OSError:  # gone already
        return
    shutil.rmtree(hidden, ignore_errors=True)


def _pruned_after(run: Path, latest: Path, keep: int, milestones: int = 0, rewarm_at: int = 0) -> list[Path]:
    """What goes once ``latest`` is the run's latest: other saves of its step, and all but the ``keep`` - 1
    highest earlier ones, the first ``milestones`` log-spaced ones (:func:`milestone_folders`) and, with milestones,
    the save at ``rewarm_at`` (where the schedule of a run continued past its end began again: the model it was
    continued from) and every save that ended a schedule (:func:`ended_schedule`: each model a continuation began
    from, the earlier ones too once a run is continued again; a curve of the run marks each)."""
    others = [p for p in [*step_folders(run), *step_folders(run, LEGACY_EARLIER_DIRNAME)] if p != latest]
    superseded = [p for p in others if step_of(p)[0] == step_of(latest)[0]]
    rest = sorted((p for p in others if p not in superseded), key=step_of, reverse=True)
    kept = set(milestone_folders(rest, milestones))
    going = [p for p in rest[max(keep - 1, 0):] if p not in kept]
    if milestones:  # only the saves that would go are read (a state file each)
        going = [p for p in going if not ((rewarm_at and step_of(p)[0] == rewarm_at) or ended_schedule(p))]
    return superseded + going


def finished_schedule(state: dict) -> bool:
    """Whether a checkpoint's trainer state is the end of its run's schedule (its step at its ``total_steps``)."""
    return 0 < int(state.get("total_steps") or 0) <= int(state.get("step") or 0)


def rewarm_step(state: dict, steps: int) -> int:
    """The step a resumed run's schedule starts again from (0: it does not): where a run that had finished its
    schedule (its checkpoint's ``step`` at its ``total_steps``) is continued to more ``steps``, or where an earlier
    continuation did (the checkpoint's ``rewarm_at``)."""
    step = int(state.get("step", 0))
    if finished_schedule(state) and step < steps:  # a finished schedule (a continuation's too), longer
        return step
    return int(state.get("rewarm_at") or 0)


def ended_schedule(folder: Path) -> bool:
    """Whether a step folder is the save at the end of its run's schedule (:func:`finished_schedule`)."""
    try:
        return finished_schedule(read_state(folder))
    except (ValueError, OSError, json.JSONDecodeError):
        return False


def milestone_folders(folders: list[Path], most: int) -> list[Path]:
    """The log-spaced saves among ``folders`` (step folders of one run): with s the lowest step saved, the
    first save at or after s, 2s, 4s, 8s, …, at most ``most`` of them, lowest first. The rule only ever adds:
    a save that is a milestone stays one as the run goes on, so a kept folder is never deleted later for it."""
    ordered = sorted(folders, key=step_of)
    if most <= 0 or not ordered:
        return []
    first = max(step_of(ordered[0])[0], 1)
    chosen: list[Path] = []
    mark = first
    for folder in ordered:
        if len(chosen) == most:
            break
        step = step_of(folder)[0]
        if step >= mark and (not chosen or step_of(chosen[-1])[0] != step):
            chosen.append(folder)
            while mark <= step:
                mark *= 2
    return chosen


def _fill(tmp: Path, previous: Path | None, model: PreTrainedModel | dict, tokenizer: PreTrainedTokenizerBase,
          train_config: dict, state: dict, metrics_csv: str, optimizer: torch.optim.Optimizer | dict | None) -> None:
    if isinstance(model, dict):  # a state dict: the architecture is the latest checkpoint's config.json
        from safetensors.torch import save_file

        if previous is None:
            raise ValueError("A state dict is saved beside a checkpoint's config.json, and this run has none.")
        shutil.copy2(previous / "config.json", tmp / "config.json")
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
    (tmp / STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")  # last: the folder is complete


def _without_aliases(state: dict) -> dict:
    """A state dict with tied tensors once (the first name kept; loading ties the other names again)."""
    kept, seen = {}, set()
    for name, tensor in state.items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if key not in seen:
            seen.add(key)
            kept[name] = tensor.contiguous()
    return kept


def clean_unfinished(run: str | Path) -> None:
    """The writer's tidying of run ``run`` (its writer only, or at server start when nothing trains): the
    hidden folders of saves cut off before their rename (and of deletions cut off) go, and an
    earlier-layout run moves to ``steps/``."""
    with _write_lock:
        _tidy(Path(run))


def _tidy(run: Path) -> None:
    steps = run / STEPS_DIRNAME
    for unfinished in steps.glob(".step-*") if steps.is_dir() else []:  # cut-off saves and deletions
        shutil.rmtree(unfinished, ignore_errors=True)
    _move_earlier_layout(run)


def _move_earlier_layout(run: Path) -> None:
    """``checkpoint/`` and ``previous/step-<n>/`` -> ``steps/``: the pointer names the latest's new place
    first, the latest moves last (until then readers fall back to ``checkpoint/``)."""
    legacy = run / LEGACY_LATEST_DIRNAME
    _put_back_swapped_out(legacy)
    earlier = step_folders(run, LEGACY_EARLIER_DIRNAME)
    latest = [legacy] if is_checkpoint(legacy) else []
    if not latest and not earlier:
        return
    steps = run / STEPS_DIRNAME
    steps.mkdir(exist_ok=True)
    taken = {p.name for p in steps.iterdir()}
    moves = []
    for folder in latest + earlier:
        try:
            step = int(read_state(folder).get("step", 0)) if folder == legacy else step_of(folder)[0]
        except (ValueError, TypeError):
            step = 0
        moves.append((folder, steps / _free_name(taken, step)))
        taken.add(moves[-1][1].name)
    if latest:
        storage.write_text(run / LATEST_FILE, moves[0][1].name + "\n")
    for src, dst in moves[1:] + moves[:1]:
        src.rename(dst)
    shutil.rmtree(run / LEGACY_EARLIER_DIRNAME, ignore_errors=True)  # empty now (or unfinished leftovers)


def _put_back_swapped_out(legacy: Path) -> None:
    """The earlier layout replaced ``checkpoint/`` by two renames (it -> ``.checkpoint.old-<tag>``, the new
    one's temp folder -> it): a crash in between left no ``checkpoint/``, and the newest ``.old-`` folder is
    it. The other ``.old-`` and the unfinished ``.tmp-`` folders go."""
    olds = sorted(legacy.parent.glob(f".{legacy.name}.old-*"), key=lambda p: p.stat().st_mtime_ns)
    if olds and not legacy.exists():
        olds.pop().rename(legacy)
    for stale in [*olds, *legacy.parent.glob(f".{legacy.name}.tmp-*")]:
        shutil.rmtree(stale, ignore_errors=True)


def _free_name(taken: set[str], step: int) -> str:
    """``step-<n>``, or ``step-<n>.<k>`` when that step is on disk already."""
    return next(name for name in (f"step-{step}" + (f".{k}" if k else "") for k in range(len(taken) + 1))
                if name not in taken)


# --- reading ------------------------------------------------------------------------------------

def read_state(checkpoint: str | Path) -> dict:
    """trainer_state.json of a checkpoint folder; ValueError if it is not one of ours."""
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


# --- labels ---------------------------------------------------------------------------------------

_SHAPE = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
# settings that say nothing about the experiment (where and how often), left out of run labels
NOT_EXPERIMENT = frozenset({"runs_dir", "resume_from", "cache_dir", "device", "num_threads", "compile", "log_every",
                            "eval_every", "eval_batches", "checkpoint_every", "probe_text", "probe_expected", "steps"})
OBJECTIVE_WORDS = {MLM: "masked LM", LTR: "left-to-right LM"}  # how a label names a run's objective


def corpus_display_name(corpus: str) -> str:
    """What a page shows of a corpus: its name ("wiki", "tinystories"), or only the file name of an
    upload (never its server folder)."""
    return corpus if corpus in ("wiki", "tinystories") else Path(corpus).name


def setting_text(name: str, value: object) -> str:
    """One setting as a run's label says it: the objective in words ("left-to-right LM"), a corpus by its
    display name, any other as ``name=value``."""
    if name == "objective":
        return OBJECTIVE_WORDS.get(str(value), f"objective={value}")
    return f"{name}={corpus_display_name(value) if name == 'corpus' else value}"


def experiment_label(settings: dict) -> str:
    """What a run was: its preset and the settings in which it differs from the default run
    (``settings``: ``TrainConfig.flat()``), e.g. "bert-mini · lr=0.003, nsp=True"; "bert-tiny · defaults";
    "bert-tiny · left-to-right LM"."""
    default = TrainConfig().flat()
    preset = settings.get("preset") or "bert"
    parts = []
    for name, value in settings.items():
        if name in NOT_EXPERIMENT or name in _SHAPE or name == "preset" or name not in default:
            continue  # (a preset names its shape)
        if value != default[name]:
            parts.append(setting_text(name, value))
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
    for run in root.iterdir():
        ck = latest_checkpoint(run) if run.is_dir() and not run.name.startswith(".") else None
        if ck is None:
            continue
        try:
            state = read_state(ck)
        except (ValueError, OSError):  # (deleted meanwhile)
            continue
        found.append((state.get("saved_at", ""), checkpoint_label(state, _settings_of(ck)), ck))
    found.sort(key=lambda item: item[0], reverse=True)
    listed: list[tuple[str, Path]] = []
    for _, label, path in found:
        listed.append((label, path))
        for earlier in run_checkpoints(run_folder_of(path))[1:] if include_previous else []:
            try:
                listed.append((checkpoint_label(read_state(earlier), _settings_of(earlier)) + ", earlier", earlier))
            except (ValueError, OSError):
                continue
    return listed

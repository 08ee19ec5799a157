"""Where a run's checkpoints are on disk, read side only: the step folders, the ``LATEST`` pointer, the earlier
layout's folders, and which folder is a run's latest checkpoint.

Standard library only: the model names of runs (:mod:`bertdemo.models.run_refs`) and the pages read it before
torch loads, and it sits on the bottom floor so that naming a run's checkpoint imports nothing of pretraining.
Writing, pruning and moving the earlier layout are :mod:`bertdemo.pretrain.checkpoints`'s (which describes the
layout and re-exports these names).
"""

from __future__ import annotations

import re
from pathlib import Path

STATE_FILE = "trainer_state.json"
CONFIG_FILE = "train_config.json"  # a checkpoint's run settings (its TrainConfig)
STEPS_DIRNAME = "steps"
LATEST_FILE = "LATEST"
LEGACY_LATEST_DIRNAME = "checkpoint"  # the earlier layout's latest checkpoint
LEGACY_EARLIER_DIRNAME = "previous"  # the earlier layout's earlier checkpoints
STEP_NAME = re.compile(r"^step-(\d{1,12})(?:\.(\d{1,4}))?$")


def step_of(folder: Path) -> tuple[int, int]:
    """(step, repeat) a step folder's name says: ``step-400`` -> (400, 0), ``step-400.1`` -> (400, 1)."""
    match = STEP_NAME.match(folder.name)
    return (int(match[1]), int(match[2] or 0)) if match else (-1, 0)


def is_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` is a complete checkpoint (its state is written last)."""
    return (folder / STATE_FILE).is_file() and (folder / "config.json").is_file()


def step_folders(run: Path, dirname: str = STEPS_DIRNAME) -> list[Path]:
    """The complete step checkpoints in ``run/dirname``, highest step first."""
    folder = run / dirname
    found = [p for p in folder.iterdir() if STEP_NAME.match(p.name) and is_checkpoint(p)] if folder.is_dir() else []
    return sorted(found, key=step_of, reverse=True)


def pointed_step(run: Path) -> Path | None:
    """The step folder ``LATEST`` names (None when it names none), whether or not it is there."""
    try:
        name = (run / LATEST_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return run / STEPS_DIRNAME / name if STEP_NAME.match(name) else None


def latest_checkpoint(run: str | Path) -> Path | None:
    """The folder of run ``run``'s latest complete checkpoint (None when it has none): the one ``LATEST``
    names; when that folder is missing, the earlier layout's ``checkpoint/``, else the highest step."""
    run = Path(run)
    for _ in range(2):  # a writer moving an earlier-layout run may rename a folder between two looks
        pointed = pointed_step(run)
        if pointed is not None and is_checkpoint(pointed):
            return pointed
        legacy = run / LEGACY_LATEST_DIRNAME
        if is_checkpoint(legacy):
            return legacy
    found = step_folders(run) or step_folders(run, LEGACY_EARLIER_DIRNAME)
    return found[0] if found else None


def run_checkpoints(run: str | Path) -> list[Path]:
    """A run's complete checkpoints: the latest first, then the earlier ones, highest step first."""
    run = Path(run)
    latest = latest_checkpoint(run)
    if latest is None:
        return []
    found = [*step_folders(run), *step_folders(run, LEGACY_EARLIER_DIRNAME)]
    return [latest, *sorted((p for p in found if p != latest), key=step_of, reverse=True)]


def run_folder_of(checkpoint: str | Path) -> Path:
    """The run folder a checkpoint folder belongs to (where a run resumed from it saves)."""
    path = Path(checkpoint)
    return path.parent.parent if path.parent.name in (STEPS_DIRNAME, LEGACY_EARLIER_DIRNAME) else path.parent


def is_latest(checkpoint: str | Path) -> bool:
    """Whether ``checkpoint`` is its run's latest checkpoint."""
    return latest_checkpoint(run_folder_of(checkpoint)) == Path(checkpoint)

"""This server's runs, named without their server folder: ``run:<run id>/checkpoint``.

Pages, statuses and API answers show ``run:`` names; only the server turns them back into folders
(under its own runs folder, passed in). ``run:<id>/checkpoint`` always means the run's latest
checkpoint (whichever step folder it is now); ``run:<id>/steps/step-<n>`` an earlier one. Names from
before the step folders keep opening: ``run:<id>/previous/step-<n>`` is ``steps/step-<n>`` once the run
has moved to them (:mod:`bertdemo.models.checkpoint_layout`). A fine-tuning run's model is ``ft:<run id>``: its
folder ``<runs folder>/.finetune/<run id>/model`` (:func:`resolve_finetune_reference`). Both apply the one rule of who
may use a run (:func:`bertdemo.models.run_access.may_use`): another visitor's private run is answered as a run that
does not exist, so every view that takes a model name gets the rule with the name. Torch-free.
"""

from __future__ import annotations

from pathlib import Path

from bertdemo.models import run_access
from bertdemo.models.checkpoint_layout import (
    LEGACY_EARLIER_DIRNAME,
    STEPS_DIRNAME,
    is_checkpoint,
    is_latest,
    latest_checkpoint,
    step_of,
)

RUN_PREFIX = "run:"
FINETUNE_PREFIX = "ft:"  # ft:<run id>: a fine-tuning run's saved model
FINETUNE_DIRNAME = ".finetune"  # under the runs folder: fine-tuning runs (never a pretraining run's name)
FINETUNE_MODEL_DIRNAME = "model"  # a fine-tuning run's saved model, in its folder
LATEST_NAME = "checkpoint"  # run:<id>/checkpoint: the run's latest checkpoint, whichever folder that is now


def run_reference(checkpoint: str | Path, runs_dir: str | Path) -> str:
    """``run:<run id>/checkpoint`` for a run's latest checkpoint, ``run:<run id>/steps/step-<n>`` for an
    earlier one: what the pages show and send instead of the folder (no server path). ValueError for a
    folder outside ``runs_dir``."""
    relative = Path(checkpoint).relative_to(Path(runs_dir))
    if is_latest(checkpoint):
        return f"{RUN_PREFIX}{relative.parts[0]}/{LATEST_NAME}"
    return RUN_PREFIX + relative.as_posix()


def resolve_run_reference(name: str, runs_dir: str | Path | None, token: str = "") -> str | None:
    """The checkpoint folder a ``run:`` name stands for (None for other names); ValueError when it is none, or
    a run the request being served may not use (``token``: an owner token it carries)."""
    if not name.startswith(RUN_PREFIX):
        return None
    parts = name[len(RUN_PREFIX):].strip("/").split("/")
    folder = None
    if runs_dir is not None and all(p and not p.startswith(".") for p in parts):
        run = Path(runs_dir) / parts[0]
        if len(parts) == 2 and parts[1] == LATEST_NAME:
            folder = latest_checkpoint(run)
        elif len(parts) == 3 and parts[1] in (STEPS_DIRNAME, LEGACY_EARLIER_DIRNAME) and step_of(Path(parts[2]))[0] >= 0:
            # an earlier-layout name opens the step folder the run's checkpoint moved to
            candidates = [run / parts[1] / parts[2], run / STEPS_DIRNAME / parts[2]]
            folder = next((c for c in candidates if is_checkpoint(c)), None)
        if folder is not None and not run_access.may_use(run, token):
            folder = None  # another visitor's private run: as if there were none
    if folder is not None:
        return str(folder)
    raise ValueError(f"There is no run {name[len(RUN_PREFIX):]!r} on this server (deleted?): pick one from the list.")


def resolve_finetune_reference(name: str, runs_dir: str | Path | None, token: str = "") -> str | None:
    """The saved model folder ``ft:<run id>`` stands for (None for other names); ValueError when this server has
    no such fine-tuning run (a plain run id only: no other name reaches a folder), or none the request being
    served may use (``token``: an owner token it carries)."""
    if not name.startswith(FINETUNE_PREFIX):
        return None
    run_id = name[len(FINETUNE_PREFIX):]
    if runs_dir is not None and run_id and "/" not in run_id and "\\" not in run_id and not run_id.startswith("."):
        folder = Path(runs_dir) / FINETUNE_DIRNAME / run_id / FINETUNE_MODEL_DIRNAME
        if (folder / "config.json").is_file() and run_access.may_use(folder.parent, token):
            return str(folder)
    raise ValueError(f"There is no fine-tuning run {run_id[:60]!r} on this server (deleted?): pick one from the list.")

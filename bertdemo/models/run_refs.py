"""This server's runs, named without their server folder: ``run:<run id>/checkpoint``.

Pages, statuses and API answers show ``run:`` names; only the server turns them back into folders
(under its own runs folder, passed in). Torch-free.
"""

from __future__ import annotations

from pathlib import Path

RUN_PREFIX = "run:"


def run_reference(checkpoint: str | Path, runs_dir: str | Path) -> str:
    """``run:<run id>/checkpoint`` for a run's latest checkpoint, ``run:<run id>/previous/step-<n>`` for an
    earlier one: what the pages show and send instead of the folder (no server path)."""
    return RUN_PREFIX + Path(checkpoint).relative_to(Path(runs_dir)).as_posix()


def resolve_run_reference(name: str, runs_dir: str | Path | None) -> str | None:
    """The checkpoint folder a ``run:`` name stands for (None for other names); ValueError when it is none."""
    if not name.startswith(RUN_PREFIX):
        return None
    parts = name[len(RUN_PREFIX):].strip("/").split("/")
    ok = runs_dir is not None and ((len(parts) == 2 and parts[1] == "checkpoint") or (
        len(parts) == 3 and parts[1] == "previous" and parts[2].startswith("step-")))
    if ok and all(p and not p.startswith(".") for p in parts):
        folder = Path(runs_dir).joinpath(*parts)
        if (folder / "config.json").is_file():
            return str(folder)
    raise ValueError(f"There is no run {name[len(RUN_PREFIX):]!r} on this server (deleted?): pick one from the list.")


"""Run folders on disk, for every run kind: a new run's folder, who started it, which runs one visitor
keeps, how long an ended run stays, deleting one.

Torch-free. A kind keeps its runs as direct children of its own root (pretraining: ``runs_dir``;
fine-tuning: ``runs_dir/.finetune``), named by run id; only names of existing direct children are ever
touched. ``owner.sha256`` remembers who started a run (a digest of the token that controls it),
``visitor.sha256`` the share it counts in (the address it was started from, or a class's places: what the run
quota counts), ``access.json`` whether it is private and who started it (:mod:`bertdemo.models.run_access`, whose
rule :func:`run_folder` applies: a visitor's run id for another visitor's private run names no run).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from bertdemo import storage
from bertdemo.models import run_access
from bertdemo.models.run_access import OWNER_FILE, VISITOR_FILE

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
NO_SUCH_RUN = "No such run."


# the form of the ids claim_run_folder gives: what the server may clean up or expire is only what it made
CLAIMED_ID = re.compile(r"^\d{8}-\d{6}-")


def claim_run_folder(root: Path, label: str) -> str:
    """A new run id, ``<date>-<time>-<label>``, whose folder this call created under ``root`` (mkdir is the
    check: two starts never share one)."""
    base = f"{datetime.now():%Y%m%d-%H%M%S}-{label}"
    run_id, n = base, 1
    while True:
        try:
            (Path(root) / run_id).mkdir(parents=True)
            return run_id
        except FileExistsError:
            n += 1
            run_id = f"{base}-{n}"


def stored_folder(root: str | Path, run_id: str) -> Path:
    """The folder of run ``run_id`` whoever asks: the server's own bookkeeping (owner, quota, deletion)."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise ValueError(NO_SUCH_RUN)
    folder = Path(root) / run_id
    if not folder.is_dir():
        raise ValueError(NO_SUCH_RUN)
    return folder


def run_folder(root: str | Path, run_id: str, token: str = "") -> Path:
    """The folder of run ``run_id`` as a visitor names it: a plain name of an existing folder under ``root``, saved
    or not, that the request being served may use (:func:`bertdemo.models.run_access.may_use`, ``token``: an owner
    token it carries); ValueError otherwise, the same for another visitor's private run as for no run."""
    folder = stored_folder(root, run_id)
    if not run_access.may_use(folder, token):
        raise ValueError(NO_SUCH_RUN)
    return folder


def record_visitor(folder: str | Path, visitor: str) -> None:
    """Remember the share the run in ``folder`` counts in — the address it was started from, or a class's places
    (nothing when ``visitor`` is empty)."""
    if visitor:
        Path(folder).mkdir(parents=True, exist_ok=True)
        storage.write_text(Path(folder) / VISITOR_FILE, run_access.digest(visitor))


def _started_from(root: str | Path, run_id: str, visitor: str) -> bool:
    return run_access.recorded(stored_folder(root, run_id) / VISITOR_FILE, visitor)


def record_owner(folder: str | Path, token: str) -> None:
    """Remember who started the run in ``folder`` (its first owner stays; nothing when ``token`` is empty)."""
    path = Path(folder) / OWNER_FILE
    if token and not path.exists():
        Path(folder).mkdir(parents=True, exist_ok=True)
        storage.write_text(path, run_access.digest(token))


def is_owner(root: str | Path, run_id: str, token: str) -> bool:
    """Whether ``token`` is the one that started run ``run_id`` (False for a run with no recorded owner)."""
    return run_access.recorded(stored_folder(root, run_id) / OWNER_FILE, token)


def delete_run_folder(root: str | Path, run_id: str) -> None:
    """Remove a run's folder (its checkpoints and metrics; or what a run that never saved left)."""
    shutil.rmtree(stored_folder(root, run_id))


def made_by_server(run_id: str) -> bool:
    """Whether ``run_id`` has the form of an id :func:`claim_run_folder` gives. Another folder in the runs folder
    (a headless run's ``--out``, a build's work folder such as ``runs/twin-pairs``) is listed when it holds a
    checkpoint but never deleted by the server on its own: cleaning up and expiring take only what it made."""
    return bool(CLAIMED_ID.match(run_id))


def run_ids(root: str | Path) -> list[str]:
    """Every run folder under ``root``, saved or not (not the uploads, other kinds' roots or lock files)."""
    root = Path(root)
    return sorted(p.name for p in root.iterdir() if p.is_dir() and RUN_ID.match(p.name)) if root.is_dir() else []


def runs_owned_by(root: str | Path, token: str, visitor: str = "") -> list[str]:
    """The runs (saved or not) that ``token`` started, or that count in the share ``visitor`` (an address, whatever
    token they carry: a visitor who invents a token per run is still one visitor; or a class's places)."""
    return [run_id for run_id in run_ids(root)
            if is_owner(root, run_id, token) or _started_from(root, run_id, visitor)]


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


def expire_runs(root: str | Path, older_than_s: float, keep: Iterable[str] = (),
                now: float | None = None) -> list[str]:
    """Delete the run folders the server made (:func:`made_by_server`; saved or not) untouched for ``older_than_s``
    seconds, except ``keep``; their ids."""
    now = time.time() if now is None else now
    expired = [run_id for run_id in run_ids(root) if run_id not in set(keep) and made_by_server(run_id)
               and now - last_touched(Path(root) / run_id) > older_than_s]
    for run_id in expired:
        shutil.rmtree(Path(root) / run_id, ignore_errors=True)
    return expired

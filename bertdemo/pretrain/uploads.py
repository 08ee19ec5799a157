"""Uploaded corpora: a page's upload moved out of the web server's reach, and deleted when no run uses it.

Torch-free at import. A file the page receives lands in the web server's upload folder, whose files
anyone can fetch by URL. :func:`adopt_upload` moves a corpus from there to
``<runs_dir>/.uploads/<content hash>/<name>`` (one file for the same content uploaded twice); the run
trains on that copy and can be resumed from it. :func:`release_uploads` deletes the uploads that no
run's checkpoint (and not the active run) refers to any more, and the packed-block caches made from them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from bertdemo import storage
from bertdemo.pretrain.checkpoints import CONFIG_FILE, run_checkpoints
from bertdemo.runs.folders import run_ids

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
    for run_id in run_ids(runs_dir):
        for checkpoint in run_checkpoints(runs_dir / run_id):
            try:
                data = json.loads((checkpoint / CONFIG_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            section = data.get("data")
            corpus = section.get("corpus") if isinstance(section, dict) else data.get("corpus")
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

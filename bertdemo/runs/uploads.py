"""Uploaded files a run trains on: a page's upload moved out of the web server's reach, and deleted with the
caches made from it when no run uses it. Every run kind that takes an upload keeps it here.

Torch-free. A file the page receives lands in the web server's upload folder, whose files anyone can fetch
by URL. :func:`adopt_upload` moves it from there to ``<runs_dir>/.uploads/<content hash>/<name>`` (one file
for the same content uploaded twice); the run trains on that copy and can be resumed from it. The caches
made from an upload are keyed by its content, ``file-<content hash>-…`` (:func:`upload_key`).
:func:`release_uploads` deletes the uploads that no run refers to any more (the kind says which it uses) and
those caches.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from bertdemo import storage

UPLOADS_DIRNAME = ".uploads"
HASH_CHARS = 20  # a content key: the first 20 hex digits of the file's SHA-256


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def upload_key(path: Path) -> str:
    """``file-<first 20 hex digits of the SHA-256>``: what a cache made from this file is named after."""
    return f"file-{file_sha256(path)[:HASH_CHARS]}"


def uploads_dir(runs_dir: str | Path) -> Path:
    return Path(runs_dir) / UPLOADS_DIRNAME


def adopt_upload(upload: str | Path, runs_dir: str | Path) -> Path:
    """A private copy of an uploaded file under ``runs_dir`` (a hard link where possible)."""
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


def release_uploads(runs_dir: str | Path, in_use: Iterable[str | Path], cache_dirs: Iterable[str | Path]) -> list[str]:
    """Delete the uploads under ``runs_dir`` that are not ``in_use`` (the files the kinds' runs refer to, saved
    or under way), with their caches in ``cache_dirs``. Returns the file names deleted."""
    root = uploads_dir(runs_dir)
    if not root.is_dir():
        return []
    used = {Path(p).resolve() for p in in_use}
    deleted = []
    for folder in root.iterdir():
        files = [f for f in folder.iterdir() if f.is_file()] if folder.is_dir() else []
        if any(f.resolve() in used for f in files):
            continue
        for cache in (Path(c) for c in cache_dirs):
            for cached in cache.glob(f"file-{folder.name}-*") if cache.is_dir() else []:
                cached.unlink(missing_ok=True)
        deleted.extend(f.name for f in files)
        shutil.rmtree(folder, ignore_errors=True)
    return deleted

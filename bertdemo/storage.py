"""Where the app keeps files on disk, and how it writes them so no half-written one is ever seen.

* :func:`cache_root` — the one cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``, then
  ``bert-explorer``): packed token blocks, the assembled embedded masked-LM.
* :func:`atomic_path` / :func:`write_bytes` / :func:`write_text` / :func:`save_npy` — a file is
  written to a temp file in the same folder, flushed to disk (fsync), then ``os.replace``-d
  over the target: readers see the old file or the new one, never a torn one.
* :func:`atomic_folder` — a whole new folder (a run's checkpoint, a fine-tuned model, an assembled
  model): built in ``.<name>.tmp-<tag>`` beside the target, flushed, then renamed into place in one
  step. Folders are never replaced in place: what changes gets a new folder (a run's latest
  checkpoint is named by a pointer file written with :func:`write_text`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

APP_DIRNAME = "bert-explorer"


def cache_root() -> Path:
    """The app's cache folder: ``$XDG_CACHE_HOME/bert-explorer`` (``~/.cache/bert-explorer`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / APP_DIRNAME


def _tag() -> str:
    return uuid.uuid4().hex[:8]


def temp_name(target: Path, kind: str = "tmp") -> Path:
    """A fresh sibling of ``target`` named ``.<name>.<kind>-<tag>`` (hidden, same filesystem)."""
    return target.parent / f".{target.name}.{kind}-{_tag()}"


def _fsync_path(path: Path) -> None:
    """Flush a file, or a folder's entries, to disk (best effort for folders: not every OS opens them)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``target`` to write to; on success it is fsynced and replaces ``target``.

    For writers that want a path (``safetensors.save_file``, ``torch.save``). On an error the
    temp file is removed and ``target`` is untouched. The file gets the usual permissions
    (``0o666`` less the umask), unlike ``tempfile.mkstemp``'s private ``0o600``. A missing folder is made (a
    fresh machine's cache folder).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(target)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_path(target.parent)


def write_bytes(target: str | Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text(target: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``target`` atomically (no newline translation: the text as given)."""
    with atomic_path(target) as tmp, open(tmp, "w", encoding=encoding, newline="") as fh:
        fh.write(text)


def update_json(target: str | Path, change: Callable[[dict], dict], indent: int = 1) -> dict:
    """Read the JSON object at ``target`` ({} when absent), write ``change(it)`` back atomically, all under a lock
    (a ``.lock`` file beside it: other processes may be updating the same file), and return what was written."""
    import fcntl
    import json

    target = Path(target)
    with open(target.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {}
        new = change(current)
        write_text(target, json.dumps(new, indent=indent) + "\n")
    return new


def save_npy(target: str | Path, array: np.ndarray) -> None:
    """``np.save`` ``array`` to ``target`` (a ``.npy`` path, used as given) atomically."""
    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        _fsync_path(path)
    _fsync_path(folder)


@contextmanager
def atomic_folder(target: str | Path) -> Iterator[Path]:
    """Yield a fresh temp folder beside ``target`` to fill; on success it is flushed to disk and renamed
    to ``target``.

    A folder, once in place, is never replaced (a run's checkpoint is a new step folder; an assembled
    model or a data split is built once): when ``target`` exists already — another process got there
    first — ``OSError`` is raised and that folder is left in place. On any error the temp folder is removed.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(target)
    tmp.mkdir()
    try:
        yield tmp
        _fsync_tree(tmp)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_path(target.parent)


# --- disk usage (the budget itself: bertdemo.settings.DiskRules) ------------------------------

def folder_bytes(*folders: str | Path) -> int:
    """Bytes of the files under ``folders`` (a file hard-linked twice counts once; missing folders count 0)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder in folders:
        for dirpath, _, files in os.walk(folder):
            for name in files:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:  # removed meanwhile
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
    return total


def unshared_bytes(folder: str | Path) -> int:
    """Bytes that deleting ``folder`` gives back (files not hard-linked elsewhere)."""
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if st.st_nlink == 1:
                total += st.st_size
    return total


def size_text(n_bytes: int) -> str:
    """e.g. "1.5 GB", "340.2 MB"."""
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e6:.1f} MB"

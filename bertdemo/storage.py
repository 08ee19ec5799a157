"""Where the app keeps files on disk, and how it writes them so no half-written one is ever seen.

* :func:`cache_root` — the one cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``, then
  ``bert-explorer``): packed token blocks, the assembled embedded masked-LM.
* :func:`atomic_path` / :func:`write_bytes` / :func:`write_text` / :func:`save_npy` — a file is
  written to a temp file in the same folder, flushed to disk (fsync), then ``os.replace``-d
  over the target: readers see the old file or the new one, never a torn one.
* :func:`atomic_folder` / :func:`recover_folder` — the same for a whole folder (a checkpoint,
  an assembled model): built in ``.<name>.tmp-<tag>`` beside the target, then swapped in with
  two renames (target -> ``.<name>.old-<tag>``, temp -> target). A crash between the two renames
  leaves the ``.old-`` folder and no target; :func:`recover_folder` puts it back.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
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
    (``0o666`` less the umask), unlike ``tempfile.mkstemp``'s private ``0o600``.
    """
    target = Path(target)
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


def save_npy(target: str | Path, array: np.ndarray) -> None:
    """``np.save`` ``array`` to ``target`` (a ``.npy`` path, used as given) atomically."""
    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)


def recover_folder(target: str | Path, *, drop_temp: bool = True) -> None:
    """Undo an interrupted :func:`atomic_folder` swap of ``target``.

    If ``target`` is missing, the newest ``.<name>.old-*`` folder is renamed back to it. Other
    ``.old-`` folders are removed, and with ``drop_temp`` the unfinished ``.<name>.tmp-*``
    folders too — only the folder's one writer may ask for that (a reader would delete a write
    in progress).
    """
    target = Path(target)
    parent = target.parent
    if not parent.is_dir():
        return
    olds = sorted(parent.glob(f".{target.name}.old-*"), key=_mtime_ns)
    if olds and not target.exists():
        try:
            os.rename(olds.pop(), target)
        except OSError:  # the writer finished its swap meanwhile
            pass
    stale = [*olds, *(parent.glob(f".{target.name}.tmp-*") if drop_temp else [])]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # removed meanwhile
        return 0


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        _fsync_path(path)
    _fsync_path(folder)


@contextmanager
def atomic_folder(target: str | Path, *, replace: bool = True) -> Iterator[Path]:
    """Yield a fresh temp folder beside ``target`` to fill; on success it becomes ``target``.

    ``replace=True``: an existing ``target`` is swapped out (two renames, see the module notes)
    and deleted; interrupted earlier swaps are recovered first. ``replace=False``: the folder is
    only published when ``target`` does not exist yet — when another process got there first,
    ``OSError`` is raised and its folder is left in place. On any error the temp folder is
    removed and the previous ``target`` stays.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if replace:
        recover_folder(target)
    tmp = temp_name(target)
    tmp.mkdir()
    try:
        yield tmp
        _fsync_tree(tmp)
        if replace:
            _swap_in(tmp, target)
        else:
            os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if replace:
            recover_folder(target, drop_temp=False)
        raise
    _fsync_path(target.parent)


def _swap_in(tmp: Path, target: Path, attempts: int = 3) -> None:
    """Rename ``tmp`` to ``target``, moving an existing ``target`` aside first and deleting it after."""
    for attempt in range(attempts):
        old = temp_name(target, "old")
        if target.exists():
            os.rename(target, old)
        try:
            os.rename(tmp, target)
            break
        except OSError:  # a reader's recover_folder put an .old- back in between: swap again
            if attempt == attempts - 1 or not target.exists():
                raise
    shutil.rmtree(old, ignore_errors=True)


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

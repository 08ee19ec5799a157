"""bertdemo.storage: the one cache root, atomic files, atomic folder swaps and their crash recovery."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from bertdemo import storage


def _siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_cache_root_follows_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert storage.cache_root() == tmp_path / "xdg" / "bert-explorer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert storage.cache_root() == tmp_path / "home" / ".cache" / "bert-explorer"


def test_cache_root_is_the_one_the_blocks_and_the_embedded_model_use(monkeypatch, tmp_path):
    from bertdemo.pretrain.data import default_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "bert-explorer" / "blocks"


def test_atomic_files_write_text_bytes_and_npy(tmp_path):
    storage.write_text(tmp_path / "a.txt", "héllo\r\nworld")
    assert (tmp_path / "a.txt").read_bytes() == "héllo\r\nworld".encode()  # no newline translation
    storage.write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    array = np.arange(12, dtype=np.uint16).reshape(3, 4)
    storage.save_npy(tmp_path / "c.npy", array)
    loaded = np.load(tmp_path / "c.npy")
    assert loaded.dtype == np.uint16 and (loaded == array).all()
    storage.write_text(tmp_path / "a.txt", "replaced")
    assert (tmp_path / "a.txt").read_text() == "replaced"
    assert _siblings(tmp_path) == ["a.txt", "b.bin", "c.npy"]  # no temp files left


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "data.txt"
    storage.write_text(target, "old")
    with pytest.raises(RuntimeError), storage.atomic_path(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert _siblings(tmp_path) == ["data.txt"]


def test_atomic_files_get_the_usual_permissions_not_private_ones(tmp_path):
    old = os.umask(0o022)
    try:
        storage.write_text(tmp_path / "shared.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "shared.txt").stat().st_mode) == 0o644


def test_atomic_folder_publishes_a_complete_folder_and_never_replaces_one(tmp_path):
    target = tmp_path / "assembled"
    with storage.atomic_folder(target) as tmp:
        (tmp / "first.txt").write_text("1")
    with pytest.raises(OSError), storage.atomic_folder(target) as tmp:  # another process got there first
        (tmp / "second.txt").write_text("2")
    assert _siblings(target) == ["first.txt"]
    assert _siblings(tmp_path) == ["assembled"]


def test_atomic_folder_failure_leaves_nothing(tmp_path):
    target = tmp_path / "ck"
    with pytest.raises(KeyboardInterrupt), storage.atomic_folder(target) as tmp:
        (tmp / "partial.txt").write_text("half")
        raise KeyboardInterrupt
    assert _siblings(tmp_path) == []




def test_a_file_in_a_folder_not_yet_made_is_written(tmp_path):
    """A fresh machine has no cache folder yet: the first names split saved into it made the bench fail."""
    target = tmp_path / "cache" / "bert-explorer" / "names.json"
    storage.write_text(target, "{}")
    assert target.read_text() == "{}" and [p.name for p in target.parent.iterdir()] == ["names.json"]

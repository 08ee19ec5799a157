"""Uploaded corpora: moved out of the web server's folder, kept while a run refers to them, then deleted
with their token caches; the disk flags reach the storage rules."""

from __future__ import annotations

import json

import pytest

from bertdemo import storage
from bertdemo.pretrain import checkpoint as ckpt
from bertdemo.pretrain import uploads


def _run_using(runs, run_id: str, corpus: str) -> None:
    folder = runs / run_id / ckpt.CHECKPOINT_DIRNAME
    folder.mkdir(parents=True)
    (folder / ckpt.CONFIG_FILE).write_text(json.dumps({"data": {"corpus": corpus}}), encoding="utf-8")


def test_an_upload_is_adopted_kept_while_used_then_deleted_with_its_cache(tmp_path):
    served = tmp_path / "gradio" / "abc123" / "my notes.txt"
    served.parent.mkdir(parents=True)
    served.write_text("Some text for training.\n\nMore text.", encoding="utf-8")
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    private = uploads.adopt(served, runs)
    assert private.name == "my notes.txt" and private.read_bytes() == served.read_bytes()
    assert uploads.adopt(served, runs) == private  # the same content twice: one file
    uploads.forget_original(served)
    assert not served.exists() and private.is_file()

    cache.mkdir()
    key = private.parent.name
    cached = [cache / f"file-{key}-T128-0123456789ab.json", cache / f"file-{key}-T128-0123456789ab.train.npy"]
    for path in cached:
        path.write_bytes(b"x")
    other = cache / "wiki-summaries-en-T128-0123456789ab.json"
    other.write_bytes(b"x")

    assert uploads.release(runs, active=[str(private)], cache_dirs=[cache]) == []  # a run under way uses it
    _run_using(runs, "20260101-000000-bert-tiny", str(private))
    assert uploads.release(runs, cache_dirs=[cache]) == []  # a saved run refers to it (it may be resumed)
    assert private.is_file() and all(p.is_file() for p in cached)

    (runs / "20260101-000000-bert-tiny" / ckpt.CHECKPOINT_DIRNAME / ckpt.CONFIG_FILE).unlink()  # run deleted
    assert uploads.release(runs, cache_dirs=[cache]) == ["my notes.txt"]
    assert not private.exists() and not any(p.exists() for p in cached) and other.exists()


def test_a_run_is_refused_before_it_starts_when_its_checkpoints_do_not_fit(monkeypatch, tmp_path):
    from bertdemo.pretrain import TrainConfig, limits

    monkeypatch.setattr(storage, "_budget", None)
    cfg = TrainConfig.from_flat(preset="bert-mini")
    one = limits.checkpoint_bytes(cfg)
    storage.set_disk_budget(int(one * 1.5), tmp_path)
    try:
        assert limits.check_disk(cfg, tmp_path, keep=1) == one
        with pytest.raises(ValueError, match="keeps at most .* Delete earlier runs"):
            limits.check_disk(cfg, tmp_path, keep=2)
    finally:
        storage.set_disk_budget(None)

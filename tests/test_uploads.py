"""Uploaded corpora: moved out of the web server's folder, kept while a run refers to them, then deleted
with their token caches; the disk flags become the server's disk rules."""

from __future__ import annotations

import json
import shutil

import pytest

from bertdemo.pretrain import budget, checkpoints as ckpt, run_folders
from bertdemo.runs import uploads
from bertdemo.settings import DiskRules, ServerSettings
from tests.helpers import run_coroutine


def _save(run, step: int, corpus: str) -> None:
    """A checkpoint of ``run`` at ``step`` trained on ``corpus``, made its latest."""
    folder = run / ckpt.STEPS_DIRNAME / f"step-{step}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / ckpt.STATE_FILE).write_text(json.dumps({"step": step}), encoding="utf-8")
    (folder / ckpt.CONFIG_FILE).write_text(json.dumps({"data": {"corpus": corpus}}), encoding="utf-8")
    (run / ckpt.LATEST_FILE).write_text(folder.name, encoding="utf-8")


def test_an_upload_is_adopted_kept_while_used_then_deleted_with_its_cache(tmp_path):
    served = tmp_path / "gradio" / "abc123" / "my notes.txt"
    served.parent.mkdir(parents=True)
    served.write_text("Some text for training.\n\nMore text.", encoding="utf-8")
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    private = uploads.adopt_upload(served, runs)
    assert private.name == "my notes.txt" and private.read_bytes() == served.read_bytes()
    assert uploads.adopt_upload(served, runs) == private  # the same content twice: one file
    uploads.forget_original_upload(served)
    assert not served.exists() and private.is_file()

    cache.mkdir()
    key = private.parent.name
    cached = [cache / f"file-{key}-T128-0123456789ab.json", cache / f"file-{key}-T128-0123456789ab.train.npy"]
    for path in cached:
        path.write_bytes(b"x")
    other = cache / "wiki-summaries-en-T128-0123456789ab.json"
    other.write_bytes(b"x")

    assert run_folders.release_corpora(runs, active=[str(private)], cache_dirs=[cache]) == []  # a run under way uses it
    run = runs / "20260101-000000-bert-tiny"
    _save(run, 10, str(private))
    assert run_folders.release_corpora(runs, cache_dirs=[cache]) == []  # a saved run refers to it (it may be resumed)
    _save(run, 20, "wiki")
    assert run_folders.release_corpora(runs, cache_dirs=[cache]) == []  # its earlier checkpoint still does
    assert private.is_file() and all(p.is_file() for p in cached)

    shutil.rmtree(run)  # run deleted
    assert run_folders.release_corpora(runs, cache_dirs=[cache]) == ["my notes.txt"]
    assert not private.exists() and not any(p.exists() for p in cached) and other.exists()


def test_disk_settings_become_the_server_rules(tmp_path):
    public = ServerSettings.build(runs_dir=tmp_path, public=True, keep_checkpoints=3)
    assert public.disk.budget_bytes == 10 * 10**9 and public.disk.roots[0] == tmp_path
    assert public.disk.keep_checkpoints == 3
    assert ServerSettings.build(runs_dir=tmp_path).disk.budget_bytes is None
    assert ServerSettings.build(runs_dir=tmp_path, disk_budget_gb=0.5).disk.budget_bytes == 5 * 10**8
    with pytest.raises(ValueError, match="keep at least 1"):
        DiskRules(keep_checkpoints=0)


def test_a_run_is_refused_before_it_starts_when_its_checkpoints_do_not_fit(tmp_path):
    from bertdemo.pretrain import TrainConfig

    cfg = TrainConfig.from_flat(preset="bert-mini")
    one = budget.checkpoint_bytes(cfg)
    cap = int(one * 1.5)
    assert budget.check_disk(cfg, tmp_path, DiskRules(1, cap, (tmp_path,), keep_milestones=0)) == one
    with pytest.raises(ValueError, match="keeps at most .* Delete earlier runs"):
        budget.check_disk(cfg, tmp_path, DiskRules(2, cap, (tmp_path,)))


def test_a_public_server_refuses_a_web_address_as_a_file_before_gradio_fetches_it(tmp_path):
    """A file input given ``{"path": "https://…"}`` was downloaded by gradio into its cache before any
    handler ran: no size cap, outside the upload budget. A public server refuses it."""

    import gradio as gr
    from gradio import processing_utils

    from bertdemo.context import AppContext
    from bertdemo.ui import build_app
    from bertdemo.ui.request_limits import URL_REFUSED

    demo = build_app(AppContext.for_tests(tmp_path, public=True))
    upload = next(c for c in demo.blocks.values() if getattr(c, "elem_id", None) == "pt-upload")
    for url in ("https://example.com/big.txt", "http://203.0.113.9/x.txt"):
        payload = {"path": url, "url": url, "orig_name": "big.txt", "meta": {"_type": "gradio.FileData"}}
        with pytest.raises(gr.Error) as refused:
            run_coroutine(processing_utils.async_move_files_to_cache(payload, upload, check_in_upload_folder=True))
        assert refused.value.message == URL_REFUSED

"""Public mode, training: caps and memory estimate, uploads, NaN losses, run ownership, and the device
choice on ZeroGPU Spaces (models: test_public_models.py; flags: test_app.py)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from bertdemo.models import device as device_mod
from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain import TrainConfig, limits
from bertdemo.pretrain import checkpoint as ckpt
from bertdemo.pretrain.corpus import check_upload, open_corpus
from bertdemo.pretrain.form import NOT_YOURS_RESUME, config_from_settings
from bertdemo.pretrain.loop import Trainer, run_training
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.run import RunManager


# --- pretraining caps and memory --------------------------------------------------------------

def test_public_caps_have_clear_messages():
    cap = limits.Limits()
    limits.check_public(TrainConfig(), cap)  # the default run fits
    with pytest.raises(ValueError, match="parameters"):
        limits.check_public(TrainConfig.from_flat(preset="bert-small"), cap)
    with pytest.raises(ValueError, match="steps"):
        limits.check_public(TrainConfig.from_flat(steps=6000), cap)
    with pytest.raises(ValueError, match="128 × 128 = 16,384"):
        limits.check_public(TrainConfig.from_flat(batch_size=128), cap)


def test_memory_estimate_calibrated_and_refuses_what_does_not_fit():
    one = TrainConfig.from_flat(preset="bert-small", batch_size=2, seq_len=512)
    two = TrainConfig.from_flat(preset="bert-small", batch_size=4, seq_len=512)
    per_sequence = (limits.estimate_memory_bytes(two) - limits.estimate_memory_bytes(one)) / 2
    assert 150e6 < per_sequence < 260e6  # "about 180 MB per 512-token sequence" (+ masked logits)
    assert limits.available_memory_bytes() > 0
    with pytest.raises(ValueError, match="GB of memory"):
        limits.check_memory(TrainConfig.from_flat(preset="bert-small", batch_size=256, seq_len=512),
                            available=8 * 2**30)
    assert limits.check_memory(TrainConfig(), available=8 * 2**30) > 0


def test_public_form_refuses_server_settings(tmp_path):
    runs, uploads = tmp_path / "runs", tmp_path / "uploads"
    uploads.mkdir()
    cap = limits.Limits()
    for settings in ({"cache_dir": "/tmp"}, {"device": "cuda"}, {"num_threads": 64}, {"init_from": "/models/x"},
                     {"runs_dir": "/"}):
        with pytest.raises(ValueError, match="cannot be set on this public server"):
            config_from_settings(settings, str(runs), public=cap)
    with pytest.raises(ValueError, match=NOT_YOURS_RESUME):
        config_from_settings({"resume_from": str(tmp_path / "elsewhere"), "steps": 10}, str(runs), public=cap)
    with pytest.raises(ValueError, match=NOT_YOURS_RESUME):
        config_from_settings({"resume_from": str(runs / ".." / "x"), "steps": 10}, str(runs), public=cap)
    with pytest.raises(ValueError, match="corpus is 'wiki'"):
        config_from_settings({"corpus": "/etc/passwd"}, str(runs), public=cap)
    outside = tmp_path / "notes.txt"
    outside.write_text("Some text.")
    with pytest.raises(ValueError, match="Upload your file on the page"):
        config_from_settings({"corpus": "upload", "upload": str(outside)}, str(runs), public=cap,
                             upload_root=str(uploads))
    with pytest.raises(ValueError, match="parameters"):
        config_from_settings({"preset": "bert-small"}, str(runs), public=cap)
    mine = uploads / "mine.txt"
    mine.write_text("A paragraph of text.\n\nAnother one.")
    cfg = config_from_settings({"corpus": "upload", "upload": str(mine)}, str(runs), public=cap,
                               upload_root=str(uploads))
    assert cfg.data.corpus == str(mine)
    assert config_from_settings({"device": "cuda", "corpus": "/x.txt"}, str(runs)).system.device == "cuda"  # local


# --- uploads -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, data, message", [
    ("empty.txt", b"  \n", "is empty"),
    ("binary.txt", b"PK\x03\x04\x00\x00 zip", "binary"),
    ("latin.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "not UTF-8"),
    ("records.jsonl", b'{"body": "no text field"}\n', 'no "text" field'),
    ("image.png", b"\x89PNG", "not a .txt or .jsonl"),
])
def test_bad_uploads_get_their_own_message_without_the_folder(tmp_path, name, data, message):
    path = tmp_path / "server-folder" / name
    path.parent.mkdir()
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as err:
        check_upload(path)
    assert name in str(err.value) and "server-folder" not in str(err.value)
    if path.suffix != ".png":
        with pytest.raises(ValueError, match=message):
            open_corpus(str(path))


def test_good_uploads_read(tmp_path):
    txt = tmp_path / "a.txt"
    txt.write_bytes("\ufeffOne paragraph.\n\nTwo paragraphs: caf\u00e9.".encode("utf-8"))
    assert open_corpus(str(txt)).n_docs == 2
    jsonl = tmp_path / "b.jsonl"
    jsonl.write_text('{"text": "one"}\n\n{"text": "two"}\n', encoding="utf-8")
    assert check_upload(jsonl) == jsonl and open_corpus(str(jsonl)).n_docs == 2


# --- NaN losses ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "wiki200.jsonl"
    path.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]), encoding="utf-8")
    return str(path)


def _tiny(corpus, tmp_path, **kw) -> TrainConfig:
    base = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus=corpus, seq_len=32, batch_size=8, steps=40, lr=3e-3, warmup_steps=2, log_every=5,
                eval_every=100, eval_batches=2, checkpoint_every=10, cache_dir=str(tmp_path / "cache"),
                runs_dir=str(tmp_path / "runs"), device="cpu", num_threads=1)
    base.update(kw)
    return TrainConfig.from_flat(**base)


@pytest.mark.parametrize("log_every, nan_after, failed_at, good_step", [(5, 12, 15, 10), (20, 7, 10, 0)])
def test_nan_loss_fails_the_run_and_keeps_the_last_good_checkpoint(
        corpus_file, tmp_path, monkeypatch, log_every, nan_after, failed_at, good_step):
    original = Trainer.train_step

    def poisoned(self):
        original(self)
        if self.step > nan_after:
            self.loss_sum.fill_(math.nan)
    monkeypatch.setattr(Trainer, "train_step", poisoned)
    metrics = MetricsBuffer(run_id="nan", status="preparing")
    checkpoint = tmp_path / "runs" / "nan" / "checkpoint"
    with pytest.raises(ValueError, match=f"NaN at step {failed_at}"):  # the main thread re-raises
        run_training(_tiny(corpus_file, tmp_path, log_every=log_every), metrics=metrics, checkpoint_dir=checkpoint)
    assert metrics.get("status") == "failed"
    assert metrics.get("message").startswith(f"The loss became NaN at step {failed_at}: lower the learning rate")
    if good_step:
        assert ckpt.read_state(checkpoint)["step"] == good_step  # the last good checkpoint stays
    else:
        assert not checkpoint.exists()  # the only save was due after the NaN: nothing written


# --- run ownership and the wall-time cap --------------------------------------------------------

def test_owner_controls_and_time_limit(corpus_file, tmp_path):
    manager = RunManager(tmp_path / "runs")
    run = manager.start(_tiny(corpus_file, tmp_path, steps=100000, checkpoint_every=0), owner="secret-a",
                        max_seconds=1.0)
    try:
        assert run.may_control("secret-a") and not run.may_control("someone-else") and not run.may_control("")
        assert run.may_control("someone-else", admin=True)
        assert run.join(60), "the wall-time cap did not stop the run"
    finally:
        run.stop()
        run.join(30)
    assert run.status == "stopped" and "minute limit" in run.snapshot().message


def test_stop_from_another_visitor_is_refused(monkeypatch):
    import gradio as gr

    from bertdemo.ui import pretrain_tab
    monkeypatch.setenv(pretrain_tab.ADMIN_ENV, "admin-secret")
    assert pretrain_tab.is_admin("admin-secret") and not pretrain_tab.is_admin("") and not pretrain_tab.is_admin("x")
    monkeypatch.delenv(pretrain_tab.ADMIN_ENV)
    assert not pretrain_tab.is_admin("")
    assert gr  # the tab's wiring is covered end to end in tests/e2e/test_public_app.py


# --- flags and devices ----------------------------------------------------------------------------

def test_zero_gpu_main_process_stays_on_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert device_mod.resolve_device("auto").type == "cpu"
    monkeypatch.delenv("SPACES_ZERO_GPU")
    assert device_mod.resolve_device("auto").type == "cuda"

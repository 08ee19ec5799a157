"""Public mode, training: caps and memory estimate, uploads, NaN losses, run ownership, and the device
choice on ZeroGPU Spaces (models: test_public_models.py; flags: test_app.py)."""

from __future__ import annotations

import json
import math
import os
import threading
import time

import pytest
import torch

from bertdemo.models import device as device_mod
from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain import TrainConfig, budget as limits, checkpoints as ckpt
from bertdemo.pretrain.data import check_upload, open_corpus
from bertdemo.pretrain.form import NOT_YOURS_RESUME, config_from_settings
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.run import TrainingRun
from bertdemo.pretrain.service import PretrainService
from bertdemo.pretrain.trainer import Trainer, run_training
from bertdemo.runs import folders as run_folders
from bertdemo.runs.service import NOT_YOURS, RunAction, RunService
from bertdemo.settings import ServerSettings
from tests.helpers import FakeClock, tiny_run_config, wait_until

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
    with pytest.raises(ValueError, match="1,000,000 held-out batches per evaluation"):
        limits.check_public(TrainConfig.from_flat(eval_batches=1_000_000), cap)  # an evaluation that never ends


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
            config_from_settings(settings, str(runs), public_limits=cap)
    with pytest.raises(ValueError, match=NOT_YOURS_RESUME):
        config_from_settings({"resume_from": str(tmp_path / "elsewhere"), "steps": 10}, str(runs), public_limits=cap)
    with pytest.raises(ValueError, match=NOT_YOURS_RESUME):
        config_from_settings({"resume_from": str(runs / ".." / "x"), "steps": 10}, str(runs), public_limits=cap)
    with pytest.raises(ValueError, match="corpus is 'wiki'"):
        config_from_settings({"corpus": "/etc/passwd"}, str(runs), public_limits=cap)
    outside = tmp_path / "notes.txt"
    outside.write_text("Some text.")
    with pytest.raises(ValueError, match="Upload your file on the page"):
        config_from_settings({"corpus": "upload", "upload": str(outside)}, str(runs), public_limits=cap,
                             upload_root=str(uploads))
    with pytest.raises(ValueError, match="parameters"):
        config_from_settings({"preset": "bert-small"}, str(runs), public_limits=cap)
    mine = uploads / "mine.txt"
    mine.write_text("A paragraph of text.\n\nAnother one.")
    cfg = config_from_settings({"corpus": "upload", "upload": str(mine)}, str(runs), public_limits=cap,
                               upload_root=str(uploads))
    assert cfg.data.corpus == str(mine)
    assert config_from_settings({"device": "cuda", "corpus": "/x.txt"}, str(runs)).system.device == "cuda"  # local


# --- uploads -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, data, message", [
    ("empty.txt", b"  \n", "is empty"),
    ("binary.txt", b"PK\x03\x04\x00\x00 zip", "binary"),
    ("latin.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "not UTF-8"),
    ("records.jsonl", b'{"body": "no text field"}\n', 'no "text" field'),
    ("nested.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deeply"),
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


SAVING = dict(eval_every=100, checkpoint_every=10, steps=40)  # the tests' tiny run, saving every 10 steps


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
    folder = tmp_path / "runs" / "nan"
    with pytest.raises(ValueError, match=f"NaN at step {failed_at}"):  # asked to raise, as the CLI asks
        run_training(tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"),
                                     log_every=log_every), metrics=metrics, run_folder=folder,
                     raise_on_failure=True)
    assert metrics.get("status") == "failed"
    assert metrics.get("message").startswith(f"The loss became NaN at step {failed_at}: lower the learning rate")
    # the last good checkpoint stays; with (20, 7, 10) the only save was due after the NaN: nothing was written
    latest = ckpt.latest_checkpoint(folder)
    assert folder.exists() == (good_step > 0)
    assert (0 if latest is None else ckpt.read_state(latest)["step"]) == good_step


# --- run ownership and the wall-time cap --------------------------------------------------------

def _public_service(tmp_path, clock=None, admin_token: str = "admin-secret") -> PretrainService:
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", public=True, admin_token=admin_token,
                                    cache_dir=tmp_path / "cache")
    return PretrainService(RunService(settings, clock=clock or FakeClock()))


def _start_in_slot(service: PretrainService, cfg, owner_token: str = "", max_seconds: float | None = None) -> TrainingRun:
    """A run started straight in the slot (no start checks: the rules under test are the slot's)."""
    return service.manager.start_run(TrainingRun(cfg, service.runs_dir, owner_token=owner_token,
                                                 max_seconds=max_seconds, clock=service.manager.clock))


def test_the_time_cap_stops_a_run_on_the_servers_clock(corpus_file, tmp_path):
    clock = FakeClock()
    service = _public_service(tmp_path, clock)
    run = _start_in_slot(service, tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"), steps=100000, checkpoint_every=0),
                                owner_token="secret-a", max_seconds=600.0)
    try:
        wait_until(lambda: run.snapshot().step >= 2 or not run.active, message=lambda: run.snapshot().message)
        assert run.active and run.time_left() == 600.0  # the clock has not moved: no time used
        clock.now += 601  # ten minutes later
        assert run.time_left() == 0.0
        assert run.join(60), "the wall-time cap did not stop the run"
    finally:
        run.stop()
        run.join(30)
    assert run.status == "stopped" and "10-minute limit" in run.snapshot().message
    # the run's end ends its cap watcher (no thread waits ten minutes for a run that is over)
    wait_until(lambda: not any(t.name.startswith("run-cap")
                               for t in threading.enumerate()), timeout=10)


def test_stop_from_another_visitor_is_refused_and_the_admin_may_stop(corpus_file, tmp_path):
    service = _public_service(tmp_path)
    with pytest.raises(ValueError, match="no run to control"):
        service.runs.control(RunAction.STOP, "secret-a")
    run = _start_in_slot(service, tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"), steps=100000, checkpoint_every=0), owner_token="secret-a")
    try:
        wait_until(lambda: run.snapshot().step >= 1 or not run.active, message=lambda: run.snapshot().message)
        for action in RunAction:
            for stranger in ("someone-else", "", "sécret-ä", "\udcff"):  # a non-ASCII token is just not theirs
                with pytest.raises(ValueError, match=NOT_YOURS):
                    service.runs.control(action, stranger)
        with pytest.raises(ValueError, match=NOT_YOURS):
            service.runs.control(RunAction.PAUSE, "admin-secret")  # the admin may stop a run, not steer it
        with pytest.raises(ValueError, match=NOT_YOURS):
            service.set_probe("A [MASK] here.", "someone-else")
        assert service.runs.control(RunAction.PAUSE, "secret-a").status in ("running", "paused")
        wait_until(lambda: run.control.paused_at)
        service.runs.control(RunAction.RESUME, "secret-a")
        assert run.active and not run.control.stop_event.is_set()  # nothing a stranger did stopped it
        service.runs.control(RunAction.STOP, "admin-secret")
        assert run.join(60) and run.status == "stopped"
    finally:
        run.stop()
        run.join(30)


def test_only_the_owner_or_the_admin_deletes_an_ended_run(corpus_file, tmp_path):
    service = _public_service(tmp_path)
    run = _start_in_slot(service, tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"), steps=100000, checkpoint_every=1),
                                owner_token="secret-a")
    try:
        wait_until(lambda: run.snapshot().last_checkpoint or not run.active, message=lambda: run.snapshot().message)
        with pytest.raises(ValueError, match="still active"):
            service.delete(run.run_id, "secret-a")
    finally:
        run.stop()
        assert run.join(60) and run.status == "stopped"
    with pytest.raises(ValueError, match="Only the browser that started this run"):
        service.delete(run.run_id, "someone-else")
    with pytest.raises(ValueError, match="No such run"):
        service.delete("../runs", "admin-secret")
    assert service.snapshot().run_id == run.run_id  # refused deletes change nothing
    service.delete(run.run_id, "admin-secret")
    assert service.list_runs() == []
    assert service.snapshot() is None  # the deleted run's status leaves the page


def test_a_refused_start_writes_nothing(corpus_file, tmp_path):
    from filelock import FileLock

    service = _public_service(tmp_path)
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    with (FileLock(runs_dir / ".active-run.lock").acquire(timeout=0),  # another process trains on this machine
          pytest.raises(ValueError, match="Another process on this machine")):
        _start_in_slot(service, tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"), steps=4), owner_token="secret-a")
    assert sorted(p.name for p in runs_dir.iterdir()) == [".active-run.lock"]  # no empty run folder left


def test_run_references_name_runs_without_their_server_folder(tmp_path):
    service = PretrainService(RunService(ServerSettings.build(runs_dir=tmp_path / "runs")))
    target = tmp_path / "runs" / "20260101-000000-bert-tiny" / "steps" / "step-1"
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}", encoding="utf-8")
    (target / ckpt.STATE_FILE).write_text('{"step": 1}', encoding="utf-8")
    (target.parent.parent / ckpt.LATEST_FILE).write_text("step-1\n", encoding="utf-8")
    name = service.run_reference(target)
    assert name == "run:20260101-000000-bert-tiny/checkpoint" and service.resolve_run_reference(name) == str(target)
    assert service.resolve_run_reference("bert-base-uncased") is None
    for bad in ("run:../runs", "run:.uploads/checkpoint", "run:nope/checkpoint", "run:20260101-000000-bert-tiny"):
        with pytest.raises(ValueError, match="There is no run") as err:
            service.resolve_run_reference(bad)
        assert str(tmp_path) not in str(err.value)


# --- flags and devices ----------------------------------------------------------------------------

def test_zero_gpu_main_process_stays_on_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert device_mod.resolve_device("auto").type == "cpu"
    monkeypatch.delenv("SPACES_ZERO_GPU")
    assert device_mod.resolve_device("auto").type == "cuda"


def _leftover_run(runs_dir, run_id: str, token: str, age_s: float = 0.0, visitor: str = "") -> None:
    """A run folder that never saved (as a failed or killed run leaves it), owned by ``token``, started
    from the address ``visitor``."""
    folder = runs_dir / run_id
    folder.mkdir(parents=True)
    run_folders.record_owner(folder, token)
    run_folders.record_visitor(folder, visitor)
    if age_s:
        then = time.time() - age_s
        for path in (folder / run_folders.OWNER_FILE, folder):
            os.utime(path, (then, then))


def test_one_visitor_keeps_a_few_runs_and_old_ones_expire(corpus_file, tmp_path):
    service = _public_service(tmp_path)
    runs_dir = tmp_path / "runs"
    for k in range(3):
        _leftover_run(runs_dir, f"20260101-00000{k}-bert-tiny", "tok-a")
    _leftover_run(runs_dir, "20250101-000000-bert-tiny", "tok-c", age_s=25 * 3600)  # ended a day ago
    build = runs_dir / "twin-pairs"  # a build's work folder (build_twin_pairs' default), as old: not the server's
    (build / "corpus.jsonl").parent.mkdir(parents=True)
    (build / "corpus.jsonl").write_text('{"text": "The dog barked."}\n')
    then = time.time() - 25 * 3600
    for path in (build / "corpus.jsonl", build):
        os.utime(path, (then, then))
    with pytest.raises(ValueError, match="You keep 3 runs on this server, the most one visitor may"):
        service.start(tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs")),
                                      owner_token="tok-a")
    assert not (runs_dir / "20250101-000000-bert-tiny").exists()  # expired when a start was asked for
    assert (build / "corpus.jsonl").read_text() == '{"text": "The dog barked."}\n'  # never the server's to expire
    service.delete("20260101-000000-bert-tiny", "tok-a")  # a run that never saved can be deleted by its owner
    with pytest.raises(ValueError, match="Only the browser that started this run"):
        service.delete("20260101-000001-bert-tiny", "tok-b")
    run = service.start(tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"), steps=5000,
                                        checkpoint_every=0), owner_token="tok-a")
    try:
        assert run.active and max(run_folders.runs_owned_by(runs_dir, "tok-a")) == run.run_id
    finally:
        run.stop()
        run.join(30)


def test_a_visitor_who_makes_up_a_token_per_run_is_still_one_visitor(corpus_file, tmp_path):
    service = _public_service(tmp_path)
    runs_dir = tmp_path / "runs"
    for k in range(3):
        _leftover_run(runs_dir, f"20260101-00000{k}-bert-tiny", f"made-up-{k}", visitor="203.0.113.5")
    with pytest.raises(ValueError, match="You keep 3 runs on this server, the most one visitor may"):
        service.start(tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs")),
                                      owner_token="made-up-3", visitor="203.0.113.5")
    run = service.start(tiny_run_config(corpus_file, tmp_path, SAVING, runs_dir=str(tmp_path / "runs"), steps=5000,
                                        checkpoint_every=0), owner_token="tok-other",
                        visitor="198.51.100.7")  # another address still starts a run
    try:
        assert (runs_dir / run.run_id / run_folders.VISITOR_FILE).is_file()
        assert run_folders.runs_owned_by(runs_dir, "", "198.51.100.7") == [run.run_id]  # recorded for its quota
        assert "198.51.100.7" not in (runs_dir / run.run_id / run_folders.VISITOR_FILE).read_text()  # a digest only
    finally:
        run.stop()
        run.join(30)

"""Public mode (issue 10): which models load, training caps and memory estimate, uploads, NaN losses,
run ownership, the flags, and the device choice on ZeroGPU Spaces."""

from __future__ import annotations

import json
import math
import threading

import pytest
import torch

import app
from bertdemo.models import device as device_mod
from bertdemo.models import policy, store
from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain import TrainConfig
from bertdemo.pretrain import budget as limits
from bertdemo.pretrain import runs as ckpt
from bertdemo.pretrain.data import check_upload, open_corpus
from bertdemo.pretrain.form import NOT_YOURS_RESUME, config_from_settings
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.service import NOT_YOURS, RunAction, RunService
from bertdemo.pretrain.trainer import Trainer, run_training
from bertdemo.settings import ServerSettings
from tests.helpers import FakeClock, tiny_bert_config, wait_until


@pytest.fixture
def public(tmp_path, monkeypatch):
    """Public mode on, with a runs folder holding one run checkpoint; off again afterwards."""
    runs = tmp_path / "runs"
    ckpt = runs / "20260101-000000-bert-tiny" / "checkpoint"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    policy.set_public(runs, max_model_gb=1.5)
    yield runs
    policy.set_local()


# --- models --------------------------------------------------------------------------------

def test_public_mode_refuses_every_path_with_one_message(public, tmp_path):
    (tmp_path / "secret-model").mkdir()
    (tmp_path / "secret-model" / "config.json").write_text("{}")
    (public / ".uploads" / "abc").mkdir(parents=True)
    refused = ["/etc", "/no/such/folder", str(tmp_path / "secret-model"), "./secret-model",
               "../x", "~/x", str(public / ".." / "secret-model"), str(public / "no-such-run"),
               str(public / ".uploads" / "abc"), str(public), str(next(public.glob("*")))]
    messages = set()
    for name in refused:
        with pytest.raises(ValueError) as err:
            store._resolve(name)
        messages.add(str(err.value))
    assert messages == {policy.REFUSED}  # the same words whether or not the path exists
    assert str(tmp_path) not in policy.REFUSED


@pytest.mark.parametrize("reachable", [False, True])
def test_a_hub_shaped_name_does_not_tell_whether_such_a_folder_exists(public, tmp_path, monkeypatch, reachable):
    (tmp_path / "secret-model").mkdir()
    (tmp_path / "secret-model" / "config.json").write_text("{}")
    monkeypatch.setattr(store.hub, "hub_reachable", lambda: reachable)

    def answer(name: str) -> str:
        try:
            store.load_masked_lm(name, "cpu")
        except ValueError as err:
            return str(err).replace(name, "NAME")
        raise AssertionError(f"{name} loaded")

    import transformers

    def missing(*args, **kwargs):  # what the hub says of a model it does not have
        raise OSError(f"{args[0]} is not a local folder and is not a valid model identifier listed on the hub")
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", missing)
    monkeypatch.setattr(policy, "check_hub_size", lambda *a, **k: None)
    assert answer("secret-model") == answer("secret-modelx")
    assert "secret-model" not in answer("secret-model") and "folder" not in answer("secret-model")


def test_load_errors_say_what_to_change_without_server_paths():
    cases = {
        OSError("Error no file named model.safetensors found in directory /srv/x/models/a."): "safetensors only",
        OSError("Error no file named model.safetensors, or pytorch_model.bin, found in directory /srv/x."):
            "has no weights file",
        OSError(36, "File name too long"): "too long",
        ValueError("Unrecognized model in /srv/x/a. Should have a `model_type` key in its config.json."):
            "names no model type",
        RuntimeError("Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will "
                     "likely succeed"): "pickle that cannot be loaded safely",
        RuntimeError("something odd in /srv/secret/place/file.bin, really"): "<folder>",
    }
    for exc, words in cases.items():
        message = policy.explain_load_error("a", exc)
        assert words in message and "/srv" not in message and "weights_only" not in message, message
    with pytest.raises(ValueError, match="characters long"):
        policy.screen("x" * 300)


def test_public_mode_allows_hub_ids_embedded_and_own_runs(public, monkeypatch):
    monkeypatch.setattr(store.hub, "hub_reachable", lambda: False)
    assert store._resolve("bert-base-uncased")[0] == "hub cache"
    assert store._resolve("google/bert_uncased_L-2_H-128_A-2")[0] == "hub cache"
    run = str(next(public.glob("*/checkpoint")))
    assert store._resolve(run)[:2] == ("local", run)
    assert policy.load_kwargs() == {"use_safetensors": True}


def test_operator_model_stays_loadable(tmp_path):
    policy.set_public(tmp_path / "runs", allowed=(str(tmp_path),))
    try:
        assert policy.screen(str(tmp_path)) is None
        with pytest.raises(ValueError, match="Only hub ids"):
            policy.screen(str(tmp_path.parent))
    finally:
        policy.set_local()


def test_local_mode_keeps_full_power(tmp_path):
    assert policy.screen(str(tmp_path)) is None and policy.load_kwargs() == {}
    (tmp_path / "config.json").write_text("{}")
    assert store._resolve(str(tmp_path))[0] == "local"


def test_hub_size_cap_before_download(public, monkeypatch):
    with pytest.raises(ValueError, match="1.5 GB"):
        policy.check_hub_size("bert-large-uncased", size_bytes=int(2.0e9))
    policy.check_hub_size("bert-base-uncased", size_bytes=int(0.44e9))

    class Sibling:
        def __init__(self, name, size):
            self.rfilename, self.size = name, size

    class Info:
        siblings = [Sibling("model.safetensors", int(3e9)), Sibling("pytorch_model.bin", int(3e9)),
                    Sibling("config.json", 600)]

    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, "model_info", lambda *a, **k: Info())
    monkeypatch.setattr(store.hub, "hub_reachable", lambda: True)
    with pytest.raises(ValueError, match="3.0 GB"):
        store._resolve("someone/huge-bert")


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
    with pytest.raises(ValueError, match=f"NaN at step {failed_at}"):  # asked to raise, as the CLI asks
        run_training(_tiny(corpus_file, tmp_path, log_every=log_every), metrics=metrics, checkpoint_dir=checkpoint,
                     raise_on_failure=True)
    assert metrics.get("status") == "failed"
    assert metrics.get("message").startswith(f"The loss became NaN at step {failed_at}: lower the learning rate")
    if good_step:
        assert ckpt.read_state(checkpoint)["step"] == good_step  # the last good checkpoint stays
    else:
        assert not checkpoint.exists()  # the only save was due after the NaN: nothing written


# --- run ownership and the wall-time cap --------------------------------------------------------

def _public_service(tmp_path, clock=None, admin_token: str = "admin-secret") -> RunService:
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", public=True, admin_token=admin_token,
                                    cache_dir=tmp_path / "cache")
    return RunService(settings, clock=clock or FakeClock())


def test_the_time_cap_stops_a_run_on_the_servers_clock(corpus_file, tmp_path):
    clock = FakeClock()
    service = _public_service(tmp_path, clock)
    run = service.manager.start(_tiny(corpus_file, tmp_path, steps=100000, checkpoint_every=0),
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
    # the run's end cancels its real-time timer (no thread waits ten minutes for a run that is over)
    wait_until(lambda: not any(isinstance(t, threading.Timer) and t.name.startswith("run-cap")
                               for t in threading.enumerate()), timeout=10)


def test_stop_from_another_visitor_is_refused_and_the_admin_may_stop(corpus_file, tmp_path):
    service = _public_service(tmp_path)
    with pytest.raises(ValueError, match="no run to control"):
        service.control(RunAction.STOP, "secret-a")
    run = service.manager.start(_tiny(corpus_file, tmp_path, steps=100000, checkpoint_every=0), owner_token="secret-a")
    try:
        wait_until(lambda: run.snapshot().step >= 1 or not run.active, message=lambda: run.snapshot().message)
        for action in RunAction:
            for stranger in ("someone-else", ""):
                with pytest.raises(ValueError, match=NOT_YOURS):
                    service.control(action, stranger)
        with pytest.raises(ValueError, match=NOT_YOURS):
            service.control(RunAction.PAUSE, "admin-secret")  # the admin may stop a run, not steer it
        with pytest.raises(ValueError, match=NOT_YOURS):
            service.set_probe("A [MASK] here.", "someone-else")
        assert service.control(RunAction.PAUSE, "secret-a").status in ("running", "paused")
        wait_until(lambda: run.control.paused_at)
        service.control(RunAction.RESUME, "secret-a")
        assert run.active and not run.control.stop_event.is_set()  # nothing a stranger did stopped it
        service.control(RunAction.STOP, "admin-secret")
        assert run.join(60) and run.status == "stopped"
    finally:
        run.stop()
        run.join(30)


def test_only_the_owner_or_the_admin_deletes_an_ended_run(corpus_file, tmp_path):
    service = _public_service(tmp_path)
    run = service.manager.start(_tiny(corpus_file, tmp_path, steps=100000, checkpoint_every=1),
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
    service.delete(run.run_id, "admin-secret")
    assert service.list_runs() == []


def test_a_refused_start_writes_nothing(corpus_file, tmp_path):
    from filelock import FileLock

    service = _public_service(tmp_path)
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    with FileLock(runs_dir / ".active-run.lock").acquire(timeout=0):  # another process trains on this machine
        with pytest.raises(ValueError, match="Another process on this machine"):
            service.manager.start(_tiny(corpus_file, tmp_path, steps=4), owner_token="secret-a")
    assert sorted(p.name for p in runs_dir.iterdir()) == [".active-run.lock"]  # no empty run folder left


def test_run_references_name_runs_without_their_server_folder(tmp_path):
    service = RunService(ServerSettings.build(runs_dir=tmp_path / "runs"))
    target = tmp_path / "runs" / "20260101-000000-bert-tiny" / ckpt.CHECKPOINT_DIRNAME
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}", encoding="utf-8")
    name = service.run_reference(target)
    assert name == "run:20260101-000000-bert-tiny/checkpoint" and service.resolve_run_reference(name) == str(target)
    assert service.resolve_run_reference("bert-base-uncased") is None
    for bad in ("run:../runs", "run:.uploads/checkpoint", "run:nope/checkpoint", "run:20260101-000000-bert-tiny"):
        with pytest.raises(ValueError, match="There is no run") as err:
            service.resolve_run_reference(bad)
        assert str(tmp_path) not in str(err.value)


# --- flags and devices ----------------------------------------------------------------------------

def test_public_mode_switches(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert not app.is_public(app.parse_args([]))
    assert app.is_public(app.parse_args(["--public"])) and app.is_public(app.parse_args(["--share"]))
    monkeypatch.setenv("SPACE_ID", "someone/bert-explorer")
    assert app.is_public(app.parse_args([]))
    args = app.parse_args(["--auth", "ann:pw1", "--auth", "bob:pw:2", "--max-upload-mb", "5", "--max-queue", "9"])
    assert args.auth == ["ann:pw1", "bob:pw:2"] and args.max_upload_mb == 5 and args.max_queue == 9
    with pytest.raises(SystemExit):
        app.parse_args(["--auth", "nopassword"])


def test_traffic_flags_reach_queue_and_launch(monkeypatch, tmp_path):
    import bertdemo.ui

    calls = {}

    class FakeDemo:
        def queue(self, **kw):
            calls["queue"] = kw
            return self

        def launch(self, **kw):
            calls["launch"] = kw

        def block_thread(self):
            calls["blocked"] = True

    def fake_build_app(store, **kw):
        calls["build"] = kw
        return FakeDemo()

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(bertdemo.ui, "build_app", fake_build_app)
    monkeypatch.setattr(app, "_preload", lambda store: None)
    try:
        app.main(["--offline", "--public", "--runs-dir", str(tmp_path), "--auth", "ann:pw", "--concurrency", "2",
                  "--max-queue", "10", "--max-upload-mb", "5", "--max-steps", "100"])
    finally:
        policy.set_local()
        from bertdemo.models import hub
        hub.set_offline(False)
    assert calls["queue"] == {"default_concurrency_limit": 2, "max_size": 10}
    assert calls["launch"]["auth"] == [("ann", "pw")] and calls["launch"]["max_file_size"] == 5 * 1024 * 1024
    assert calls["launch"]["prevent_thread_lock"] and calls["blocked"]  # served first, the logic loads after
    assert calls["build"]["public"] is True and calls["build"]["limits"].max_steps == 100


def test_mode_line():
    from bertdemo.ui.layout import mode_line
    assert mode_line(False).startswith("*Local mode")
    assert "12M parameters" in mode_line(True, limits.Limits())


def test_zero_gpu_main_process_stays_on_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert device_mod.resolve_device("auto").type == "cpu"
    monkeypatch.delenv("SPACES_ZERO_GPU")
    assert device_mod.resolve_device("auto").type == "cuda"


def test_runs_are_named_without_their_server_folder(tmp_path, monkeypatch):
    from transformers import AutoTokenizer, BertForMaskedLM

    from bertdemo.models import availability
    from bertdemo.models.embedded import tokenizer_dir

    runs = tmp_path / "srv" / "runs"
    target = runs / "20260101-000000-bert-tiny" / ckpt.CHECKPOINT_DIRNAME
    ckpt.write_checkpoint(target, BertForMaskedLM(tiny_bert_config()), AutoTokenizer.from_pretrained(str(tokenizer_dir())),
                          {}, {"step": 3}, "")
    monkeypatch.setattr(policy, "_runs_dir", None)
    policy.set_runs_dir(runs)
    name = policy.run_reference(target)
    assert name == "run:20260101-000000-bert-tiny/checkpoint" and policy.resolve_run_reference(name) == str(target)
    assert policy.run_reference(runs / "x" / "previous" / "step-2") == "run:x/previous/step-2"
    for bad in ("run:../srv", "run:.uploads/checkpoint", "run:nope/checkpoint", "run:a/b", "run:20260101-000000-bert-tiny"):
        with pytest.raises(ValueError, match="There is no run") as err:
            policy.resolve_run_reference(bad)
        assert str(tmp_path) not in str(err.value)
    loaded = store.load_masked_lm(name, "cpu")
    assert loaded.name == name and str(tmp_path) not in loaded.describe()
    assert not availability.is_hub_id(name) and availability.can_load_now(name)
    policy.set_public(tmp_path / "elsewhere")
    policy.set_runs_dir(runs)
    try:
        assert store.load_masked_lm(name, "cpu").name == name  # public mode too
    finally:
        policy.set_local()

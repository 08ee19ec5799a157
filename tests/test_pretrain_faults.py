"""A run that runs out of memory says which setting to lower, keeps its last checkpoint, and leaves
the process able to train again."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
import torch

from bertdemo.pretrain import checkpoints as ckpt, trainer as trainer_module
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import MetricsBuffer
from bertdemo.pretrain.trainer import Trainer, failure_message, is_out_of_memory, run_training
from tests.helpers import tiny_run_config


def tiny(corpus: str, tmp_path, **kw) -> TrainConfig:
    return tiny_run_config(corpus, tmp_path, **{"steps": 12, "log_every": 2, "eval_every": 4, "eval_batches": 1,
                                                "checkpoint_every": 4, **kw})


def test_out_of_memory_names_the_settings_to_lower(tmp_path, corpus):
    cfg = tiny(corpus, tmp_path, batch_size=256, seq_len=512)
    cuda_oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB")
    cpu_oom = RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: "
                           "you tried to allocate 48318382080 bytes.")
    assert is_out_of_memory(cuda_oom) and is_out_of_memory(cpu_oom) and not is_out_of_memory(RuntimeError("shape"))
    assert failure_message(cuda_oom, cfg, "cuda:0") == (
        "Out of GPU memory at batch size 256 × block length 512 on custom. Lower the batch size (e.g. to 128), "
        "the block length or the model size, and start again; the last checkpoint is kept.")
    assert failure_message(cpu_oom, cfg, "cpu").startswith("Out of CPU memory at batch size 256 × block length 512")
    assert failure_message(ValueError("No corpus."), cfg) == "No corpus."
    # a fault nobody planned for: its type and text, but no server folder (every visitor reads the status)
    full = OSError(28, "No space left on device", "/srv/app/runs/20260101-x/checkpoint/model.safetensors")
    assert failure_message(full, cfg) == ("OSError: [Errno 28] No space left on device: '<folder>' "
                                          "(the whole error is in the server's log)")


def test_a_run_out_of_memory_fails_clearly_and_keeps_its_checkpoint(tmp_path, corpus, monkeypatch):
    real_step = Trainer.train_step

    def step_then_run_out(self):
        if self.step == 6:  # after the checkpoint at step 4: the allocator gives up, as a too-large batch makes it
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 2147483648 bytes.")
        return real_step(self)

    monkeypatch.setattr(Trainer, "train_step", step_then_run_out)
    metrics = MetricsBuffer(run_id="oom")
    run_folder = tmp_path / "oom"
    result = []
    thread = threading.Thread(  # as the app runs it: a background thread reports instead of raising
        target=lambda: result.append(run_training(tiny(corpus, tmp_path), metrics=metrics,
                                                  run_folder=run_folder)))
    thread.start()
    thread.join(120)
    assert result == ["failed"]
    assert metrics.get("status") == "failed"
    assert metrics.get("message").startswith("Out of CPU memory at batch size 8 × block length 32")
    assert ckpt.read_state(ckpt.latest_checkpoint(run_folder))["step"] == 4  # the last good checkpoint stays loadable

    monkeypatch.setattr(Trainer, "train_step", real_step)  # the process trains again afterwards
    again = MetricsBuffer(run_id="again")
    assert run_training(tiny(corpus, tmp_path, steps=4), metrics=again,
                        run_folder=tmp_path / "again") == "finished"


def test_out_of_memory_cleanup_runs_when_nothing_holds_the_run_any_more(tmp_path, corpus, monkeypatch):
    """The cached device memory is handed back only once the failed step's frames (the trainer, its
    model and batch) are gone: inside the ``except`` block the traceback still holds them."""
    trainers = []
    real_init, real_step = Trainer.__init__, Trainer.train_step

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        trainers.append(weakref.ref(self))

    def step_then_run_out(self):
        real_step(self)
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    alive_at_release = []

    def release() -> None:
        gc.collect()
        alive_at_release.append(trainers[0]() is not None)

    monkeypatch.setattr(Trainer, "__init__", init)
    monkeypatch.setattr(Trainer, "train_step", step_then_run_out)
    monkeypatch.setattr(trainer_module, "release_device_memory", release)
    metrics = MetricsBuffer(run_id="oom")
    assert run_training(tiny(corpus, tmp_path), metrics=metrics, run_folder=tmp_path / "oom") == "failed"
    assert metrics.get("message").startswith("Out of CPU memory")
    assert alive_at_release == [False], "the trainer was still referenced when the memory was released"


def test_a_failure_is_reported_not_raised_unless_asked_whatever_the_thread(tmp_path, corpus):
    bad = tiny(corpus, tmp_path, device="no-such-device")
    metrics = MetricsBuffer(run_id="bad")
    assert run_training(bad, metrics=metrics, run_folder=tmp_path / "bad") == "failed"  # the main thread too
    assert metrics.get("status") == "failed"
    with pytest.raises(ValueError):
        run_training(bad, metrics=MetricsBuffer(), run_folder=tmp_path / "bad", raise_on_failure=True)

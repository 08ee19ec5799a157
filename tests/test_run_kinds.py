"""Every registered run kind gets the slot's guarantees: a refused start says how long the slot stays busy and
tells only the run's owner to stop it; a paused run still meets the public wall-time cap, stops, saves a
model stock transformers loads, and frees the slot. The kinds come from the app context's registry, so a
new kind is covered (or fails here until it has a tiny start below)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from transformers import AutoConfig

from bertdemo.context import AppContext
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.runs.service import RunAction
from bertdemo.settings import Limits
from tests.helpers import FakeClock, tiny_run_config, wait_until
from tests.test_finetune_engine import word_task

CAP_S = 600.0  # a public server's cap in these tests: reached by moving the clock, never by waiting


def _start_pretrain(service, folder: Path, corpus: str, mlm_dir: str, token: str):
    return service.start(tiny_run_config(corpus, folder, steps=5000, eval_every=5000, checkpoint_every=0),
                         token, visitor="10.0.0.1")


def _start_finetune(service, folder: Path, corpus: str, mlm_dir: str, token: str):
    cfg = FinetuneConfig(init="random", init_path=str(mlm_dir), learning_rate=3e-3, batch_size=8, epochs=20,
                         time_budget_s=0, eval_every=1000, eval_examples=50, num_threads=1)
    return service.start(cfg, token, visitor="10.0.0.1", task_loader=lambda: word_task(2000))


TINY_STARTS = {"pretrain": _start_pretrain, "finetune": _start_finetune}  # one per registered kind


def _context(tmp_path: Path, clock: FakeClock) -> AppContext:
    return AppContext.for_tests(tmp_path, public=True, clock=clock, admin_token="admin-secret",
                                limits=Limits(max_minutes=CAP_S / 60))


def test_every_registered_kind_has_a_tiny_start_here(tmp_path):
    assert sorted(_context(tmp_path, FakeClock()).runs.kinds.names()) == sorted(TINY_STARTS)


@pytest.mark.parametrize("kind_name", sorted(TINY_STARTS))
def test_a_paused_run_of_every_kind_meets_the_cap_saves_and_frees_the_slot(kind_name, tmp_path, corpus, tiny_mlm_dir):
    clock = FakeClock()
    ctx = _context(tmp_path, clock)
    kinds = {kind.name: kind for kind in ctx.runs.kinds}
    kind = kinds[kind_name]
    run = TINY_STARTS[kind_name](kind, tmp_path / "runs", corpus, tiny_mlm_dir, "tok-a")
    try:
        wait_until(lambda: run.snapshot().step >= 1 or not run.active, timeout=180, message=lambda: run.snapshot().message)
        assert run.active and run.kind == kind_name
        for other_name, other in kinds.items():  # a refused start: how long, and "stop it" only to its owner
            with pytest.raises(ValueError) as stranger:
                TINY_STARTS[other_name](other, tmp_path / "runs", corpus, tiny_mlm_dir, "tok-b")
            assert f"A {kind.label} run is already" in str(stranger.value)
            assert re.search(r"; the training slot stays busy for about \d+ (s|min) more\.", str(stranger.value))
            assert "belongs to another visitor" in str(stranger.value) and "stop it" not in str(stranger.value)
        with pytest.raises(ValueError, match="It is yours: stop it to start another now"):
            TINY_STARTS[kind_name](kind, tmp_path / "runs", corpus, tiny_mlm_dir, "tok-a")
        ctx.runs.control(RunAction.PAUSE, "tok-a")
        wait_until(lambda: run.status == "paused", timeout=120, message=lambda: run.snapshot().message)
        clock.now += CAP_S + 1  # the cap is reached while the run is paused
        wait_until(lambda: not run.active, timeout=180, what="the paused run to stop at the cap",
                   message=lambda: run.snapshot().message)
    finally:
        run.stop()
        run.join(120)
    assert run.status == "stopped" and "10-minute limit of this public server" in run.snapshot().message
    ctx.runs.manager.try_machine_lock().release()  # the slot is free on this machine too
    saved = kind.saved_model(run)
    assert saved is not None and AutoConfig.from_pretrained(saved).model_type == "bert"
    assert ctx.runs.status()["kind"] == kind_name

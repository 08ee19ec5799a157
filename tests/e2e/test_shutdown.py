"""A server told to stop (SIGTERM: a Space restarting, ``kill``; SIGINT: Ctrl-C) with a run in any state —
training, paused, evaluating, saving — of either kind saves the run and exits with code 0; the saved model
loads with stock transformers."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest
from gradio_client import Client
from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification

from tests.e2e.conftest import _read_log, launch_app, stop_app
from tests.helpers import wait_until

RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=100_000, lr=2e-3, warmup_steps=5, eval_every=100_000,
           checkpoint_every=0, seed=1)  # never saves on its own
SAVING = {**RUN, "checkpoint_every": 1}  # saves after every step: a signal finds it saving or about to
PRETRAINED = "20260101-000000-tiny"  # a run of the server's whose checkpoint a fine-tune starts from
FINETUNE = dict(epochs=20, time_budget_s=3600, eval_every=1000, seed=1)  # evaluates only at step 0 and the end
EVALUATING = {**FINETUNE, "eval_every": 5}  # a validation pass (500 examples) every 5 steps: mostly evaluating


def _status(client: Client, predicate, what: str, timeout_s: float = 180.0) -> dict:
    snaps = [{}]

    def reached() -> bool:
        snaps[0] = client.predict(api_name="/run_status") or {}
        assert snaps[0].get("status") not in {"failed", "stopped"}, (what, snaps[0])
        return bool(predicate(snaps[0]))

    wait_until(reached, timeout=timeout_s, interval=0.2, message=lambda: f"{what}: {snaps[0]}")
    return snaps[0]


def _pretrain(client: Client, settings: dict) -> dict:
    client.predict(settings, "", api_name="/start_run")
    return _status(client, lambda s: s.get("kind") == "pretrain" and s.get("step", 0) >= 3, "pretraining at step 3")


def _finetune(client: Client, settings: dict) -> dict:
    client.predict({"init": f"run:{PRETRAINED}/checkpoint", **settings}, "", api_name="/start_finetune")
    return _status(client, lambda s: s.get("kind") == "finetune" and s.get("step", 0) >= 1, "fine-tuning at step 1")


def _pause(client: Client) -> None:
    client.predict("", api_name="/pause_run")
    _status(client, lambda s: s.get("status") == "paused", "the run to pause")


CASES = {  # state -> (start the run and bring it there, how its saved model loads)
    "pretrain-training": (lambda c: _pretrain(c, RUN), AutoModelForMaskedLM),
    "pretrain-paused": (lambda c: (_pretrain(c, RUN), _pause(c)), AutoModelForMaskedLM),
    "pretrain-saving": (lambda c: _pretrain(c, SAVING), AutoModelForMaskedLM),
    "finetune-training": (lambda c: _finetune(c, FINETUNE), AutoModelForSequenceClassification),
    "finetune-paused": (lambda c: (_finetune(c, FINETUNE), _pause(c)), AutoModelForSequenceClassification),
    "finetune-evaluating": (lambda c: _finetune(c, EVALUATING), AutoModelForSequenceClassification),
}


def _saved_model(runs: Path, kind: str) -> Path:
    if kind == "pretrain":
        (run,) = [p for p in runs.iterdir() if (p / "LATEST").is_file() and p.name != PRETRAINED]
        return run / "steps" / (run / "LATEST").read_text().strip()
    (run,) = list((runs / ".finetune").iterdir())
    return run / "model"


SIGNALLED = [pytest.param(state, signal.SIGTERM, id=f"{state}-SIGTERM") for state in CASES] + [
    pytest.param(state, signal.SIGINT, id=f"{state}-SIGINT")  # Ctrl-C takes SIGTERM's path: two states hold it
    for state in ("pretrain-training", "finetune-paused")]


@pytest.mark.parametrize("state, sig", SIGNALLED)
def test_a_signal_saves_the_run_in_any_state_and_exits_cleanly(app_model_dir, tmp_path, state, sig):
    runs = tmp_path / "runs"
    step = runs / PRETRAINED / "steps" / "step-1"  # the tiny model, as a pretraining run of this server saved it
    shutil.copytree(app_model_dir, step)
    (step / "trainer_state.json").write_text('{"step": 1}')
    (step.parent.parent / "LATEST").write_text("step-1\n")
    bring, loader = CASES[state]
    url, proc = launch_app(["--offline", "--model", app_model_dir, "--runs-dir", str(runs)])
    try:
        client = Client(url, verbose=False)
        bring(client)
        kind = (client.predict(api_name="/run_status") or {})["kind"]
        proc.send_signal(sig)
        code = proc.wait(timeout=90)
        log = _read_log(proc.log_path)
        assert code == 0 and "terminate called" not in log, log
        folder = _saved_model(runs, kind)
        assert loader.from_pretrained(folder).config.model_type == "bert"
    finally:
        stop_app(proc)

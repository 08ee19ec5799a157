"""A server told to stop (SIGTERM: a Space restarting, ``kill``; Ctrl-C is the same handler, tests/test_app.py)
with runs in every state at once — training, paused, evaluating, saving — of every kind (pretraining, fine-tuning,
fine-tuning on the learner's own sentences; one server, ``--parallel-runs``) saves every run and exits with code 0;
each saved model loads with stock transformers, and an own-data run keeps its data and its result."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from gradio_client import Client
from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification

from bertdemo.finetune.own_run import DATA_FILE, RESULT_FILE
from tests.e2e.conftest import _read_log, launch_app, stop_app
from tests.helpers import WORDS, wait_until

RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=100_000, lr=2e-3, warmup_steps=5, eval_every=100_000,
           checkpoint_every=0, seed=1)  # never saves on its own
SAVING = {**RUN, "checkpoint_every": 1}  # saves after every step: a signal finds it saving or about to
PRETRAINED = "20260101-000000-tiny"  # a run of the server's whose checkpoint a fine-tune starts from
FINETUNE = dict(epochs=20, time_budget_s=3600, eval_every=1000, seed=1)  # evaluates only at step 0 and the end
EVALUATING = {**FINETUNE, "eval_every": 5}  # a validation pass (500 examples) every 5 steps: mostly evaluating
OWN = dict(epochs=20, batch_size=16, time_budget_s=3600, seed=1)  # the learner's own sentences: an epoch is 8 steps


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


def _own_lines(per_label: int = 100) -> str:
    """200 labelled sentences (label<TAB>text): a run on them splits train / validation / test (8 steps an epoch)."""
    return "\n".join(f"{label}\t the {words[i % 4]} and the {words[(i + 1) % 4]} are here{i} ."
                     for label, words in WORDS.items() for i in range(per_label))


def _own(client: Client) -> dict:
    client.predict({"init": f"run:{PRETRAINED}/checkpoint", "task": "own", "lines": _own_lines(), **OWN}, "",
                   api_name="/start_finetune")
    return _status(client, lambda s: s.get("kind") == "finetune" and s.get("task") == "own" and s.get("step", 0) >= 1,
                   "an own-data run at step 1")


def _pause(client: Client) -> None:
    client.predict("", api_name="/pause_run")
    _status(client, lambda s: s.get("status") == "paused", "the run to pause")


# state -> how to start its run and bring it there; each run is started once the one before it is in its state, so
# every state is held at once when the signal comes. The paused runs come first: a run that trains while the next
# ones start takes the CPU they start on (and the other test worker's). The own-data run comes last: it would end
# on its own (160 steps) while later ones started
CASES = {
    "pretrain-paused": lambda c: (_pretrain(c, RUN), _pause(c)),
    "finetune-paused": lambda c: (_finetune(c, FINETUNE), _pause(c)),
    "own-paused": lambda c: (_own(c), _pause(c)),
    "finetune-training": lambda c: _finetune(c, FINETUNE),
    "finetune-evaluating": lambda c: _finetune(c, EVALUATING),
    "pretrain-training": lambda c: _pretrain(c, RUN),
    "pretrain-saving": lambda c: _pretrain(c, SAVING),
    "own-training": _own,
}


def _saved(runs: Path) -> dict[str, list[Path]]:
    """Every run's saved folder by kind (the server's own earlier run left out): a pretraining run's latest checkpoint,
    a fine-tuning run's model, an own-data run's folder (its result and data; its model when an epoch was scored)."""
    pretrain = [run / "steps" / (run / "LATEST").read_text().strip() for run in sorted(runs.iterdir())
                if run.name != PRETRAINED and not run.name.startswith(".") and run.is_dir()]
    tuned = sorted((runs / ".finetune").iterdir()) if (runs / ".finetune").is_dir() else []  # none started
    return {"pretrain": pretrain, "finetune": [run / "model" for run in tuned if "-ft-own-" not in run.name],
            "own": [run for run in tuned if "-ft-own-" in run.name]}


def _check_own(folder: Path) -> None:
    """A stopped own-data run keeps its data and its result; its model when an epoch was scored before the stop."""
    result = json.loads((folder / RESULT_FILE).read_text())
    assert (folder / DATA_FILE).is_file() and result["stopped"] is True, result
    if result["chosen"] is not None:
        assert AutoModelForSequenceClassification.from_pretrained(folder / "model").config.model_type == "bert"


def test_a_signal_saves_every_run_in_any_state_and_exits_cleanly(app_model_dir, tmp_path):
    """SIGTERM with a run in every state at once. Ctrl-C (SIGINT) is the same handler (tests/test_app.py)."""
    states, sig = list(CASES), signal.SIGTERM
    runs = tmp_path / "runs"
    step = runs / PRETRAINED / "steps" / "step-1"  # the tiny model, as a pretraining run of this server saved it
    shutil.copytree(app_model_dir, step)
    (step / "trainer_state.json").write_text('{"step": 1}')
    (step.parent.parent / "LATEST").write_text("step-1\n")
    url, proc = launch_app(["--offline", "--model", app_model_dir, "--runs-dir", str(runs),
                            "--parallel-runs", str(len(states))])
    try:
        client = Client(url, verbose=False)
        for state in states:
            CASES[state](client)
        proc.send_signal(sig)
        code = proc.wait(timeout=120)
        log = _read_log(proc.log_path)
        assert code == 0 and "terminate called" not in log, log
        saved = _saved(runs)
        expected = {kind: sum(state.startswith(kind) for state in states) for kind in ("pretrain", "finetune", "own")}
        assert {kind: len(folders) for kind, folders in saved.items()} == expected, log
        loaders = {"pretrain": AutoModelForMaskedLM, "finetune": AutoModelForSequenceClassification}
        for kind, loader in loaders.items():
            for folder in saved[kind]:
                assert loader.from_pretrained(folder).config.model_type == "bert", folder
        for folder in saved["own"]:
            _check_own(folder)
    finally:
        stop_app(proc)

"""The cluster recipe of docs/pretraining.md on one machine: two torchrun agents as two nodes (c10d rendezvous on
127.0.0.1, gloo on CPU), the same command for both; then the same command again, which resumes."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForMaskedLM, AutoTokenizer

from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain import checkpoints
from bertdemo.pretrain.checkpoints import latest_checkpoint

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_nodes(tmp_path: Path, out: Path, steps: int) -> list[str]:
    """Run the same command as two agents at once; returns both agents' output."""
    corpus = tmp_path / "wiki200.jsonl"
    if not corpus.exists():
        corpus.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]), encoding="utf-8")
    port = _free_port()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
           f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-id=test-{port}", "--max-restarts=0",
           "-m", "bertdemo.pretrain", "--out", str(out), "--corpus", str(corpus), "--preset", "custom",
           "--num-hidden-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2", "--intermediate-size", "64",
           "--seq-len", "32", "--batch-size", "4", "--steps", str(steps), "--log-every", "2", "--eval-every", "4",
           "--eval-batches", "1", "--checkpoint-every", "0", "--cache-dir", str(tmp_path / "cache"), "--device", "cpu",
           "--num-threads", "1", "--auto-resume", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(2)]
    logs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n\n".join(log[-3000:] for log in logs)
    return logs


@pytest.mark.slow  # two torchrun agents: about a minute
def test_two_agents_as_two_nodes_train_then_resume(tmp_path) -> None:
    out = tmp_path / "job"
    logs = _two_nodes(tmp_path, out, steps=4)
    assert sum(log.count("finished: step 4/4") for log in logs) == 1, "only rank 0 reports and writes"
    assert json.loads((latest_checkpoint(out) / "trainer_state.json").read_text())["step"] == 4
    model = AutoModelForMaskedLM.from_pretrained(latest_checkpoint(out))  # what rank 0 wrote is a stock model
    assert model.config.hidden_size == 32 and model.config.num_hidden_layers == 1
    AutoTokenizer.from_pretrained(latest_checkpoint(out))
    # a restart: the same command with more steps continues from the checkpoint in --out
    logs = _two_nodes(tmp_path, out, steps=8)
    assert sum(log.count("finished: step 8/8") for log in logs) == 1
    assert [p.name for p in checkpoints.run_checkpoints(out)] == ["step-8", "step-4"]
    with open(latest_checkpoint(out) / "metrics.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["step"]) for r in rows if r["train_loss"]] == [2, 4, 6, 8]
    assert [int(r["step"]) for r in rows if r["eval_loss"]] == [0, 4, 8]
    # two processes, each 4 blocks of 32 tokens per step
    assert [int(r["tokens"]) for r in rows if r["train_loss"]] == [512, 1024, 1536, 2048]
    assert not [p for p in (out / "steps").iterdir() if p.name.startswith(".")], "no temp folders left"

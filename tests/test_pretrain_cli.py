"""Headless pretraining: `python -m bertdemo.pretrain`, alone and under torchrun (2 CPU processes, gloo)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from transformers import AutoModelForMaskedLM, AutoTokenizer

from bertdemo.models.embedded import wiki_summaries

REPO = Path(__file__).resolve().parents[1]


def _args(tmp_path: Path, out: Path) -> list[str]:
    corpus = tmp_path / "wiki200.jsonl"
    if not corpus.exists():
        corpus.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]), encoding="utf-8")
    return ["-m", "bertdemo.pretrain", "--out", str(out), "--corpus", str(corpus), "--preset", "custom",
            "--num-hidden-layers", "2", "--hidden-size", "32", "--num-attention-heads", "2", "--intermediate-size", "64", "--seq-len", "32",
            "--batch-size", "8", "--steps", "10", "--log-every", "5", "--eval-every", "5", "--eval-batches", "2",
            "--cache-dir", str(tmp_path / "cache"), "--device", "cpu", "--seed", "3", "--no-progress"]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _check_output(out: Path) -> None:
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert {"step", "train_loss", "eval_loss"} <= set(rows[0])
    assert [r["step"] for r in rows] == ["0", "5", "10"]
    assert rows[-1]["train_loss"] and rows[-1]["eval_loss"]
    model = AutoModelForMaskedLM.from_pretrained(out)
    assert model.config.hidden_size == 32
    AutoTokenizer.from_pretrained(out)
    assert json.loads((out / "trainer_state.json").read_text())["step"] == 10


def test_cli_and_torchrun_ddp(tmp_path) -> None:
    single = tmp_path / "single"
    proc = _run([sys.executable, *_args(tmp_path, single)])
    assert "finished: step 10/10" in proc.stderr
    _check_output(single)
    ddp = tmp_path / "ddp"
    proc = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                 *_args(tmp_path, ddp)])
    assert proc.stderr.count("finished: step 10/10") == 1, "only rank 0 reports and writes"
    _check_output(ddp)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temp folders left"

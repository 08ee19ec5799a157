"""Headless pretraining: `python -m bertdemo.pretrain` in one process (under torchrun, two agents as two nodes:
tests/test_pretrain_torchrun.py)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from transformers import AutoModelForMaskedLM, AutoTokenizer

from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain.__main__ import build_parser, main
from bertdemo.pretrain.checkpoints import latest_checkpoint

REPO = Path(__file__).resolve().parents[1]


def _args(tmp_path: Path, out: Path) -> list[str]:
    corpus = tmp_path / "wiki200.jsonl"
    if not corpus.exists():
        corpus.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]), encoding="utf-8")
    return ["-m", "bertdemo.pretrain", "--out", str(out), "--corpus", str(corpus), "--preset", "custom",
            "--num-hidden-layers", "2", "--hidden-size", "32", "--num-attention-heads", "2", "--intermediate-size", "64", "--seq-len", "32",
            "--batch-size", "8", "--steps", "10", "--log-every", "5", "--eval-every", "5", "--eval-batches", "2",
            "--cache-dir", str(tmp_path / "cache"), "--device", "cpu", "--seed", "3", "--no-progress"]


def _check_output(run: Path) -> None:
    out = latest_checkpoint(run)
    assert out == run / "steps" / "step-10" and [p.name for p in (run / "steps").iterdir()] == ["step-10"]
    with open(out / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {"step", "train_loss", "eval_loss"} <= set(rows[0])
    assert [r["step"] for r in rows] == ["0", "5", "10"]
    assert rows[-1]["train_loss"] and rows[-1]["eval_loss"]
    model = AutoModelForMaskedLM.from_pretrained(out)
    assert model.config.hidden_size == 32
    AutoTokenizer.from_pretrained(out)
    assert json.loads((out / "trainer_state.json").read_text())["step"] == 10


@pytest.mark.slow  # the CLI trains a run to a checkpoint
def test_cli_trains_and_writes_a_loadable_checkpoint(tmp_path, capsys) -> None:
    single = tmp_path / "single"
    assert main(_args(tmp_path, single)[2:]) == 0  # in-process: the same main() as `python -m bertdemo.pretrain`
    err = capsys.readouterr().err
    assert "finished: step 10/10" in err and f"checkpoint: {single / 'steps' / 'step-10'}" in err
    _check_output(single)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temp folders left"


def test_every_flag_explains_itself_and_names_its_default() -> None:
    parser = build_parser()
    text = parser.format_help()
    for action in parser._actions:  # argparse keeps its flags here
        if not action.option_strings or action.dest == "help":
            continue
        assert action.help and action.help.strip(), action.option_strings
        flag = action.option_strings[0]
        block = re.search(rf"^  {re.escape(flag)}\b.*?(?=^  -|^\S|\Z)", text, re.MULTILINE | re.DOTALL)
        shown = " ".join(block.group(0).split()) if block else ""
        assert f"(default: {action.default})" in shown, (flag, shown)
    for title in ("model settings", "data settings", "objective settings", "optim settings", "monitor settings",
                  "system settings"):
        assert title in text
    assert "The BERT to train" in text  # each group its meaning, from its dataclass
    assert "peak AdamW learning rate (default: 0.001)" in " ".join(text.split())



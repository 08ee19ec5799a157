"""Run checkpoints on disk: a complete write, and recovery when a write was cut off mid-swap."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from tests.helpers import tiny_bert_config
from transformers import BertForMaskedLM

from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain import runs as ckpt
from bertdemo.settings import DiskRules


def _write(target: Path, tokenizer, step: int, disk: DiskRules | None = None) -> None:
    torch.manual_seed(step)
    model = BertForMaskedLM(tiny_bert_config())
    optimizer = torch.optim.AdamW(model.parameters())
    ckpt.write_checkpoint(target, model, tokenizer, {"preset": "custom"},
                          {"step": step, "started_at": "2026-01-02T03:04:05"}, "step,loss\n", optimizer, disk=disk)


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_write_checkpoint_is_complete_and_listed(tmp_path, tokenizer):
    target = tmp_path / "run-a" / ckpt.CHECKPOINT_DIRNAME
    _write(target, tokenizer, step=1)
    _write(target, tokenizer, step=2)  # replaces the first
    for name in ("config.json", "model.safetensors", ckpt.CONFIG_FILE, ckpt.METRICS_FILE,
                 ckpt.OPTIMIZER_FILE, ckpt.STATE_FILE):
        assert (target / name).is_file(), name
    assert ckpt.read_state(target)["step"] == 2
    assert _hidden(target.parent) == []
    [(label, path)] = ckpt.list_checkpoints(tmp_path)
    assert path == target and label == "custom (2 layers, hidden 128, 2 heads, FFN 512) · defaults · step 2 · 2026-01-02 03:04"
    assert load_masked_lm(str(target), "cpu").has_mlm_head


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path, tokenizer):
    target = tmp_path / "run-a" / ckpt.CHECKPOINT_DIRNAME
    _write(target, tokenizer, step=1)

    class Broken(torch.nn.Module):
        def save_pretrained(self, *args, **kwargs):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ckpt.write_checkpoint(target, Broken(), tokenizer, {}, {"step": 2}, "")
    assert ckpt.read_state(target)["step"] == 1
    assert _hidden(target.parent) == []


CRASH_BETWEEN_RENAMES = """
import os, sys
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM
from bertdemo.pretrain import runs as ckpt
from bertdemo.settings import DiskRules

target, tokenizer_dir = sys.argv[1], sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
one = DiskRules(keep_checkpoints=1)  # the swap alone (no earlier checkpoint kept beside it)
config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=64)
ckpt.write_checkpoint(target, BertForMaskedLM(config), tokenizer, {}, {"step": 1}, "", disk=one)
rename = os.rename

def crash_on_second_rename(src, dst):
    if ".tmp-" in os.fspath(src):  # the first rename (old checkpoint aside) is done: the process dies
        os._exit(3)
    rename(src, dst)

os.rename = crash_on_second_rename
ckpt.write_checkpoint(target, BertForMaskedLM(config), tokenizer, {}, {"step": 2}, "", disk=one)
"""


@pytest.fixture(scope="module")
def crashed_mid_swap(tmp_path_factory) -> Path:
    """A runs folder whose checkpoint write died between the two renames (a real process exit)."""
    from bertdemo.models import embedded

    runs = tmp_path_factory.mktemp("runs")
    target = runs / "run-a" / ckpt.CHECKPOINT_DIRNAME
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CRASH_BETWEEN_RENAMES), str(target),
                           str(embedded.tokenizer_dir())], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert not target.exists()
    hidden = _hidden(target.parent)
    assert len(hidden) == 2 and hidden[0].startswith(".checkpoint.old-") and hidden[1].startswith(".checkpoint.tmp-")
    return runs


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    return dst / "run-a" / ckpt.CHECKPOINT_DIRNAME


@pytest.mark.slow  # a real process exits mid-write first: 10-15 s on two busy cores
def test_recover_after_a_crash_between_the_renames(crashed_mid_swap, tmp_path):
    target = _copy(crashed_mid_swap, tmp_path / "runs")
    ckpt.recover(target)
    assert ckpt.read_state(target)["step"] == 1  # the previous, complete checkpoint is back
    assert load_masked_lm(str(target), "cpu").has_mlm_head
    assert _hidden(target.parent) == []  # the unfinished .tmp- folder is gone


@pytest.mark.slow  # a real process exits mid-write first: 10-15 s on two busy cores
def test_the_next_read_restores_the_checkpoint(crashed_mid_swap, tmp_path):
    runs = tmp_path / "runs"
    target = _copy(crashed_mid_swap, runs)
    [(_, path)] = ckpt.list_checkpoints(runs)
    assert path == target and ckpt.read_state(target)["step"] == 1
    assert load_masked_lm(str(target), "cpu").has_mlm_head


@pytest.mark.slow  # a real process exits mid-write first: 10-15 s on two busy cores
def test_the_next_write_recovers_then_replaces(crashed_mid_swap, tmp_path, tokenizer):
    target = _copy(crashed_mid_swap, tmp_path / "runs")
    _write(target, tokenizer, step=3)
    assert ckpt.read_state(target)["step"] == 3
    assert _hidden(target.parent) == []


def test_a_run_keeps_its_last_n_checkpoints(tmp_path, tokenizer):
    three = DiskRules(keep_checkpoints=3)
    target = tmp_path / "run-a" / ckpt.CHECKPOINT_DIRNAME
    for step in (10, 20, 30, 40):
        _write(target, tokenizer, step=step, disk=three)
    assert ckpt.read_state(target)["step"] == 40
    assert [p.name for p in ckpt.previous_checkpoints(target)] == ["step-30", "step-20"]
    assert ckpt.read_state(target.parent / "previous" / "step-30")["step"] == 30
    listed = ckpt.list_checkpoints(tmp_path, include_previous=True)
    assert [label.split(" · ")[2:] for label, _ in listed] == [
        ["step 40", "2026-01-02 03:04"], ["step 30", "2026-01-02 03:04, earlier"], ["step 20", "2026-01-02 03:04, earlier"]]
    assert [path for _, path in ckpt.list_checkpoints(tmp_path)] == [target]  # the other tabs: latest only
    assert ckpt.run_checkpoint_dir(listed[1][1]) == target  # resuming an earlier one saves into the run's latest
    _write(target, tokenizer, step=50, disk=DiskRules(keep_checkpoints=1))
    assert ckpt.previous_checkpoints(target) == []


def test_a_write_past_the_disk_budget_is_refused_and_loses_nothing(tmp_path, tokenizer):
    from bertdemo import storage

    one = DiskRules(keep_checkpoints=1)  # one checkpoint per run: a rewrite needs no more room
    target = tmp_path / "runs" / "run-a" / ckpt.CHECKPOINT_DIRNAME
    _write(target, tokenizer, step=1, disk=one)
    used = storage.folder_bytes(tmp_path / "runs")
    capped = DiskRules(keep_checkpoints=1, budget_bytes=int(used * 1.5), roots=(tmp_path / "runs",))
    _write(target, tokenizer, step=2, disk=capped)  # replacing the checkpoint frees as much as it takes
    with pytest.raises(ValueError, match="keeps at most .* Delete earlier runs"):
        _write(tmp_path / "runs" / "run-b" / ckpt.CHECKPOINT_DIRNAME, tokenizer, step=1, disk=capped)
    assert ckpt.read_state(target)["step"] == 2
    assert not (tmp_path / "runs" / "run-b" / ckpt.CHECKPOINT_DIRNAME).exists()
    assert [p.name for p in (tmp_path / "runs" / "run-b").iterdir()] == []  # no temp folder left behind


def test_a_burst_hand_back_writes_state_dicts_without_a_model(tmp_path, tokenizer):
    from safetensors.torch import load_file

    target = tmp_path / "run-a" / ckpt.CHECKPOINT_DIRNAME
    _write(target, tokenizer, step=1)
    weights = {k: v + 1 for k, v in load_file(target / "model.safetensors").items()}
    ckpt.write_checkpoint(target, weights, tokenizer, {"preset": "custom"}, {"step": 2}, "", {"state": {}, "param_groups": []})
    assert ckpt.read_state(target)["step"] == 2 and (target / "config.json").is_file()
    reread = load_file(target / "model.safetensors")
    assert all(torch.equal(reread[k], weights[k]) for k in weights)
    assert torch.load(target / ckpt.OPTIMIZER_FILE, weights_only=True) == {"state": {}, "param_groups": []}

"""Run checkpoints on disk: immutable step folders and a pointer to the latest; a save cut off at any
point leaves a loadable latest; runs saved in the earlier layout stay listed, loadable and resumable."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

from bertdemo import storage
from bertdemo.models.run_refs import resolve_run_reference, run_reference
from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain import checkpoints as ckpt
from bertdemo.settings import DiskRules
from tests.helpers import tiny_bert_config, tiny_run_config, wiki_corpus_file


def _write(run: Path, tokenizer, step: int, disk: DiskRules | None = None) -> Path:
    torch.manual_seed(step)
    model = BertForMaskedLM(tiny_bert_config())
    optimizer = torch.optim.AdamW(model.parameters())
    return ckpt.write_checkpoint(run, model, tokenizer, {"preset": "custom"},
                                 {"step": step, "started_at": "2026-01-02T03:04:05"}, "step,loss\n", optimizer, disk=disk)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _steps(run: Path) -> list[str]:
    return [p.name for p in ckpt.run_checkpoints(run)]


def test_write_checkpoint_is_complete_and_listed(tmp_path, tokenizer):
    run = tmp_path / "run-a"
    _write(run, tokenizer, step=1)
    saved = _write(run, tokenizer, step=2)
    assert saved == run / "steps" / "step-2"
    for name in ("config.json", "model.safetensors", ckpt.CONFIG_FILE, ckpt.METRICS_FILE,
                 ckpt.OPTIMIZER_FILE, ckpt.STATE_FILE):
        assert (saved / name).is_file(), name
    assert (run / "LATEST").read_text() == "step-2\n"
    assert ckpt.latest_checkpoint(run) == saved and ckpt.read_state(saved)["step"] == 2
    assert _names(run) == ["LATEST", "steps"] and _names(run / "steps") == ["step-1", "step-2"]  # no temp left
    [(label, path)] = ckpt.list_checkpoints(tmp_path)
    assert path == saved and label == "custom (2 layers, hidden 128, 2 heads, FFN 512) · defaults · step 2 · 2026-01-02 03:04"
    assert load_masked_lm(str(saved), "cpu").has_mlm_head
    assert run_reference(saved, tmp_path) == "run:run-a/checkpoint"
    assert run_reference(run / "steps" / "step-1", tmp_path) == "run:run-a/steps/step-1"
    assert resolve_run_reference("run:run-a/checkpoint", tmp_path) == str(saved)
    assert resolve_run_reference("run:run-a/steps/step-1", tmp_path) == str(run / "steps" / "step-1")


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path, tokenizer):
    run = tmp_path / "run-a"
    first = _write(run, tokenizer, step=1)

    class Broken(torch.nn.Module):
        def save_pretrained(self, *args, **kwargs):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ckpt.write_checkpoint(run, Broken(), tokenizer, {}, {"step": 2}, "")
    assert ckpt.latest_checkpoint(run) == first and _names(run / "steps") == ["step-1"]


def test_a_pointer_that_fails_to_move_leaves_the_previous_latest(tmp_path, tokenizer, monkeypatch):
    """The step folder is in place when the pointer's write fails: the previous latest stays the latest."""
    run = tmp_path / "run-a"
    first = _write(run, tokenizer, step=1)

    def no_room(path, text, encoding="utf-8"):
        assert (run / "steps" / "step-2" / ckpt.STATE_FILE).is_file()  # the new folder is complete and in place
        raise OSError("disk full")

    monkeypatch.setattr(storage, "write_text", no_room)
    with pytest.raises(OSError, match="disk full"):
        _write(run, tokenizer, step=2)
    monkeypatch.undo()
    assert ckpt.latest_checkpoint(run) == first and ckpt.read_state(first)["step"] == 1
    assert [path for _, path in ckpt.list_checkpoints(tmp_path, include_previous=True)] == [first]
    assert load_masked_lm(resolve_run_reference("run:run-a/checkpoint", tmp_path), "cpu").has_mlm_head


def test_a_step_folder_the_pointer_never_reached_is_an_earlier_checkpoint(tmp_path, tokenizer):
    """What a kill between the folder's rename and the pointer's leaves: LATEST names the previous save."""
    run = tmp_path / "run-a"
    first = _write(run, tokenizer, step=1)
    _write(run, tokenizer, step=2)
    (run / "LATEST").write_text("step-1\n")  # the pointer as it was before the second save
    assert ckpt.latest_checkpoint(run) == first
    listed = ckpt.list_checkpoints(tmp_path, include_previous=True)
    assert [(label.split(" · ")[2:], path.name) for label, path in listed] == [
        (["step 1", "2026-01-02 03:04"], "step-1"), (["step 2", "2026-01-02 03:04, earlier"], "step-2")]
    assert resolve_run_reference("run:run-a/checkpoint", tmp_path) == str(first)
    third = _write(run, tokenizer, step=3, disk=DiskRules(keep_checkpoints=2, keep_milestones=0))  # the next save tidies up
    assert _steps(run) == ["step-3", "step-2"] and ckpt.latest_checkpoint(run) == third


def test_a_pointer_naming_a_missing_folder_falls_back_to_the_highest_step(tmp_path, tokenizer):
    run = tmp_path / "run-a"
    three = DiskRules(keep_checkpoints=3, keep_milestones=0)
    for step in (10, 20, 30):
        _write(run, tokenizer, step=step, disk=three)
    shutil.rmtree(run / "steps" / "step-30")
    assert ckpt.latest_checkpoint(run) == run / "steps" / "step-20"
    assert resolve_run_reference("run:run-a/checkpoint", tmp_path) == str(run / "steps" / "step-20")
    (run / "LATEST").write_text("../../elsewhere\n")  # not a step folder's name: never followed
    assert ckpt.latest_checkpoint(run) == run / "steps" / "step-20"
    (run / "LATEST").unlink()
    assert ckpt.latest_checkpoint(run) == run / "steps" / "step-20"
    assert ckpt.read_state(ckpt.latest_checkpoint(run))["step"] == 20


def test_a_run_keeps_its_last_n_checkpoints(tmp_path, tokenizer):
    three = DiskRules(keep_checkpoints=3, keep_milestones=0)
    run = tmp_path / "run-a"
    for step in (10, 20, 30, 40):
        _write(run, tokenizer, step=step, disk=three)
    assert _steps(run) == ["step-40", "step-30", "step-20"]
    assert _names(run / "steps") == ["step-20", "step-30", "step-40"]  # step-10 deleted after the pointer moved
    listed = ckpt.list_checkpoints(tmp_path, include_previous=True)
    assert [label.split(" · ")[2:] for label, _ in listed] == [
        ["step 40", "2026-01-02 03:04"], ["step 30", "2026-01-02 03:04, earlier"], ["step 20", "2026-01-02 03:04, earlier"]]
    assert [path for _, path in ckpt.list_checkpoints(tmp_path)] == [run / "steps" / "step-40"]  # other tabs: latest
    assert ckpt.run_folder_of(listed[1][1]) == run  # resuming an earlier one saves into the same run
    _write(run, tokenizer, step=50, disk=DiskRules(keep_checkpoints=1, keep_milestones=0))
    assert _names(run / "steps") == ["step-50"]


def test_a_run_keeps_log_spaced_early_checkpoints_for_the_when_probe(tmp_path, tokenizer):
    """With 2 latest and 4 milestones, a run saved every 100 steps up to 1,200 keeps the first save and the
    first at or after 2x, 4x, 8x it (100, 200, 400, 800) beside its latest two; none of them is ever deleted
    and then needed, and the disk estimate counts all six."""
    rules = DiskRules(keep_checkpoints=2, keep_milestones=4)
    run = tmp_path / "run-m"
    seen_after = {}
    for step in range(100, 1300, 100):
        _write(run, tokenizer, step=step, disk=rules)
        seen_after[step] = _names(run / "steps")
    assert _steps(run) == ["step-1200", "step-1100", "step-800", "step-400", "step-200", "step-100"]
    assert seen_after[500] == ["step-100", "step-200", "step-400", "step-500"]  # 300 went when it fell out
    assert rules.kept_per_run == 6
    milestones = ckpt.milestone_folders([run / "steps" / f"step-{s}" for s in (100, 200, 300, 400, 900)], 3)
    assert [p.name for p in milestones] == ["step-100", "step-200", "step-400"]
    assert ckpt.milestone_folders([run / "steps" / "step-50"], 0) == []


def test_a_deletion_cut_off_half_way_is_never_listed_and_the_next_save_finishes_it(tmp_path, tokenizer):
    run = tmp_path / "run-a"
    first = _write(run, tokenizer, step=10)
    shutil.copytree(first, run / "steps" / ".step-5.old-1234abcd")  # renamed aside, then the process died
    shutil.copytree(first, run / "steps" / ".step-20.tmp-1234abcd")  # a save killed before its rename
    assert _steps(run) == ["step-10"]
    _write(run, tokenizer, step=20)
    assert _names(run / "steps") == ["step-10", "step-20"]


def test_the_same_step_saved_again_replaces_it_under_a_new_name(tmp_path, tokenizer):
    """A save of the step the latest already holds (a GPU burst that trained no step) is a new folder too."""
    run = tmp_path / "run-a"
    _write(run, tokenizer, step=10)
    again = _write(run, tokenizer, step=10)
    assert again.name == "step-10.1" and _names(run / "steps") == ["step-10.1"]  # the superseded one goes
    assert ckpt.step_of(again) == (10, 1) and run_reference(again, tmp_path) == "run:run-a/checkpoint"
    assert _write(run, tokenizer, step=10).name == "step-10" and _names(run / "steps") == ["step-10"]


def test_a_write_past_the_disk_budget_is_refused_and_loses_nothing(tmp_path, tokenizer):
    one = DiskRules(keep_checkpoints=1, keep_milestones=0)  # one checkpoint per run: a rewrite needs no more room
    run = tmp_path / "runs" / "run-a"
    _write(run, tokenizer, step=1, disk=one)
    used = storage.folder_bytes(tmp_path / "runs")
    capped = DiskRules(keep_checkpoints=1, keep_milestones=0, budget_bytes=int(used * 1.5), roots=(tmp_path / "runs",))
    second = _write(run, tokenizer, step=2, disk=capped)  # the save frees the previous one: it fits
    with pytest.raises(ValueError, match="keeps at most .* Delete earlier runs"):
        _write(tmp_path / "runs" / "run-b", tokenizer, step=1, disk=capped)
    assert ckpt.latest_checkpoint(run) == second and _names(run / "steps") == ["step-2"]
    with pytest.raises(ValueError, match="keeps at most .* Delete earlier runs"):
        _write(run, tokenizer, step=3, disk=DiskRules(keep_checkpoints=2, keep_milestones=0, budget_bytes=int(used * 1.5),
                                                      roots=(tmp_path / "runs",)))  # keeping two does not fit
    assert ckpt.latest_checkpoint(run) == second and _names(run / "steps") == ["step-2"]
    assert _names(tmp_path / "runs" / "run-b") == []  # no temp folder, no empty steps/ left behind


def test_a_burst_hand_back_writes_state_dicts_without_a_model(tmp_path, tokenizer):
    from safetensors.torch import load_file

    run = tmp_path / "run-a"
    first = _write(run, tokenizer, step=1)
    weights = {k: v + 1 for k, v in load_file(first / "model.safetensors").items()}
    saved = ckpt.write_checkpoint(run, weights, tokenizer, {"preset": "custom"}, {"step": 2}, "",
                                  {"state": {}, "param_groups": []})
    assert ckpt.read_state(saved)["step"] == 2 and (saved / "config.json").is_file()
    reread = load_file(saved / "model.safetensors")
    assert all(torch.equal(reread[k], weights[k]) for k in weights)
    assert torch.load(saved / ckpt.OPTIMIZER_FILE, weights_only=True) == {"state": {}, "param_groups": []}


# --- runs saved in the earlier layout: <run>/checkpoint/ and <run>/previous/step-<n>/ ----------------

def _earlier_layout(run: Path, tokenizer, steps: tuple[int, ...] = (10, 20)) -> None:
    """A run as the earlier layout kept it: the latest in checkpoint/, the others in previous/step-<n>/."""
    built = run.parent / f".{run.name}-build"
    for step in steps:
        _write(built, tokenizer, step=step, disk=DiskRules(keep_checkpoints=len(steps), keep_milestones=0))
    (run / "previous").mkdir(parents=True)
    for step in steps[:-1]:
        (built / "steps" / f"step-{step}").rename(run / "previous" / f"step-{step}")
    (built / "steps" / f"step-{steps[-1]}").rename(run / "checkpoint")
    shutil.rmtree(built)


def test_an_earlier_layout_run_is_listed_loads_and_keeps_its_names(tmp_path, tokenizer):
    run = tmp_path / "run-old"
    _earlier_layout(run, tokenizer)
    listed = ckpt.list_checkpoints(tmp_path, include_previous=True)
    assert [path for _, path in listed] == [run / "checkpoint", run / "previous" / "step-10"]
    assert listed[1][0].endswith("step 10 · 2026-01-02 03:04, earlier")
    assert run_reference(run / "checkpoint", tmp_path) == "run:run-old/checkpoint"
    assert resolve_run_reference("run:run-old/checkpoint", tmp_path) == str(run / "checkpoint")
    assert resolve_run_reference("run:run-old/previous/step-10", tmp_path) == str(run / "previous" / "step-10")
    assert load_masked_lm(str(run / "checkpoint"), "cpu").has_mlm_head
    assert _names(run) == ["checkpoint", "previous"]  # reading moved nothing


def test_the_first_save_into_an_earlier_layout_run_moves_it_to_step_folders(tmp_path, tokenizer):
    run = tmp_path / "run-old"
    _earlier_layout(run, tokenizer)
    saved = _write(run, tokenizer, step=30, disk=DiskRules(keep_checkpoints=3, keep_milestones=0))
    assert _names(run) == ["LATEST", "steps"] and _steps(run) == ["step-30", "step-20", "step-10"]
    assert ckpt.latest_checkpoint(run) == saved and ckpt.read_state(run / "steps" / "step-20")["step"] == 20
    # links shared before the move still open the same checkpoints
    assert resolve_run_reference("run:run-old/previous/step-10", tmp_path) == str(run / "steps" / "step-10")
    assert resolve_run_reference("run:run-old/checkpoint", tmp_path) == str(saved)


def test_a_move_cut_off_before_the_latest_moved_still_reads_the_latest(tmp_path, tokenizer):
    """The pointer is written first and the latest folder moves last: a kill in between leaves the pointer
    naming a folder not there yet, and the reader keeps reading checkpoint/."""
    run = tmp_path / "run-old"
    _earlier_layout(run, tokenizer)
    (run / "steps").mkdir()
    (run / "previous" / "step-10").rename(run / "steps" / "step-10")
    (run / "LATEST").write_text("step-20\n")
    assert ckpt.latest_checkpoint(run) == run / "checkpoint"
    assert _steps(run) == ["checkpoint", "step-10"]
    ckpt.clean_unfinished(run)  # the next start finishes the move
    assert _names(run) == ["LATEST", "steps"] and _steps(run) == ["step-20", "step-10"]


def test_an_earlier_layout_run_resumes_by_its_name(tmp_path):
    """A run trained before the step folders resumes from run:<id>/checkpoint and saves into step folders."""
    from bertdemo.models.run_access import ACCESS_FILE
    from bertdemo.settings import ServerSettings
    from tests.helpers import run_services

    runs = tmp_path / "runs"
    _, service, _ = run_services(ServerSettings.build(runs_dir=runs, cache_dir=tmp_path / "cache"))
    run = service.start(tiny_run_config(wiki_corpus_file(tmp_path), runs, steps=10))
    assert run.join(60) and run.status == "finished", run.snapshot().message
    folder = runs / run.run_id
    (folder / "steps" / "step-10").rename(folder / "checkpoint")  # as the earlier layout saved it
    shutil.rmtree(folder / "steps")
    (folder / "LATEST").unlink()
    assert service.list_runs() == [run.run_id]
    resumed = service.start({"resume_from": f"run:{run.run_id}/checkpoint", "steps": 14})
    assert resumed.run_id == run.run_id and resumed.join(60) and resumed.snapshot().step == 14
    # the earlier layout's folder moved into the step folders; the resumed run recorded who may use it (run_access)
    assert _names(folder) == ["LATEST", ACCESS_FILE, "steps"] and _steps(folder) == ["step-14", "step-10"]
    assert service.status()["last_checkpoint"] == f"run:{run.run_id}/checkpoint"


CRASH_BEFORE_THE_POINTER = """
import os, sys
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM
from bertdemo import storage
from bertdemo.pretrain import checkpoints as ckpt

run, tokenizer_dir = sys.argv[1], sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=64)
ckpt.write_checkpoint(run, BertForMaskedLM(config), tokenizer, {}, {"step": 1}, "")
storage.write_text = lambda *args, **kwargs: os._exit(3)  # the step folder is in place: the process dies
ckpt.write_checkpoint(run, BertForMaskedLM(config), tokenizer, {}, {"step": 2}, "")
"""


@pytest.mark.slow  # a real process exits mid-save: 10-15 s on two busy cores
def test_a_process_killed_before_the_pointer_moved_keeps_its_latest(tmp_path):
    from bertdemo.models import embedded

    run = tmp_path / "runs" / "run-a"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CRASH_BEFORE_THE_POINTER), str(run),
                           str(embedded.tokenizer_dir())], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert (run / "LATEST").read_text() == "step-1\n" and _names(run / "steps") == ["step-1", "step-2"]
    assert ckpt.latest_checkpoint(run) == run / "steps" / "step-1"
    assert [path.name for _, path in ckpt.list_checkpoints(tmp_path / "runs", include_previous=True)] == [
        "step-1", "step-2"]
    assert load_masked_lm(resolve_run_reference("run:run-a/checkpoint", tmp_path / "runs"), "cpu").has_mlm_head

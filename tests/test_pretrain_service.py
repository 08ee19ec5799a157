"""The run service's start: the checks before a run starts, uploads adopted and released, resuming by
run name, and who may resume — called directly, as the Pretrain tab and its API call it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertdemo.pretrain import checkpoints
from bertdemo.pretrain.budget import SpeedBook
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.service import PretrainService
from bertdemo.runs.service import RunService
from bertdemo.settings import ServerSettings
from tests.helpers import run_services, tiny_run_config, wiki_corpus_file

SMALL = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
             seq_len=32, batch_size=8, steps=6, log_every=2, eval_every=100, eval_batches=1, checkpoint_every=0)


def _service(tmp_path: Path, public: bool = False) -> PretrainService:
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", public=public, admin_token="admin-secret",
                                    cache_dir=tmp_path / "cache")
    return run_services(settings, speeds=SpeedBook(lambda device: 1e15))[1]  # a fast machine: no calibration here


def test_a_page_start_adopts_the_upload_and_only_its_owner_resumes_it_by_name(tmp_path):
    upload_root = tmp_path / "gradio"
    served = Path(wiki_corpus_file(upload_root / "abc123"))
    service = _service(tmp_path, public=True)
    run = service.start({**SMALL, "corpus": "upload", "upload": str(served)}, "secret-a", upload_root=str(upload_root))
    adopted = Path(run.cfg.data.corpus)
    assert not served.exists(), "the web server's copy (fetchable by URL) is gone"
    assert adopted.is_file() and adopted.parent.parent.name == ".uploads"
    assert run.join(60) and run.status == "finished", run.snapshot().message
    assert Path(run.cfg.data.cache_dir) == tmp_path / "cache"  # the server's block cache

    name = service.status()["last_checkpoint"]
    assert name == f"run:{run.run_id}/checkpoint" and str(tmp_path) not in str(service.status())
    with pytest.raises(ValueError, match="Only the browser that started this run"):
        service.start({"resume_from": name, "steps": 8}, "someone-else")
    resumed = service.start({"resume_from": name, "steps": 8}, "secret-a")
    assert resumed.run_id == run.run_id and resumed.join(60) and resumed.snapshot().step == 8
    assert adopted.is_file()  # its checkpoint refers to it (it may be resumed again)
    service.delete(run.run_id, "secret-a")
    assert not adopted.exists() and service.list_runs() == []  # released with the last run that used it


def test_the_status_names_the_saves_still_kept_the_latest_as_the_runs_checkpoint(tmp_path):
    _, service, _ = run_services(ServerSettings.build(runs_dir=tmp_path / "runs", keep_checkpoints=2, keep_milestones=2,
                                                      cache_dir=tmp_path / "cache"))
    run = service.start(tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=10, checkpoint_every=2))
    assert run.join(60) and run.status == "finished", run.snapshot().message
    status = service.status()
    ref = f"run:{run.run_id}"
    # the latest two (10, 8) and the two log-spaced milestones (2, 4); step-6 went
    assert status["checkpoints"] == [f"{ref}/steps/step-2", f"{ref}/steps/step-4", f"{ref}/steps/step-8",
                                     f"{ref}/checkpoint"]
    assert status["last_checkpoint"] == f"{ref}/checkpoint"
    assert [label.split(" · ")[-2:-1] for label, _ in service.checkpoint_choices()[1:]] == [
        ["step 10"], ["step 8"], ["step 4"], ["step 2"]]
    assert [Path(p).name for p in service.checkpoint_folders(run.run_id)] == ["step-2", "step-4", "step-8", "step-10"]


def test_a_start_while_a_run_is_under_way_is_refused_before_anything_else(tmp_path):
    service = _service(tmp_path)
    run = service.start(tiny_run_config(wiki_corpus_file(tmp_path), tmp_path / "runs", steps=100_000))
    try:
        with pytest.raises(ValueError, match="already"):
            service.start({"no_such_setting": 1})  # refused before the request is even read
    finally:
        run.stop()
        assert run.join(60)
    with pytest.raises(ValueError, match="Unknown settings: no_such_setting"):
        service.start({"no_such_setting": 1})


def test_a_public_start_keeps_to_the_caps_and_the_servers_own_files(tmp_path):
    service = _service(tmp_path, public=True)
    corpus = wiki_corpus_file(tmp_path)
    with pytest.raises(ValueError, match="On this public server the corpus is"):
        service.start({**SMALL, "corpus": corpus}, "secret-a")
    with pytest.raises(ValueError, match="Upload your file on the page"):
        service.start({**SMALL, "corpus": "upload", "upload": corpus}, "secret-a")  # an API caller's path
    with pytest.raises(ValueError, match="cannot be set on this public server"):
        service.start({**SMALL, "device": "cpu"}, "secret-a")
    with pytest.raises(ValueError, match="steps is more than this public server allows"):
        service.start({**SMALL, "steps": 1_000_000}, "secret-a")
    with pytest.raises(ValueError, match="this public server trains models up to"):
        service.start(TrainConfig.from_flat(preset="bert-small"), "secret-a")  # a config made by code: capped too
    slow = PretrainService(RunService(service.settings), speeds=SpeedBook(lambda device: 1e6))  # a slow machine
    with pytest.raises(ValueError, match="this public server stops runs after 20 minutes"):
        slow.start({**SMALL, "steps": 5000, "time_budget_s": 0}, "secret-a")  # 0: Steps alone end the run
    assert not (tmp_path / "runs").exists() or [p.name for p in (tmp_path / "runs").iterdir()] == []


def test_the_time_estimate_names_the_public_limit(tmp_path):
    service = _service(tmp_path, public=True)
    assert service.time_estimate(SMALL) == (
        "Estimated time on this machine, Start to the last checkpoint: **about 1 s** — about 1 s of training, 2 "
        "held-out evaluations (about 1 s); start-up and checkpoint writes are timed by the first run here and "
        "counted after it.")
    slow = PretrainService(RunService(service.settings), speeds=SpeedBook(lambda device: 1e6))
    assert slow.time_estimate({**SMALL, "steps": 5000, "time_budget_s": 0}).endswith("minute limit: lower Steps.")
    # a time budget ends the training first: the estimate adds the evaluations due in the steps that fit, and
    # says what all the steps would take
    slower = PretrainService(RunService(service.settings), speeds=SpeedBook(lambda device: 1e8))
    assert slower.time_estimate({**SMALL, "steps": 5000, "time_budget_s": 300}) == (
        "Estimated time on this machine, Start to the last checkpoint: **about 7 min** — about 5 min of training, "
        "2 held-out evaluations (about 2 min); start-up and checkpoint writes are timed by the first run here and "
        "counted after it. The time budget ends the training first (5,000 steps would take about 4.3 h).")
    assert service.time_estimate({**SMALL, "hidden_size": 30, "num_attention_heads": 4}) == ""  # not a valid run yet


def test_the_modules_the_page_needs_before_torch_do_not_load_it():
    import subprocess
    import sys

    code = ("import sys; import bertdemo.pretrain.service, bertdemo.pretrain.checkpoints, bertdemo.pretrain.run_folders, "
            "bertdemo.runs.service, bertdemo.finetune.service, "
            "bertdemo.runs.uploads, bertdemo.pretrain.budget, "
            "bertdemo.pretrain.config, bertdemo.pretrain.metrics, bertdemo.pretrain.form, bertdemo.settings; "
            "print(sorted(m for m in ('torch', 'transformers', 'bertdemo.pretrain.trainer') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-2000:]


def test_the_probe_is_bounded_in_length_masks_and_history():
    from bertdemo.limits import MAX_PROBE_CHARS, PROBE_WINDOW
    from bertdemo.pretrain.config import validate_probe_text
    from bertdemo.pretrain.metrics import MetricsBuffer

    assert validate_probe_text(" He was born [MASK] London. ") == "He was born [MASK] London."
    with pytest.raises(ValueError, match=f"characters; use at most {MAX_PROBE_CHARS}"):
        validate_probe_text("The [MASK] " + "word " * 1_000_000)
    with pytest.raises(ValueError, match=r"has 5 \[MASK\]s; use at most 4"):
        validate_probe_text("[MASK] " * 5)
    buffer = MetricsBuffer()
    for step in range(PROBE_WINDOW + 30):
        buffer.log_probe(step, [[("paris", 0.5)]], "The capital of France is [MASK].")
    kept = buffer.snapshot().probe
    assert len(kept) == PROBE_WINDOW and kept[0][0] == 30 and kept[-1][0] == PROBE_WINDOW + 29  # the latest


def test_the_status_keeps_the_latest_probe_window_of_the_largest_probe_and_stays_small(tmp_path):
    """What /run_status sends (and every page's poll) after one evaluation more than the status keeps, each with
    the largest probe a visitor may set (4 masks in 300 characters, top-5 at each): the latest PROBE_WINDOW answers
    only, the latest last, every evaluation in the curves, under 100 KB. (The limits on the probe a visitor may set
    are checked against the launched public server in tests/e2e/test_public_visitor.py.)"""
    import json
    from types import SimpleNamespace

    from bertdemo.limits import MAX_PROBE_CHARS, MAX_PROBE_MASKS, PROBE_WINDOW
    from bertdemo.pretrain.config import validate_probe_text
    from bertdemo.pretrain.metrics import MetricsBuffer

    probe = validate_probe_text(("[MASK] " * MAX_PROBE_MASKS + "the cat sat on the mat and looked at the dog . ")
                                [:MAX_PROBE_CHARS])
    buffer = MetricsBuffer()
    top5 = [(f"word{k}" * 3, 0.1 + k / 100) for k in range(5)]
    for step in range(PROBE_WINDOW + 1):  # an evaluation before the first step and after each of PROBE_WINDOW
        buffer.log_eval(step, 7.0 - step / 100, 0.01, None, None, tokens=step * 256, wall_s=step * 0.1, top5=0.05,
                        median_rank=500.0)
        buffer.log_probe(step, [top5] * MAX_PROBE_MASKS, probe)
        buffer.log_probe_ranks(step, [(probe, "cat", True, top5, 40)], step * 256, step * 0.1)
    _, service, _ = run_services(ServerSettings.build(runs_dir=tmp_path / "runs", public=True,
                                                      cache_dir=tmp_path / "cache"))
    status = service.status(SimpleNamespace(snapshot=buffer.snapshot))  # the run's own snapshot, as sent
    assert len(status["eval_steps"]) == PROBE_WINDOW + 1  # every step was evaluated ...
    assert len(status["probe"]) == PROBE_WINDOW  # ... and the status keeps the latest 50 probe answers
    assert status["probe"][-1][0] == status["eval_steps"][-1] == PROBE_WINDOW
    assert all(len(answer[1]) == MAX_PROBE_MASKS for answer in status["probe"])
    size = len(json.dumps(status))
    assert size < 100_000, f"/run_status sent {size:,} characters"


def test_a_public_server_resumes_only_its_runs_by_name_and_echoes_no_path(tmp_path):
    from bertdemo.settings import ServerSettings

    runs_dir = tmp_path / "runs"
    (runs_dir / "20260101-x" / "checkpoint").mkdir(parents=True)
    (runs_dir / "20260101-x" / "checkpoint" / "config.json").write_text("{}")
    _, service, _ = run_services(ServerSettings.build(runs_dir=runs_dir, public=True, cache_dir=tmp_path / "cache"))
    same = set()
    for value in ("/etc", str(runs_dir / "20260101-x" / "checkpoint"), str(runs_dir / "nope"), "../x"):
        with pytest.raises(ValueError) as err:
            service.start({"preset": "bert-tiny", "resume_from": value}, owner_token="t")
        same.add(str(err.value))
    assert len(same) == 1 and str(tmp_path) not in same.pop()  # inside the runs folder or not: one answer
    with pytest.raises(ValueError, match="resume_from names a checkpoint"):
        service.start({"preset": "bert-tiny", "resume_from": 5}, owner_token="t")  # not a TypeError
    with pytest.raises(ValueError, match="There is no run '20260101-x/checkpoint'"):  # no training state: none
        service.start({"preset": "bert-tiny", "resume_from": "run:20260101-x/checkpoint"}, owner_token="t")


def _fake_checkpoint(folder: Path, step: int) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "trainer_state.json").write_text(f'{{"step": {step}}}')


def test_at_start_the_leftovers_of_runs_that_never_saved_are_cleaned(tmp_path):
    from bertdemo.pretrain import checkpoints
    from bertdemo.runs import folders as run_folders
    from bertdemo.settings import ServerSettings

    runs_dir = tmp_path / "runs"
    never = runs_dir / "20260101-000000-bert-tiny"
    (never / "steps" / ".step-4.tmp-1234abcd").mkdir(parents=True)  # a save killed half-way, before its rename
    (never / "steps" / ".step-4.tmp-1234abcd" / "model.safetensors").write_bytes(b"x" * 1000)
    run_folders.record_owner(never, "tok")
    saved = runs_dir / "20260102-000000-bert-tiny"
    _fake_checkpoint(saved / "steps" / "step-8", 8)
    (saved / "LATEST").write_text("step-8\n")
    (saved / "steps" / ".step-9.tmp-9abc0123").mkdir()  # its next save was killed before the rename
    crashed = runs_dir / "20260103-000000-bert-tiny"  # the earlier layout, killed between the two renames of a save
    _fake_checkpoint(crashed / ".checkpoint.old-5678abcd", 6)
    _fake_checkpoint(crashed / "previous" / "step-3", 3)
    build = runs_dir / "twin-pairs"  # a build's work folder (build_twin_pairs' default): no model in it yet
    (build / "tokenizer").mkdir(parents=True)
    (build / "corpus.jsonl").write_text('{"text": "The dog barked."}\n')
    runs, _, _ = run_services(ServerSettings.build(runs_dir=runs_dir, cache_dir=tmp_path / "cache"))
    assert runs.clean_leftovers() == ["20260101-000000-bert-tiny"]
    assert (build / "corpus.jsonl").is_file() and (build / "tokenizer").is_dir()  # not the server's: left alone
    assert not never.exists() and sorted(p.name for p in (saved / "steps").iterdir()) == ["step-8"]
    assert sorted(p.name for p in crashed.iterdir()) == ["LATEST", "steps"]  # put back, then moved to step folders
    assert [p.name for p in checkpoints.run_checkpoints(crashed)] == ["step-6", "step-3"]


def test_the_forms_parameter_count_is_the_model_that_will_train():
    from bertdemo.viz.run_curves import shape_markdown

    assert shape_markdown("bert-tiny", 2, 128, 2, 512).startswith("**4,416,698 parameters**")
    assert shape_markdown("bert-tiny", 2, 128, 2, 512, nsp=True).startswith("**4,433,468 parameters**")  # + NSP


def test_the_probe_table_shows_each_probes_rank_and_top5_and_the_learners_further_masks():
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.viz.run_curves import PROBE_HEADERS, probe_rows

    buffer = MetricsBuffer()
    buffer.log_probe(30, [[("x", 0.5)], [("y", 0.25), (",", 0.125)]], "Two [MASK] [MASK].")
    buffer.log_probe_ranks(30, [("He was born [MASK] London.", "in", False, [("in", 0.5), (",", 0.25)], 1),
                                ("Two [MASK] [MASK].", "", True, [("x", 0.5)], None)])
    assert PROBE_HEADERS == ["probe sentence", "expected", "rank", "top-5 now"]
    assert probe_rows(buffer.snapshot()) == [
        ["He was born [MASK] London.", "in", "1", "“in” 50.0% · “,” 25.0%"],
        ["Two [MASK] [MASK].", "—", "—", "“x” 50.0%"],
        ["Two [MASK] [MASK]. ([MASK] 2)", "—", "—", "“y” 25.0% · “,” 12.5%"]]


def test_tinystories_offline_is_refused_before_a_run_exists(tmp_path):
    """Offline, a TinyStories start is refused with the offline corpora named; no FAILED run is left behind."""
    from bertdemo.ui.pretrain_tab import corpus_note

    service = _service(tmp_path)  # offline
    with pytest.raises(ValueError, match="dataset hub.*embedded Wikipedia summaries"):
        service.start({"corpus": "tinystories", "steps": 10})
    assert service.manager.current is None and not any(Path(service.runs_dir).glob("*/config.json"))
    assert "Start would be refused" in corpus_note("tinystories", hub_reachable=False)
    assert corpus_note("wiki", hub_reachable=False) == ""


def test_a_run_times_what_it_spends_beside_training_and_the_next_estimate_counts_it(tmp_path):
    service = _service(tmp_path)
    settings = {**SMALL, "corpus": wiki_corpus_file(tmp_path)}
    from bertdemo.pretrain.form import config_from_settings

    predicted = service.speeds.estimate(config_from_settings(settings, service.runs_dir))
    assert (predicted.evaluations, predicted.checkpoints, predicted.measured) == (2, 1, False)
    run = service.start(settings)
    assert run.join(60) and run.status == "finished", run.snapshot().message
    snap = run.snapshot()
    # step 0 and the last step (6) were evaluated, the last checkpoint written: each timed
    assert (snap.evals, snap.eval_steps, snap.saves) == (2, [0, 6], 1)
    assert snap.startup_s > 0 and snap.eval_s > 0 and snap.save_s > 0
    assert snap.message.startswith("Finished at step 6 of 6. Wall time ") and ", 2 evaluations " in snap.message
    assert ", 1 checkpoint write " in snap.message
    # the estimate counted the evaluations the run made, and now counts its measured start-up and writes too
    measured = service.speeds.overheads("cpu")
    assert measured is not None and measured.startup_s == pytest.approx(snap.startup_s)
    assert "start-up and 1 checkpoint write (" in service.time_estimate(settings)


def test_a_preparing_runs_status_line_names_no_parameter_count_before_the_model_is_built(tmp_path):
    from bertdemo.pretrain.metrics import RunSnapshot
    from bertdemo.viz.run_curves import status_markdown

    preparing = RunSnapshot(run_id="20260101-000000-bert-tiny", status="preparing", preset="bert-tiny",
                            corpus="wiki", message="Tokenizing…")
    assert "parameters" not in status_markdown(preparing) and "bert-tiny · " in status_markdown(preparing)
    built = RunSnapshot(run_id="x", status="running", preset="bert-tiny", corpus="wiki", param_count=4_416_698,
                        device="cpu")
    assert "bert-tiny (4,416,698 parameters) · " in status_markdown(built)


def test_a_visitors_run_can_begin_each_block_at_a_texts_start_and_keeps_it_when_resumed(tmp_path):
    """The form's "Where each block begins" (``block_starts``): a public visitor may choose it; the run trains on
    blocks that begin at a text's start, says so in its name, and a resume packs its blocks the same way."""
    service = _service(tmp_path, public=True)
    corpus = wiki_corpus_file(tmp_path / "gradio" / "up1")
    run = service.start({**SMALL, "corpus": "upload", "upload": corpus, "block_starts": "text", "checkpoint_every": 3},
                        "secret-a", upload_root=str(tmp_path / "gradio"))
    assert run.join(60) and run.status == "finished", run.snapshot().message
    assert run.cfg.data.block_starts == "text"
    assert checkpoints.experiment_label(run.cfg.flat()).endswith("block_starts=text")
    resumed = service.start({"resume_from": service.status()["last_checkpoint"], "steps": 9}, "secret-a")
    assert resumed.join(60) and resumed.snapshot().step == 9 and resumed.cfg.data.block_starts == "text"
    with pytest.raises(ValueError, match="block_starts must be one of"):
        service.start({**SMALL, "block_starts": "middle"}, "secret-b")

"""The tools that build and measure the shipped twins: three runs of one recipe (a masked LM, a left-to-right LM on
the same words, a left-to-right LM on every next word), measured at every checkpoint all three kept, then exported
as stock model folders with the record the page reads (bertdemo.models.twin_curve) — tried on tiny runs."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from itertools import pairwise

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer, BertLMHeadModel

from bertdemo.explore.twins import RecordedLandmarks, heldout_asked, heldout_by_position, read_heldout_file
from bertdemo.models import twin_curve
from bertdemo.models.embedded import tokenizer_dir
from bertdemo.pretrain import __main__ as engine_cli
from bertdemo.pretrain.checkpoints import latest_checkpoint, read_state
from bertdemo.pretrain.config import TrainConfig, leaf_fields
from bertdemo.tools import build_twin_pairs, measure_twin_pairs
from tests.helpers import train_tiny_twins


@pytest.fixture(scope="module")
def work(tmp_path_factory, corpus):
    """A tiny build's folder: the corpus, the tokenizer and the three runs, checkpoints at 4, 8, 12 steps."""
    work = tmp_path_factory.mktemp("twin-pairs")
    shutil.copy(corpus, work / "corpus.jsonl")
    shutil.copytree(tokenizer_dir(), work / "tokenizer")
    train_tiny_twins(work, str(work / "corpus.jsonl"), str(work / "tokenizer"), steps=12)
    return work


def test_the_build_runs_the_engine_with_one_recipe_and_only_the_objective_differing(tmp_path) -> None:
    args = build_twin_pairs.parse_args(["--work", str(tmp_path)])
    commands = {run: build_twin_pairs.engine_command(run, args) for run in build_twin_pairs.RUNS}
    differing = [[c for c in commands[run] if c not in commands["mlm"]] for run in ("ltr-masked", "ltr-all")]
    assert differing == [["ltr", "--ltr-targets", "masked", str(tmp_path / "ltr-masked")],
                         ["ltr", "--ltr-targets", "all", str(tmp_path / "ltr-all")]]
    assert "--auto-resume" in commands["mlm"] and "--time-budget-s" in commands["mlm"]  # steps end every run


def test_a_gpu_build_trains_the_three_at_once_in_the_shape_asked(tmp_path) -> None:
    args = build_twin_pairs.parse_args(["--work", str(tmp_path), "--device", "cuda", "--preset", "3,256,4,1024",
                                        "--dropout", "0.1", "--time-budget-s", "240"])
    command = build_twin_pairs.engine_command("ltr-all", args)
    engine_args = command[command.index("bertdemo.pretrain") + 1:]
    parsed = vars(engine_cli.build_parser().parse_args(engine_args))
    cfg = TrainConfig.from_flat(**{f.name: parsed[f.name] for _, f in leaf_fields() if f.name in parsed})
    cfg.validate()  # the engine takes the command as it is
    assert (cfg.model.preset, cfg.model.num_hidden_layers, cfg.model.hidden_size, cfg.model.num_attention_heads,
            cfg.model.intermediate_size) == ("custom", 3, 256, 4, 1024)
    assert (cfg.system.device, cfg.model.dropout, cfg.optim.time_budget_s) == ("cuda", 0.1, 240)
    assert build_twin_pairs.worker_groups("cuda") == (("mlm",), ("ltr-masked",), ("ltr-all",))
    assert build_twin_pairs.worker_groups("cpu") == (("mlm", "ltr-masked"), ("ltr-all",))
    another_seed = build_twin_pairs.parse_args(["--work", str(tmp_path), "--device", "cuda", "--seed", "7",
                                                "--runs", "mlm", "ltr-masked"])  # the controlled pair alone
    assert build_twin_pairs.planned_runs(another_seed) == [("mlm",), ("ltr-masked",), ()]


def test_a_cpu_build_trains_the_runs_left_on_all_its_cores(tmp_path) -> None:
    every = build_twin_pairs.parse_args(["--work", str(tmp_path)])
    assert build_twin_pairs.planned_runs(every) == [("mlm", "ltr-masked"), ("ltr-all",)]  # about equal work a core
    controlled = build_twin_pairs.parse_args(["--work", str(tmp_path), "--runs", "mlm", "ltr-masked"])
    assert build_twin_pairs.planned_runs(controlled) == [("mlm",), ("ltr-masked",)]  # at once, not one after the other
    alone = build_twin_pairs.parse_args(["--work", str(tmp_path), "--runs", "ltr-all"])
    assert build_twin_pairs.planned_runs(alone) == [("ltr-all",)]
    cores = os.cpu_count() or 1
    assert build_twin_pairs.threads_per_run("cpu", 1) == cores and build_twin_pairs.threads_per_run("cuda", 1) == 1
    assert build_twin_pairs.threads_per_run("cpu", 2) == max(1, cores // 2)
    command = build_twin_pairs.engine_command("ltr-all", alone, threads=2)
    assert command[command.index("--num-threads") + 1] == "2"
    beside = build_twin_pairs.parse_args(["--work", str(tmp_path), "--runs", "ltr-all", "--threads", "1"])
    assert beside.threads == 1 and "'--num-threads' '1'" in build_twin_pairs.worker(("ltr-all",), beside, beside.threads)


def test_the_vocabulary_holds_every_cloze_answer_whole(tmp_path, corpus) -> None:
    tok = build_twin_pairs.learn_tokenizer(corpus, tmp_path / "tok", vocab_size=400)
    answers = build_twin_pairs.answer_words()
    assert len(answers) > 60 and all(tok.tokenize(word) == [word] for word in answers)
    assert tok.tokenize("The dog barked.") == ["the", "dog", "barked", "."]  # uncased, as bert-base-uncased


def test_every_common_checkpoint_is_measured_and_the_export_loads_in_stock_transformers(work, tmp_path) -> None:
    assets = tmp_path / "assets"
    assert measure_twin_pairs.main(["--work", str(work), "--assets", str(assets), "--export"]) == 0
    measured = json.loads((work / "measure.json").read_text())
    assert sorted(map(int, measured["steps"])) == [4, 8, 12]
    assert json.loads((assets / "curve.json").read_text())["schedule_restarts"] == []  # one schedule, ended at 12
    curve = twin_curve.read_curve(assets / "curve.json")
    assert curve.pairs["paper"].ltr == "ltr" and curve.pairs["controlled"].ltr == "ltr-masked"  # asset names
    assert curve.pairs["controlled"].tokens == [4 * 8 * 32, 8 * 8 * 32, 12 * 8 * 32]  # steps x batch x block
    mlm = AutoModelForMaskedLM.from_pretrained(str(assets / "mlm"), dtype=torch.float32).eval()
    ltr = AutoModelForCausalLM.from_pretrained(str(assets / "ltr"), dtype=torch.float32).eval()
    assert type(ltr) is BertLMHeadModel and ltr.config.is_decoder and mlm.config.vocab_size == ltr.config.vocab_size
    assert json.loads((assets / "mlm" / "config.json").read_text())["dtype"] == "float16"
    recipe = json.loads((measure_twin_pairs.step_folders(work / "mlm")[12] / "train_config.json").read_text())
    asked = json.loads((assets / "curve.json").read_text())["text_start"]  # the export asks them both ways too
    assert asked["blocks_began"] == recipe["data"]["block_starts"] and asked["tokens"] == 12 * 8 * 32
    assert set(asked["heldout"]) == set(asked["heldout_as_page"]) == {"mlm", "ltr-masked", "ltr"}
    build = json.loads((assets / "build.json").read_text())
    assert {k: (v["class"], v["step"], v["tokens"]) for k, v in build["twins"].items()} == {
        "mlm": ("BertForMaskedLM", 12, 12 * 8 * 32), "ltr-masked": ("BertLMHeadModel", 12, 12 * 8 * 32),
        "ltr": ("BertLMHeadModel", 12, 12 * 8 * 32)}  # the tiny runs read 32-token blocks
    # a save whose history an older engine resumed between two logs (a step short) still counts by its step
    folders = {run: measure_twin_pairs.step_folders(work / run)[12] for run in ("mlm", "ltr-masked", "ltr-all")}
    copied = tmp_path / "copy" / "mlm" / "steps" / "step-12"
    shutil.copytree(folders["mlm"], copied)
    state = json.loads((copied / "trainer_state.json").read_text())
    state["history"]["tokens"] = [n - 8 * 32 for n in state["history"]["tokens"]]
    (copied / "trainer_state.json").write_text(json.dumps(state))
    record = measure_twin_pairs.build_record({**folders, "mlm": copied}, measured, assets)
    assert record["twins"]["mlm"]["tokens"] == 12 * 8 * 32
    # the shipped held-out questions and landmarks are those the measurement asked
    heldout, counts = measure_twin_pairs.heldout_data(work)
    with np.load(assets / "heldout.npz") as data:
        shipped = {k: data[k] for k in data.files}
    assert np.array_equal(shipped.pop("blocks"), heldout) and str(shipped.pop("block_starts")) == "anywhere"
    recorded = RecordedLandmarks(shipped)
    asked = heldout_asked(AutoTokenizer.from_pretrained(str(work / "tokenizer")), heldout)
    want = counts.log_probs(asked.words, asked.left, asked.right)
    got = recorded.log_probs(asked.words, asked.left, asked.right)
    assert all(np.array_equal(got[k], want[k]) for k in got)
    with pytest.raises(ValueError, match="not the ones the landmarks were recorded for"):
        recorded.log_probs(asked.words[::-1], asked.left, asked.right)
    # the page's comparison on the recorded landmarks is the measurement's, from the models' weights
    last = measure_twin_pairs.step_folders(work / "mlm")[12], measure_twin_pairs.step_folders(work / "ltr-all")[12]
    twins = measure_twin_pairs.load(last[0], "mlm"), measure_twin_pairs.load(last[1], "ltr-all")
    again = heldout_by_position(*twins, heldout, recorded, max_blocks=len(heldout))
    assert again.overall == pytest.approx(measured["steps"]["12"]["paper"]["overall"])


def test_a_build_whose_blocks_began_at_text_starts_is_measured_and_shipped_as_its_recipe_says(corpus, tmp_path) -> None:
    """The GPU script's build (``BLOCK_STARTS=text``) through the measurement and the export, as a session with a
    GPU would ship it: the held-out blocks packed at text starts too, and the record saying so."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(corpus, work / "corpus.jsonl")
    shutil.copytree(tokenizer_dir(), work / "tokenizer")
    train_tiny_twins(work, str(work / "corpus.jsonl"), str(work / "tokenizer"), block_starts="text")
    assets = tmp_path / "assets"
    assert measure_twin_pairs.main(["--work", str(work), "--assets", str(assets), "--export"]) == 0
    assert json.loads((assets / "curve.json").read_text())["text_start"]["blocks_began"] == "text"
    text_packed, _ = measure_twin_pairs.heldout_data(work, "text")
    anywhere, _ = measure_twin_pairs.heldout_data(work)
    with np.load(assets / "heldout.npz") as data:
        shipped = data["blocks"]
    assert np.array_equal(shipped, text_packed) and not np.array_equal(shipped, anywhere)
    # a block after one whose body holds a [SEP] begins with a text of the corpus, from its first word
    tok = AutoTokenizer.from_pretrained(str(work / "tokenizer"))
    texts = [json.loads(line)["text"] for line in (work / "corpus.jsonl").read_text().splitlines()]
    openings = {tuple(ids[:6]) for ids in tok(texts, add_special_tokens=False)["input_ids"]}
    after_an_end = [block for before, block in pairwise(shipped) if tok.sep_token_id in before[1:-1]]
    assert after_an_end and all(tuple(block[1:7]) in openings for block in after_an_end)
    opened = [sum(tuple(block[1:7]) in openings for block in blocks) for blocks in (shipped, anywhere)]
    assert opened[0] > opened[1], opened  # cut anywhere, a block begins with a text's opening only by chance
    # the shipped file says how its blocks were packed, and the page asks each block's first sentence too
    recorded = read_heldout_file(assets / "heldout.npz")
    assert recorded.block_starts == "text" and np.array_equal(recorded.blocks, text_packed)
    as_text, as_anywhere = heldout_asked(tok, text_packed, "text"), heldout_asked(tok, text_packed)
    assert len(as_text.words) > len(as_anywhere.words)
    assert np.array_equal(recorded.landmarks.arrays["words"], as_text.words)


def test_a_build_continued_past_its_schedule_is_measured_with_the_line_where_its_learning_rate_rose_again(
        corpus, tmp_path) -> None:
    """A build that finished its 8 steps, then went on to 12 (the command line's --steps on a finished build: the
    learning rate warmed up again): its record and the page's curve say where, in tokens, beside the point it
    began from, and a build of one schedule has no such line."""
    from bertdemo.viz import twin_curve as curve_drawing

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(corpus, work / "corpus.jsonl")
    shutil.copytree(tokenizer_dir(), work / "tokenizer")
    train_tiny_twins(work, str(work / "corpus.jsonl"), str(work / "tokenizer"))
    train_tiny_twins(work, str(work / "corpus.jsonl"), str(work / "tokenizer"), resume=True, steps=12)
    assert read_state(measure_twin_pairs.step_folders(work / "ltr-all")[12])["rewarm_at"] == 8
    assets = tmp_path / "assets"
    assert measure_twin_pairs.main(["--work", str(work), "--assets", str(assets), "--export"]) == 0
    record = json.loads((assets / "curve.json").read_text())
    assert [p["step"] for p in record["checkpoints"]] == [4, 8, 12]
    assert record["schedule_restarts"] == [{"step": 8, "tokens": 8 * 8 * 32, "until_tokens": 12 * 8 * 32}]
    curve = twin_curve.read_curve(assets / "curve.json")
    assert curve.restarts == ((8 * 8 * 32, 12 * 8 * 32),)
    said = twin_curve.schedule_sentence(curve)
    assert said.startswith("At 2,048 tokens the three twins' learning rate had decayed to 0")
    assert "marked “lr schedule 2”" in said and "decayed to 0 again at 3,072 tokens" in said
    assert said in curve_drawing.curve_markdown(curve)  # the figure's text twin says it
    layout = curve_drawing.curve_spec(curve)["layout"]
    assert [(s["x0"], s["line"]["color"]) for s in layout["shapes"] if s["x0"] == 8 * 8 * 32] == [
        (8 * 8 * 32, curve_drawing.SCHEDULE_COLOR)]
    assert "lr schedule 2" in [a["text"] for a in layout["annotations"]]
    # the first schedule alone, as a record written before the field was (the shipped one of 10,000 steps)
    once = {**record, "checkpoints": record["checkpoints"][:2]}
    once.pop("schedule_restarts")
    (tmp_path / "once.json").write_text(json.dumps(once))
    first = twin_curve.read_curve(tmp_path / "once.json")
    assert first.restarts == () and twin_curve.schedule_sentence(first) == ""
    assert all(s["line"]["color"] != curve_drawing.SCHEDULE_COLOR for s in curve_drawing.curve_spec(first)["layout"]["shapes"])
    # a build continued twice, measured while its third schedule ran: each line, labelled as the figure labels it
    twice = dataclasses.replace(curve, restarts=((2048, 3072), (3072, None)))
    said = twin_curve.schedule_sentence(twice)
    assert "marked “lr schedule 2”), the rate warmed up again, then decayed to 0 again at 3,072 tokens" in said
    assert "At 3,072 tokens" in said and "marked “lr schedule 3”), the rate warmed up again, then still coming down at " \
        "the last point (3,072 tokens)" in said
    labels = [a["text"] for a in curve_drawing.curve_spec(twice)["layout"]["annotations"]]
    assert "lr schedule 2" in labels and "lr schedule 3" in labels


def test_a_schedule_restart_is_a_point_that_ended_a_schedule_and_the_runs_went_on_from() -> None:
    """Where each schedule begun again ended: at the next point that ended one, else still running at the last point;
    a stage's tokens counted after its offset; the last point (a build's end) is never a restart."""
    assert measure_twin_pairs.schedule_restarts([4, 8, 12, 16], {8, 16}, 100, 10) == [
        {"step": 8, "tokens": 180, "until_tokens": 260}]
    assert measure_twin_pairs.schedule_restarts([4, 8, 12, 16], {4, 8}, 0, 10) == [
        {"step": 4, "tokens": 40, "until_tokens": 80}, {"step": 8, "tokens": 80, "until_tokens": None}]
    assert measure_twin_pairs.schedule_restarts([4, 8, 12], {12}, 0, 10) == []  # one schedule, ended at the last


def _pair_curve(tokens: list[int], gaps: list[float]) -> list[dict]:
    """A paper pair's measured checkpoints whose left-to-right loss is ``gap`` above the masked LM's (< 0: behind)."""
    return [{"tokens": t, "paper": {"overall": {"mlm": 5.0, "ltr-all": 5.0 + g}}} for t, g in zip(tokens, gaps)]


def test_a_gap_closing_too_slowly_to_meet_is_said_to_meet_past_the_far_mark_not_an_overflow() -> None:
    """Tiny runs whose losses barely differ (a slope of a millionth of a nat per e-fold) put the straight line's zero
    at e^7000 tokens: the record says "past 10^15 tokens" and the page's sentences say so, where math.exp overflowed
    and the GPU script left the models unexported."""
    tokens = [2048, 4096, 6144]
    slow = measure_twin_pairs.crossover(_pair_curve(tokens, [-0.0075 + 1e-6 * np.log(t) for t in tokens]), "paper")
    assert slow["crosses"] is False and slow["extrapolated_tokens"] is None
    assert slow["beyond_tokens"] == measure_twin_pairs.FAR_TOKENS == 1e15
    near = measure_twin_pairs.crossover(_pair_curve([1e6, 2e6, 4e6], [-0.3, -0.2, -0.1]), "paper")
    assert near["extrapolated_tokens"] == pytest.approx(8e6) and "beyond_tokens" not in near
    widening = measure_twin_pairs.crossover(_pair_curve([1e6, 2e6, 4e6], [-0.1, -0.2, -0.3]), "paper")
    assert widening["extrapolated_tokens"] is None and "beyond_tokens" not in widening
    pair = twin_curve.PairCurve(pair="paper", mlm="mlm", ltr="ltr", tokens=tokens, mlm_loss=[5.0] * 3,
                                ltr_loss=[4.99] * 3, landmarks={}, crossover=slow, buckets=[], bucket_counts=[],
                                mlm_by_position=[], ltr_by_position=[], questions=10)
    assert twin_curve.crossover_sentence(pair) == (
        "The left-to-right LM still leads at 6,144 tokens, by 0.01 nats per word. The gap shrinks over the last three "
        "checkpoints, but so slowly that on its straight line (in log tokens) the lines would meet only past "
        "1.0 × 10¹⁵ tokens.")


def test_the_prepare_stage_passes_tatoeba_and_story_files_to_the_corpus_and_records_them(tmp_path, monkeypatch) -> None:
    asked = []

    def corpus(out, tatoeba=None, stories=None):
        asked.append((tatoeba, stories))
        out.write_text('{"text": "The owl hooted."}\n', encoding="utf-8")
        return {"wiki": 0, "tatoeba": 1}

    def tokenizer(corpus_path, out, vocab_size):
        out.mkdir(parents=True)
        (out / "tokenizer.json").write_text("{}", encoding="utf-8")

    monkeypatch.setattr(build_twin_pairs, "build_corpus", corpus)
    monkeypatch.setattr(build_twin_pairs, "learn_tokenizer", tokenizer)
    pairs, tales = tmp_path / "swe.txt", tmp_path / "tales.txt"
    argv = ["--work", str(tmp_path / "w"), "--prepare", "--tatoeba", str(pairs), "--stories", str(tales)]
    assert build_twin_pairs.main(argv) == 0
    record = json.loads((tmp_path / "w" / "build_record.json").read_text(encoding="utf-8"))
    assert asked == [([str(pairs)], [str(tales)])]
    assert record["corpus"] == {"wiki": 0, "tatoeba": 1} and record["tatoeba_files"] == ["swe.txt"]
    assert record["story_files"] == ["tales.txt"]
    # a sitting's record names each text file, not where it lay on the machine that built it
    assert build_twin_pairs.recorded_command("build_twin_pairs", argv, [str(pairs), str(tales)]) == (
        f"python -m bertdemo.tools.build_twin_pairs --work {tmp_path / 'w'} --prepare --tatoeba swe.txt "
        "--stories tales.txt")


@pytest.mark.slow  # a real sitting: the tool, a worker and the engine, stopped as a person stops it
def test_a_stopped_sitting_saves_each_run_where_it_stood_and_keeps_its_record(tmp_path, corpus) -> None:
    """SIGTERM to the tool (as a machine's shutdown sends, or kill): the running engine finishes its step and saves,
    the next run of its worker is not started, and the record says when the sitting began and that it was stopped."""
    work = tmp_path / "w"
    work.mkdir()
    shutil.copy(corpus, work / "corpus.jsonl")
    shutil.copytree(tokenizer_dir(), work / "tokenizer")
    tool = subprocess.Popen([sys.executable, "-m", "bertdemo.tools.build_twin_pairs", "--work", str(work),
                             "--preset", "1,32,2,64", "--batch-size", "4", "--steps", "1000000",
                             "--checkpoint-every", "20"], cwd=build_twin_pairs.ROOT)  # mlm then ltr-masked; ltr-all
    try:
        deadline = time.monotonic() + 600  # seconds on a quiet machine; room for a loaded one
        saved = [work / run / "LATEST" for run in ("mlm", "ltr-all")]  # each worker's first run, training
        while not all(f.is_file() for f in saved) and time.monotonic() < deadline and tool.poll() is None:
            time.sleep(0.2)
        assert all(f.is_file() for f in saved), "a first run saved no checkpoint within 10 minutes"
        during = json.loads((work / "build_record.json").read_text(encoding="utf-8"))
        tool.send_signal(signal.SIGTERM)
        assert tool.wait(timeout=600) == 130
    finally:
        if tool.poll() is None:
            tool.kill()
    # written before the runs began: the command and the sitting's start
    assert during["command"].startswith("python -m bertdemo.tools.build_twin_pairs --work ")
    assert list(during["sittings"][0]) == ["started", "machine", "process"]
    record = json.loads((work / "build_record.json").read_text(encoding="utf-8"))
    (sitting,) = record["sittings"]
    assert sitting["exit_codes"] == [130, 130] and "stopped" in sitting and "ended" not in sitting
    saved = read_state(latest_checkpoint(work / "mlm"))["step"]
    assert saved >= 20 and record["runs"]["mlm"]["step"] == saved  # the record names the step the run saved at
    assert "stopped: step" in (work / "mlm.log").read_text(encoding="utf-8")
    assert not (work / "ltr-masked.log").exists()  # the first worker's next run never began
    assert "stopped: step" in (work / "ltr-all.log").read_text(encoding="utf-8")  # the other worker's run saved too


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="the kernel groups no sessions (autogroup)")
def test_a_worker_started_nice_stays_nice_in_its_own_session(tmp_path) -> None:
    """A worker runs in a session of its own; where the scheduler groups sessions (autogroup), the group's nice
    decides its share, so the worker's group takes the nice the build was started with."""
    script = build_twin_pairs.worker_script([("probe", ["cat", "/proc/self/autogroup"])], tmp_path)
    worker = subprocess.Popen(["nice", "-n", "7", "bash", "-c", script], start_new_session=True)
    assert worker.wait(timeout=60) == 0
    assert (tmp_path / "probe.log").read_text().strip().endswith(f"nice {min(19, os.nice(0) + 7)}")  # nice adds


def test_two_sittings_of_one_folder_at_once_keep_each_others_record(tmp_path) -> None:
    """The third run trained beside the controlled pair (two sittings of one folder): each writes its own sitting
    into the record as it is on disk, so the one that writes last does not drop the other's."""
    path = tmp_path / "build_record.json"
    path.write_text(json.dumps({"sittings": [{"started": "earlier"}], "corpus": {"wiki": 1}}), encoding="utf-8")
    pair_record, pair = json.loads(path.read_text()), {"started": "t1", "process": 11}
    build_twin_pairs.write_sitting(path, {**pair_record, "command": "pair"}, pair)
    third_record, third = json.loads(path.read_text()), {"started": "t2", "process": 12}
    build_twin_pairs.write_sitting(path, {**third_record, "command": "third"}, third)
    pair["ended"] = "t3"  # the pair's sitting ends: its record in memory never saw the third's sitting
    build_twin_pairs.write_sitting(path, {**pair_record, "command": "pair"}, pair, after=lambda r: r.update(runs=2))
    final = json.loads(path.read_text())
    assert final["sittings"] == [{"started": "earlier"}, {"started": "t1", "process": 11, "ended": "t3"},
                                 {"started": "t2", "process": 12}]
    assert final["corpus"] == {"wiki": 1} and final["command"] == "pair" and final["runs"] == 2


@pytest.mark.slow  # 18 fine-tunes of the tiny twins
def test_table5_cells_run_once_each_and_the_shipped_table_is_their_summary(work, tmp_path) -> None:
    """``--table5`` end to end: one model's cells in a sitting of its own (``--cells-at``, as beside a training),
    then the rest; each cell run once; the exported ``table5.json`` is the cells' Table 5, read as the page reads it."""
    from bertdemo.finetune import table5

    cells_path = work / "table5_cells.json"
    assert measure_twin_pairs.main(["--work", str(work), "--table5", "mlm", "--cells-at", "12",
                                    "--table5-steps", "10"]) == 0
    first = json.loads(cells_path.read_text())
    assert sorted(first) == [f"{task}/mlm/{seed}@12" for task in ("names", "topic") for seed in (0, 1, 2)]
    assets = tmp_path / "assets"
    assert measure_twin_pairs.main(["--work", str(work), "--assets", str(assets), "--table5", "--table5-steps", "10",
                                    "--export"]) == 0
    cells = json.loads(cells_path.read_text())
    assert len(cells) == 2 * 3 * 3 and all(cells[key] == cell for key, cell in first.items())  # none run again
    shipped = table5.read_shipped(assets / "table5.json")
    assert shipped["step"] == 12 and table5.shipped_settings(assets / "table5.json").steps == 10
    scores = {task: {kind: [cells[f"{task}/{kind}/{seed}@12"]["test"] for seed in (0, 1, 2)]
                     for kind in ("mlm", "ltr-masked", "ltr")} for task in ("topic", "names")}
    assert {k: v for k, v in shipped.items() if k in table5.table_from_scores(scores, [0, 1, 2])} == \
        table5.table_from_scores(scores, [0, 1, 2])


@pytest.mark.parametrize(("failing", "code"), [("build_twin_pairs", 4), ("measure_twin_pairs", 3)])
def test_the_gpu_script_exits_with_the_code_of_the_stage_that_failed(tmp_path, failing, code) -> None:
    """A session with a lent GPU reads the script's exit: a stage that failed (here a stand-in interpreter fails the
    one named and passes the others) makes it non-zero, and what was written still comes back."""
    python = tmp_path / "python"
    python.write_text(f'#!/usr/bin/env bash\ncase "$*" in *{failing}*) echo "{failing} failed" >&2; exit {code};; esac\n'
                      'exit 0\n')
    python.chmod(0o755)
    (tmp_path / "src").mkdir()
    env = {**os.environ, "PYTHON": str(python), "DEVICE": "cpu", "WORK": str(tmp_path / "work")}
    done = subprocess.run(["bash", str(build_twin_pairs.ROOT / "bertdemo/tools/build_twin_pairs_gpu.sh"),
                           str(tmp_path / "src"), str(tmp_path / "out")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == code and f"{failing} failed" in done.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["logs.tgz"]


@pytest.mark.slow  # the GPU path's whole script, on this CPU in a tiny shape: the build, the measurement, the archives
def test_the_gpu_script_runs_end_to_end_and_brings_back_every_archive(corpus, tmp_path) -> None:
    """``build_twin_pairs_gpu.sh`` is what a session with a lent GPU runs once, on a machine without a network: run
    here with ``DEVICE=cpu`` and a tiny shape, it trains the three runs packed at text starts, measures and exports
    them, and leaves in its out folder the archives a session unpacks into the shipped twins."""
    import tarfile

    source, out = tmp_path / "prepared", tmp_path / "out"
    source.mkdir()
    shutil.copy(corpus, source / "corpus.jsonl")
    shutil.copytree(tokenizer_dir(), source / "tokenizer")
    env = {**os.environ, "PYTHON": sys.executable, "DEVICE": "cpu", "PRESET": "1,32,2,64", "STEPS": "12",
           "BATCH": "4", "EVERY": "4", "BUDGET": "900", "WORK": str(tmp_path / "work")}
    done = subprocess.run(["bash", str(build_twin_pairs.ROOT / "bertdemo/tools/build_twin_pairs_gpu.sh"), str(source),
                           str(out)], cwd=build_twin_pairs.ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["curve.tgz", "logs.tgz", "ltr-masked.tgz", "ltr.tgz", "measure.json",
                                                     "mlm.tgz"], done.stdout[-2000:] + done.stderr[-2000:]
    assets = tmp_path / "assets"
    for archive in out.glob("*.tgz"):
        if archive.name != "logs.tgz":
            with tarfile.open(archive) as tar:
                tar.extractall(assets, filter="data")
    curve = json.loads((assets / "curve.json").read_text())
    assert curve["text_start"]["blocks_began"] == "text" and curve["checkpoints"][-1]["tokens"] == 12 * 4 * 128
    assert read_heldout_file(assets / "heldout.npz").block_starts == "text"
    build = json.loads((assets / "build.json").read_text())
    assert {kind: twin["step"] for kind, twin in build["twins"].items()} == {"mlm": 12, "ltr-masked": 12, "ltr": 12}
    assert type(AutoModelForMaskedLM.from_pretrained(str(assets / "mlm"))).__name__ == "BertForMaskedLM"
    assert "build: " in done.stdout and "measure: " in done.stdout

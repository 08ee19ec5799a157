"""A later stage of the twins (``bertdemo.tools.continue_twins``, measured by ``measure_twin_pairs --stage``): its
corpus never trains a held-out word, and its checkpoints continue the shipped curve and record."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from transformers import AutoTokenizer

from bertdemo.models import twin_curve
from bertdemo.models.embedded import tokenizer_dir, wiki_summaries
from bertdemo.pretrain import __main__ as engine_cli
from bertdemo.pretrain.config import TrainConfig, leaf_fields
from bertdemo.pretrain.data import prepare_blocks
from bertdemo.tools import continue_twins, measure_twin_pairs
from bertdemo.viz import twin_curve as twin_curve_viz
from tests.helpers import train_tiny_twins

SEQ_LEN = 32  # the tiny runs' block


def stream(blocks: np.ndarray) -> str:
    """The token stream a set of blocks holds (their bodies, without [CLS] and [SEP]), as text to search in."""
    return "," + ",".join(map(str, blocks[:, 1:-1].reshape(-1).tolist())) + ","


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(tokenizer_dir()))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A base corpus: 200 Wikipedia summaries, each once."""
    path = tmp_path_factory.mktemp("base") / "base.jsonl"
    path.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]) + "\n", encoding="utf-8")
    return path


def pair_file(folder, held_sentence: str):
    """A Tatoeba sentence-pair file: three everyday sentences, a filled-in cloze sentence and one of the held-out
    documents' sentences."""
    path = folder / "swe.txt"
    lines = ["The kettle is boiling.\tVattnet kokar.", "Please shut the window.\tStäng fönstret.",
             "My sister likes tea.\tMin syster gillar te.", "The dog barked at the mailman.\tHunden skällde.",
             f"{held_sentence}\tNågot."]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stage_of(base, folder, tokenizer):
    """A stage's corpus built from ``base`` with the pair file above (two copies); (record, held-out documents)."""
    docs = [json.loads(line)["text"] for line in base.read_text(encoding="utf-8").splitlines()]
    cut = continue_twins.heldout_start(continue_twins.doc_lengths(docs, tokenizer), seq_len=SEQ_LEN)
    held_sentence = re.split(r"(?<=[.!?])\s+", docs[cut + 1])[0]
    record = continue_twins.stage_corpus(base, folder / "corpus.jsonl", [str(pair_file(folder, held_sentence))], 2,
                                         tokenizer, seed=0, seq_len=SEQ_LEN)
    return record, docs[cut:], held_sentence


def test_the_stage_corpus_trains_no_held_out_word_and_holds_the_new_sentences(base, tmp_path, tokenizer) -> None:
    record, held, held_sentence = stage_of(base, tmp_path, tokenizer)
    texts = [json.loads(line)["text"] for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert texts[-len(held):] == held  # the base's held-out documents last, in order
    trained = texts[:-len(held)]
    assert [trained.count(s) for s in ("The kettle is boiling.", "Please shut the window.", "My sister likes tea.")] \
        == [2, 2, 2]  # each copy once
    assert "The dog barked at the mailman." not in trained  # a filled-in cloze sentence is never trained on
    assert held_sentence not in trained  # nor a sentence of a held-out document
    assert (record["tatoeba_sentences"], record["tatoeba_dropped_for_cloze"], record["tatoeba_dropped_as_heldout"],
            record["base_heldout_documents"]) == (3, 1, 1, len(held))
    stage = prepare_blocks(str(tmp_path / "corpus.jsonl"), tokenizer, SEQ_LEN, tmp_path / "cache", 50_000_000,
                           record["heldout_fraction"])
    assert len(stage.train) * (SEQ_LEN - 2) <= record["training_tokens"]  # training ends before the held-out text
    shipped = prepare_blocks(str(base), tokenizer, SEQ_LEN, tmp_path / "cache", 50_000_000, 0.02)
    # every word the build held out is held out again (the stream's cut-off tail, under a block, aside: it is in
    # neither split)
    assert stream(shipped.heldout[:-1]) in stream(stage.heldout)


def test_stories_join_the_stage_corpus_each_copy_once_and_decontaminated(base, tmp_path, tokenizer) -> None:
    docs = [json.loads(line)["text"] for line in base.read_text(encoding="utf-8").splitlines()]
    cut = continue_twins.heldout_start(continue_twins.doc_lengths(docs, tokenizer), seq_len=SEQ_LEN)
    held_sentence = re.split(r"(?<=[.!?])\s+", docs[cut + 1])[0]
    stories = tmp_path / "stories.txt"
    lines = [
        "Once upon a time a little duck quacked at the pond. Her mother duck swam to her.",
        "",  # a blank line is no story
        "Tom had a red  ball.   He threw it to   his dog, and the dog barked and ran after it.",
        "Once upon a time a little duck quacked at the pond. Her mother duck swam to her.",  # the same story again
        "The dog barked at the mailman. Then it slept.",  # holds a filled-in cloze sentence
        held_sentence,  # a held-out document's sentence
    ]
    stories.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    record = continue_twins.stage_corpus(base, tmp_path / "corpus.jsonl", [], 0, tokenizer, seed=0, seq_len=SEQ_LEN,
                                         stories=[str(stories)], story_copies=3)
    texts = [json.loads(line)["text"] for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    trained = texts[:-record["base_heldout_documents"]]
    assert [trained.count(s) for s in (
        "Once upon a time a little duck quacked at the pond. Her mother duck swam to her.",
        "Tom had a red ball. He threw it to his dog, and the dog barked and ran after it.",  # whitespace normalised
        "The dog barked at the mailman. Then it slept.", held_sentence)] == [3, 3, 0, 0]
    assert len(trained) == len(docs) - record["base_heldout_documents"] + 2 * 3
    assert (record["stories"], record["stories_dropped_for_cloze"], record["stories_dropped_as_heldout"],
            record["story_copies"], record["story_files"], record["tatoeba_sentences"]) == (2, 1, 1, 3, ["stories.txt"], 0)
    stage = prepare_blocks(str(tmp_path / "corpus.jsonl"), tokenizer, SEQ_LEN, tmp_path / "cache", 50_000_000,
                           record["heldout_fraction"])
    assert len(stage.train) * (SEQ_LEN - 2) <= record["training_tokens"]  # training ends before the held-out text
    with pytest.raises(FileNotFoundError, match="Story file not found"):
        continue_twins.stage_corpus(base, tmp_path / "other.jsonl", [], 0, tokenizer, seed=0, seq_len=SEQ_LEN,
                                    stories=[str(tmp_path / "missing.txt")])


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, base):
    """A tiny build exported as the app ships one (its curve, record and held-out questions), from ``base``."""
    work = tmp_path_factory.mktemp("build")
    shutil.copy(base, work / "corpus.jsonl")
    shutil.copytree(tokenizer_dir(), work / "tokenizer")
    train_tiny_twins(work, str(work / "corpus.jsonl"), str(work / "tokenizer"))
    assets = work / "assets"
    assert measure_twin_pairs.main(["--work", str(work), "--assets", str(assets), "--export"]) == 0
    return assets


def test_a_stage_continues_the_shipped_curve_and_record(shipped, base, tmp_path, tokenizer) -> None:
    work = tmp_path / "stage"
    work.mkdir()
    shutil.copy(base, work / "base.jsonl")
    shutil.copytree(shipped, work / "prior", ignore=shutil.ignore_patterns("mlm", "ltr", "ltr-masked"))
    record, _, _ = stage_of(base, work, tokenizer)
    (work / "stage.json").write_text(json.dumps({"stage": record, "command": "continue_twins (test)",
                                                 "sittings": [{"wall_s": 1}]}), encoding="utf-8")
    train_tiny_twins(work, str(work / "corpus.jsonl"), str(tokenizer_dir()),  # each from its shipped weights
                     init_from=lambda run: str(shipped / measure_twin_pairs.EXPORT_NAMES[run]),
                     heldout_fraction=record["heldout_fraction"])
    assets = tmp_path / "assets"
    assert measure_twin_pairs.main(["--work", str(work), "--stage", "--assets", str(assets), "--export"]) == 0
    before, after = twin_curve.read_curve(shipped / "curve.json"), twin_curve.read_curve(assets / "curve.json")
    build_tokens = 8 * 8 * SEQ_LEN
    assert after.pairs["controlled"].tokens == [4 * 256, build_tokens, build_tokens + 4 * 256, build_tokens + 8 * 256]
    assert after.pairs["paper"].mlm_loss[:2] == before.pairs["paper"].mlm_loss  # the build's points kept as measured
    assert [s["from_tokens"] for s in after.stages] == [0, build_tokens]
    assert [s["from_tokens"] for s in twin_curve.later_stages(after)] == [build_tokens]
    assert twin_curve.stage_sentence(after).startswith("From 2,048 tokens the three twins read on from their weights")
    assert "3 everyday sentences from Tatoeba (2 copies)" in twin_curve.stage_sentence(after)
    assert twin_curve.stage_sentence(before) == ""
    spec = twin_curve_viz.curve_spec(after)
    assert [n["text"] for n in spec["layout"]["annotations"]][-1] == "everyday text added"
    assert spec["layout"]["shapes"][-1]["x0"] == build_tokens
    # the stage close up: its points from the build's last, against the tokens read since it began (linear x)
    close_up = twin_curve_viz.stage_spec(after)
    assert [trace["x"] for trace in close_up["data"][:3]] == [[0, 4 * 256, 8 * 256]] * 3
    assert close_up["data"][0]["y"] == [round(v, 4) for v in after.pairs["controlled"].mlm_loss[1:]]
    assert close_up["data"][2]["y"] == [round(v, 4) for v in after.pairs["paper"].ltr_loss[1:]]
    assert close_up["layout"]["xaxis"].get("type") is None  # linear
    assert close_up["layout"]["shapes"] == [] and close_up["layout"]["title"]["text"].startswith("Close up: the stage")
    assert twin_curve_viz.stage_spec(before) is None  # one build: no close up
    # a further stage: the close up counts from where the first later stage began and marks where the next began;
    # the log curve marks the first alone (the next would stand on top of it)
    two = dataclasses.replace(after, stages=(*after.stages, {"stage": 2, "from_tokens": build_tokens + 4 * 256}))
    close_up = twin_curve_viz.stage_spec(two)
    assert close_up["data"][0]["x"] == [0, 4 * 256, 8 * 256]
    assert [(line["x0"], note["text"]) for line, note in zip(close_up["layout"]["shapes"],
                                                             close_up["layout"]["annotations"], strict=True)] == [
        (4 * 256, "stage 3 began")]
    assert close_up["layout"]["title"]["text"].startswith("Close up: the 2 later stages from")
    assert [n["text"] for n in twin_curve_viz.curve_spec(two)["layout"]["annotations"]].count("everyday text added") == 1
    # the stage's measurement asked the shipped held-out questions (checked against them), with the build's landmarks
    with np.load(shipped / "heldout.npz") as was, np.load(assets / "heldout.npz") as now:
        assert all(np.array_equal(was[k], now[k]) for k in was.files) and set(was.files) == set(now.files)
    build = json.loads((assets / "build.json").read_text())
    assert {k: (v["step"], v["stage_tokens"], v["tokens"]) for k, v in build["twins"].items()} == {
        kind: (8, 8 * 256, 2 * 8 * 256) for kind in ("mlm", "ltr-masked", "ltr")}
    assert [s["corpus"].get("tatoeba_copies") for s in build["stages"][1:]] == [2]
    assert build["stages"][0]["corpus"] == json.loads((shipped / "build.json").read_text())["corpus"]


def test_each_run_of_a_stage_starts_from_its_shipped_twin_with_one_recipe(tmp_path) -> None:
    args = continue_twins.parse_args(["--work", str(tmp_path), "--steps", "2000"])
    stage = {"heldout_fraction": 0.008344}
    configs = {}
    for run in measure_twin_pairs.RUNS:
        command = continue_twins.engine_command(run, args, stage)
        parsed = vars(engine_cli.build_parser().parse_args(command[command.index("bertdemo.pretrain") + 1:]))
        configs[run] = TrainConfig.from_flat(**{f.name: parsed[f.name] for _, f in leaf_fields() if f.name in parsed})
        configs[run].validate()  # the engine takes the command as it is
    assert {run: Path(cfg.model.init_from).name for run, cfg in configs.items()} == {
        "mlm": "mlm", "ltr-masked": "ltr-masked", "ltr-all": "ltr"}  # each from its own shipped folder
    assert {Path(cfg.data.tokenizer).name for cfg in configs.values()} == {"mlm"}  # the twins' one vocabulary
    flat = {run: cfg.flat() for run, cfg in configs.items()}
    differing = {run: {k for k in flat[run] if flat[run][k] != flat["mlm"][k]} for run in ("ltr-masked", "ltr-all")}
    assert differing == {"ltr-masked": {"objective", "ltr_targets", "init_from"},
                         "ltr-all": {"objective", "init_from"}}
    assert (configs["mlm"].optim.steps, configs["mlm"].optim.time_budget_s, configs["mlm"].data.heldout_fraction,
            configs["mlm"].system.seed) == (2000, 0, 0.008344, 1337)  # the three end on the same step


def test_the_curve_names_each_text_a_stage_added() -> None:
    curve = SimpleNamespace(stages=(
        {"from_tokens": 0, "corpus": {"wiki": 7322}},
        {"from_tokens": 98_000_000, "corpus": {"tatoeba_sentences": 201_418, "tatoeba_copies": 3}},
        {"from_tokens": 105_000_000, "corpus": {"tatoeba_sentences": 201_418, "tatoeba_copies": 1,
                                                "stories": 8_224, "story_copies": 4}}))
    first, second = twin_curve.stage_sentence(curve).split(". From ")
    assert "mixed with 201,418 everyday sentences from Tatoeba (3 copies):" in first
    assert first.startswith("From 98 M tokens the three twins read on") and second.startswith("105 M tokens")
    assert "mixed with 201,418 everyday sentences from Tatoeba and 8,224 short stories from TinyStories (4 copies):" \
        in second


def test_a_stage_refuses_twins_whose_blocks_began_at_a_texts_start(tmp_path) -> None:
    """Its held-out split is worked out for blocks cut anywhere (the first shipped builds'): twins built with
    --block-starts text (the shipped ones now) are refused with the reason and the way on, before anything is built."""
    with pytest.raises(SystemExit, match=r"--block-starts text.*build_twin_pairs .*--steps"):
        continue_twins.check_packed_anywhere()  # the shipped twins: packed at text starts
    (tmp_path / "curve.json").write_text(json.dumps({"text_start": {"blocks_began": "anywhere"}}), encoding="utf-8")
    continue_twins.check_packed_anywhere(tmp_path)
    (tmp_path / "curve.json").write_text(json.dumps({"date": "2026-12-04"}), encoding="utf-8")  # before the record
    continue_twins.check_packed_anywhere(tmp_path)

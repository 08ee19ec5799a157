"""Table 5 in miniature: the left-to-right twin's sentence head reads its last piece, the left-only constraint
holds through fine-tuning, a cell chooses on validation and reports on test, the table's arithmetic and words are
exact, and a live cell runs in the training slot like any run."""

from __future__ import annotations

import json
import math

import pytest
import torch
from transformers import BertForMaskedLM, BertLMHeadModel

from bertdemo.finetune import table5
from bertdemo.finetune.engine import batch_of, encode
from bertdemo.finetune.table5 import CellSettings
from bertdemo.finetune.twin_finetune import build_twin, finetune_twin, sentence_logits
from bertdemo.models import twin_curve
from bertdemo.models.twins import PAIRS
from bertdemo.runs.status import Status
from bertdemo.settings import ServerSettings
from tests.helpers import name_task, run_services, tiny_model_dir, wait_until, word_task

TINY = CellSettings(steps=10, batch_size=8, learning_rate=3e-3, eval_every=5)


@pytest.fixture(scope="module")
def tiny_twins(tmp_path_factory, tokenizer):
    """A tiny masked-LM twin and left-to-right twin (seed-0 weights of one shape), saved as model folders."""
    root = tmp_path_factory.mktemp("tiny-twins")
    return {"mlm": tiny_model_dir(BertForMaskedLM, root / "mlm", tokenizer),
            "ltr": tiny_model_dir(BertLMHeadModel, root / "ltr", tokenizer, is_decoder=True)}


def classifier(tiny_twins, kind: str):
    model, tokenizer = build_twin(table5.twin_config(kind, 0, TINY, "topic"), ["a", "b", "c"], "topic", tiny_twins[kind])
    return model.eval(), tokenizer


# --- the sentence head -------------------------------------------------------------------------------------
def test_the_left_to_right_sentence_head_reads_the_last_piece(tiny_twins):
    model, tok = classifier(tiny_twins, "ltr")
    assert model.config.is_decoder  # the left-only constraint kept at fine-tuning
    ids = encode(tok, ["the dog barked at the mailman ."], 48)
    batch = batch_of(ids, tok.pad_token_id, torch.device("cpu"))
    with torch.no_grad():
        hidden = model.bert(**batch, use_cache=False).last_hidden_state
        by_hand = model.classifier(model.bert.pooler.activation(model.bert.pooler.dense(hidden[:, len(ids[0]) - 1])))
        got = sentence_logits(model, batch)
    assert torch.equal(got, by_hand)
    assert tok.convert_ids_to_tokens(ids[0][-1]) == "[SEP]"  # the last piece: the one that has seen the sentence
    # its [CLS] sees only itself (the causal mask): a head there could not read the sentence; the last piece can
    other = batch_of(encode(tok, ["the cat slept on the warm mat ."], 48), tok.pad_token_id, torch.device("cpu"))
    with torch.no_grad():
        other_hidden = model.bert(**other, use_cache=False).last_hidden_state
        torch.testing.assert_close(other_hidden[:, 0], hidden[:, 0], rtol=0, atol=1e-6)
        assert not torch.allclose(sentence_logits(model, other), got)


def test_the_left_to_right_sentence_score_does_not_change_with_padding(tiny_twins):
    model, tok = classifier(tiny_twins, "ltr")
    short, long = "the dog barked .", "a much longer sentence about the history of the old town and its river ."
    alone = batch_of(encode(tok, [short], 48), tok.pad_token_id, torch.device("cpu"))
    padded = batch_of(encode(tok, [short, long], 48), tok.pad_token_id, torch.device("cpu"))
    assert int(padded["attention_mask"][0].sum()) < padded["input_ids"].shape[1]  # the short one is padded
    with torch.no_grad():
        a, b = sentence_logits(model, alone)[0], sentence_logits(model, padded)[0]
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_the_masked_lm_sentence_head_is_berts_own(tiny_twins):
    model, tok = classifier(tiny_twins, "mlm")
    assert not model.config.is_decoder
    batch = batch_of(encode(tok, ["the dog barked .", "a longer sentence than that one ."], 48), tok.pad_token_id,
                     torch.device("cpu"))
    with torch.no_grad():
        torch.testing.assert_close(sentence_logits(model, batch), model(**batch).logits, rtol=0, atol=1e-6)


# --- the left-only constraint through fine-tuning ---------------------------------------------------------------
def _token_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long)).logits[0]


@pytest.mark.parametrize("task", ["names", "topic"])
def test_the_left_only_constraint_holds_after_fine_tuning(tiny_twins, tokenizer, task):
    data = name_task(40) if task == "names" else word_task(20)
    result = finetune_twin("ltr", task, 0, data, TINY, folder=tiny_twins["ltr"], keep_model=True)
    assert result.status == Status.FINISHED and result.steps == 10
    model = result.model
    assert model.config.is_decoder and not model.training
    ids = tokenizer("then the dog of alice went to paris with a car .")["input_ids"]
    changed = list(ids)
    i = 5
    changed[i + 1] = tokenizer.convert_tokens_to_ids("rome")  # a later token changes
    with torch.no_grad():
        hidden = model.bert(input_ids=torch.tensor([ids]), use_cache=False).last_hidden_state[0]
        hidden_changed = model.bert(input_ids=torch.tensor([changed]), use_cache=False).last_hidden_state[0]
    assert torch.equal(hidden[: i + 1], hidden_changed[: i + 1])  # positions 0..i: bit-identical
    assert not torch.equal(hidden[i + 1], hidden_changed[i + 1])
    if task == "names":
        assert torch.equal(_token_logits(model, ids)[: i + 1], _token_logits(model, changed)[: i + 1])


def test_the_masked_lm_twin_reads_both_sides_after_fine_tuning(tiny_twins, tokenizer):
    result = finetune_twin("mlm", "names", 0, name_task(40), TINY, folder=tiny_twins["mlm"], keep_model=True)
    ids = tokenizer("then the dog of alice went to paris with a car .")["input_ids"]
    changed = list(ids)
    changed[6] = tokenizer.convert_tokens_to_ids("rome")
    assert not torch.equal(_token_logits(result.model, ids)[:6], _token_logits(result.model, changed)[:6])


def test_a_cell_is_chosen_on_validation_and_scored_on_test(tiny_twins):
    data = name_task(40)
    result = finetune_twin("ltr", "names", 1, data, CellSettings(steps=10, batch_size=8, learning_rate=3e-3,
                                                                   eval_every=5),
                           folder=tiny_twins["ltr"], keep_model=True)
    assert result.chosen_step in (0, 5, 10)
    from bertdemo.finetune import token_engine
    from bertdemo.finetune.twin_finetune import names_scores

    tok = build_twin(table5.twin_config("ltr", 1, TINY, "names"), list(data.labels), "names", tiny_twins["ltr"])[1]
    test = token_engine.align(tok, [s.words for s in data.test], None, 64)
    val = token_engine.align(tok, [s.words for s in data.validation], [s.label_ids for s in data.validation], 64)
    assert names_scores(result.model, val, data.validation, 0)[0] == pytest.approx(result.val_score, abs=1e-12)
    assert names_scores(result.model, test, data.test, 0)[0] == pytest.approx(result.test_score, abs=1e-12)
    again = finetune_twin("ltr", "names", 1, data, TINY, folder=tiny_twins["ltr"])
    assert again.test_score == result.test_score  # seeded: the same cell twice gives the same score


def test_a_cell_its_time_budget_ends_keeps_its_best_weights_unless_too_few_steps_ran(tiny_twins):
    """A public server's time budget (under its cap) ends a cell before its planned steps: scored on test with its
    best validation weights; ended before a quarter of an epoch, it says so and has no score. The clock is the
    steps taken, 10 s each."""
    def budgeted(data, budget_s):
        steps_taken = [0]
        return finetune_twin("ltr", "names", 1, data, TINY, folder=tiny_twins["ltr"], keep_model=True,
                             clock=lambda: 10.0 * steps_taken[0], on_step=lambda step: steps_taken.__setitem__(0, step),
                             time_budget_s=budget_s)

    data = name_task(40)
    cut = budgeted(data, 65.0)
    assert (cut.steps, cut.planned_steps, cut.cut_by_budget, cut.status) == (7, 10, True, Status.FINISHED)
    assert cut.chosen_step in (0, 5, 7)
    from bertdemo.finetune import token_engine
    from bertdemo.finetune.twin_finetune import names_scores

    tok = build_twin(table5.twin_config("ltr", 1, TINY, "names"), list(data.labels), "names", tiny_twins["ltr"])[1]
    test = token_engine.align(tok, [s.words for s in data.test], None, 64)
    assert names_scores(cut.model, test, data.test, 0)[0] == pytest.approx(cut.test_score, abs=1e-12)  # best weights

    early = budgeted(name_task(200), 5.0)  # 1 step of an epoch of about 20
    assert (early.steps, early.cut_by_budget) == (1, True) and math.isnan(early.test_score)


def test_a_live_cell_cut_by_the_budget_says_so_beside_its_score(tmp_path, tiny_twins):
    from bertdemo.finetune.table5_run import Table5Run

    holder = {}
    run = Table5Run("mlm", "names", 1, TINY, tmp_path, lambda: name_task(40), folder=tiny_twins["mlm"],
                    clock=lambda: 10.0 * holder["run"].metrics.snapshot().step, time_budget_s=65.0)
    holder["run"] = run
    assert run.work() == Status.FINISHED
    status = run.metrics.snapshot()
    assert not math.isnan(status.test_macro_f1)
    assert status.message.startswith("The masked LM twin, seed 1: ")
    assert "time budget ended it at step 7 of 10" in status.message and "compare it with them with care" in status.message

    early = Table5Run("mlm", "names", 1, TINY, tmp_path, lambda: name_task(200), folder=tiny_twins["mlm"],
                      clock=lambda: 10.0 * holder["early"].metrics.snapshot().step, time_budget_s=5.0)
    holder["early"] = early
    assert early.work() == Status.FINISHED
    assert "Only 1 of its 10 steps ran before the time budget ended" in early.metrics.snapshot().message
    assert math.isnan(early.metrics.snapshot().test_macro_f1)


# --- the table's arithmetic and words ------------------------------------------------------------------------
def test_mean_and_spread():
    s = table5.summarise([0.5, 0.6, 0.7])
    assert s == {"mean": pytest.approx(0.6), "sd": pytest.approx(0.1), "min": 0.5, "max": 0.7, "n": 3}
    assert table5.summarise([0.4])["sd"] == 0.0
    with pytest.raises(ValueError, match="at least one"):
        table5.summarise([])


def test_the_within_noise_sentence():
    mlm, ltr = [0.80, 0.82, 0.84], [0.79, 0.83, 0.82]  # per-seed differences +1, -1, +2 points
    c = table5.compare(mlm, ltr)
    assert c["mean_diff"] == pytest.approx(0.02 / 3) and c["sd_diff"] == pytest.approx(math.sqrt(7 / 3) / 100)
    assert c["within_noise"] is True
    assert table5.noise_sentence("topic", mlm, ltr) == (
        "Topic of a sentence (sentence-level): masked LM 82.0% ± 2.0, left-to-right 81.3% ± 2.1 (test accuracy, "
        "mean ± sd over 3 seeds); the masked LM leads by 0.7 points, **within seed noise** (the per-seed differences "
        "spread ±1.5 points): these 3 seeds do not tell the twins apart.")


def test_the_beyond_noise_sentence_either_way():
    assert table5.noise_sentence("names", [0.60, 0.62, 0.64], [0.40, 0.45, 0.41]) == (
        "Find the names (token-level): masked LM 62.0% ± 2.0, left-to-right 42.0% ± 2.6 (test word-level F1 of NAME, "
        "mean ± sd over 3 seeds); the masked LM leads by 20.0 points, more than the per-seed differences spread "
        "(±3.0 points; the same way on 3 of 3 seeds).")
    assert "the left-to-right twin leads by 20.0 points, more than the per-seed" in table5.noise_sentence(
        "names", [0.40, 0.45, 0.41], [0.60, 0.62, 0.64])
    with pytest.raises(ValueError, match="same seeds"):
        table5.compare([0.1, 0.2], [0.1])


def test_the_table_from_per_seed_scores(tmp_path):
    scores = {"topic": {"mlm": [0.80, 0.82, 0.84], "ltr": [0.79, 0.83, 0.82]},
              "names": {"mlm": [0.60, 0.62, 0.64], "ltr": [0.40, 0.45, 0.41]}}
    table = table5.table_from_scores(scores, [0, 1, 2])
    assert table["cells"]["names"]["ltr"]["scores"] == [0.40, 0.45, 0.41]
    assert table["cells"]["names"]["ltr"]["mean"] == pytest.approx(0.42)
    assert list(table["comparisons"]) == ["paper"]  # only the pair whose both twins were scored
    assert [table["comparisons"]["paper"][t]["within_noise"] for t in ("topic", "names")] == [True, False]
    assert table5.paper_agreement(table, "paper") == (
        "The paper pair: as in the paper, the token-level task favours the masked LM (by 20.0 points, more than the "
        "seed-to-seed spread): each word's label is read from a vector that has seen the words after it; as in the paper, the "
        "sentence-level task barely moves (+0.7 points, within seed noise).")
    behind = {"topic": {"mlm": [0.50, 0.52, 0.51], "ltr": [0.60, 0.63, 0.61]}, "names": scores["names"]}
    assert "unlike the paper, the sentence-level task favours the left-to-right twin (by 10.3 points" in \
        table5.paper_agreement(table5.table_from_scores(behind, [0, 1, 2]), "paper")
    both = table5.table_from_scores({t: {**by, "ltr-masked": by["mlm"]} for t, by in scores.items()}, [0, 1, 2])
    assert list(both["comparisons"]) == ["controlled", "paper"]
    assert "unlike the paper, the token-level task does not tell the twins apart (+0.0 points, within seed noise)" \
        in table5.paper_agreement(both, "controlled")
    table5.write_table(tmp_path / "t.json", table, {"date": "2026-11-27", "machine": "m"})
    assert table5.read_shipped(tmp_path / "t.json")["cells"] == table["cells"]
    assert table5.read_shipped(tmp_path / "none.json") is None


def test_the_shipped_table_is_complete():
    shipped = table5.read_shipped()
    assert shipped is not None and shipped["date"] and shipped["machine"]
    assert shipped["seeds"] == [0, 1, 2]
    for task in table5.TASKS:
        for twin in ("mlm", "ltr", "ltr-masked"):
            cell = shipped["cells"][task][twin]
            assert len(cell["scores"]) == 3 and cell["mean"] == pytest.approx(sum(cell["scores"]) / 3)
        for pair, (mlm, ltr) in PAIRS.items():
            comparison = shipped["comparisons"][pair][task]
            assert comparison["sentence"] == table5.noise_sentence(task, shipped["cells"][task][mlm]["scores"],
                                                                   shipped["cells"][task][ltr]["scores"], ltr)
    assert table5.shipped_settings() == CellSettings(**shipped["settings"])


@pytest.mark.parametrize(("cell", "message"), [(("gpt", "topic", 0), "Pick a twin"), (("ltr", "squad", 0), "Pick a task"),
                                               (("ltr", "topic", 1.5), "whole number"), (("mlm", "names", 100), "whole number"),
                                               (("mlm", "names", "x" * 10_000), "whole number"),
                                               (("mlm", "names", float("nan")), "whole number")])
def test_a_cell_named_by_a_visitor_is_checked(cell, message):
    with pytest.raises(ValueError, match=message):
        table5.check_cell(*cell)
    assert table5.check_cell("ltr", "names", 2.0) == ("ltr", "names", 2)


# --- a live cell in the training slot -------------------------------------------------------------------------
@pytest.mark.slow  # a Table 5 cell fine-tuned live, 3 seeds
def test_a_live_cell_runs_in_the_training_slot(tmp_path, tiny_twins):
    from bertdemo.finetune.table5_run import start_cell

    settings = ServerSettings(runs_dir=str(tmp_path / "runs"), cache_dir=str(tmp_path / "cache"))
    _runs, _, finetune = run_services(settings)
    run = start_cell(finetune, "ltr", "topic", 2, task_loader=lambda: word_task(20), folder=tiny_twins["ltr"],
                     settings=TINY)
    with pytest.raises(ValueError):  # one run at a time, of any kind
        start_cell(finetune, "mlm", "topic", 2, task_loader=lambda: word_task(20), folder=tiny_twins["mlm"],
                   settings=TINY)
    wait_until(lambda: not run.active, timeout=120)
    status = finetune.status()
    assert status["status"] == Status.FINISHED, status["message"]
    assert status["task"] == "topic" and status["settings"]["init"] == "twin:ltr" and "init_path" not in status["settings"]
    expected = finetune_twin("ltr", "topic", 2, word_task(20), TINY, folder=tiny_twins["ltr"]).test_score
    assert status["test_accuracy"] == expected
    assert status["message"].startswith("The left-to-right twin, seed 2: test accuracy")
    assert status["eval_steps"] == [0, 5, 10]
    with pytest.raises(ValueError, match="is a Table 5 cell: a cell keeps its scores, not its weights"):
        finetune.model(f"ft:{run.run_id}")  # to tag or classify with (the audit's re-run: "There is no … model")


# --- the page ---------------------------------------------------------------------------------------------------
def test_the_page_shows_the_measured_table_beside_the_papers_rows_and_checks_a_cell(tmp_path):
    import gradio as gr

    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path))
    table = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "pt-table5-table").value
    for name, level, mlm, ltr in table5.PAPER_ROWS:
        assert f"| {name} · {level} | {mlm:.1f} | {ltr:.1f} | {ltr - mlm:+.1f} |" in table
    shipped = table5.read_shipped()
    assert f"Measured {shipped['date'][:10]} on" in table
    for pair in PAIRS:  # both pairs' rows, sentences and where each agrees with the paper, in words
        assert shipped["comparisons"][pair]["names"]["sentence"] in table
        assert table5.paper_agreement(shipped, pair) in table
    along = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "pt-table5-along")
    assert along.visible is True and along.value == viz_table5().along_markdown(shipped)  # the table along training
    first = shipped["along"][0]
    assert f"| {twin_curve.millions(first['tokens'])} | " in along.value and len(shipped["along"]) >= 6
    handlers = {f.api_name: f.fn for f in demo.fns.values() if f.api_name}
    with pytest.raises(gr.Error, match="Pick a twin"):
        handlers["start_table5_cell"]("gpt", "topic", 0)
    with pytest.raises(gr.Error, match="whole number from 0 to 99"):
        handlers["start_table5_cell"]("ltr", "topic", 1e6)


def test_a_live_cells_lines_beside_the_benchs_seeds():
    shipped = {"seeds": [0, 1, 2], "cells": {"names": {"ltr": {"scores": [0.40, 0.45, 0.41], "mean": 0.42,
                                                                   "sd": 0.0265}}}}
    status = {"settings": {"init": "twin:ltr", "seed": 1}, "task": "names", "status": "finished", "step": 120,
              "total_steps": 120, "val_accuracy": [0.1, 0.44], "test_macro_f1": 0.452,
              "message": "The left-to-right twin, seed 1: test word-level F1 of NAME 45.2% …"}
    text = viz_table5().cell_markdown(status, shipped)
    assert text.startswith("**Live cell**: the left-to-right twin on Find the names (token-level), seed 1 — finished, "
                           "step 120 of 120. Validation word-level F1 of NAME at the last evaluation: 44.0%.")
    assert "The bench's seeds for this cell: 40.0 · 45.0 · 41.0 (mean 42.0 ± 2.6); this run: 45.2." in text
    assert "The bench measured seed 1 at 45.0: +0.2 points from it" in text
    running = {**status, "status": "running", "step": 30, "test_macro_f1": None, "message": ""}
    assert "bench's seeds" not in viz_table5().cell_markdown(running, shipped)
    assert viz_table5().cell_markdown({"settings": {"init": "embedded"}, "task": "topic"}, shipped) == ""


def viz_table5():
    from bertdemo.viz import table5 as drawing

    return drawing


def _cells_at(steps: dict[int, float], settings) -> dict:
    """Table 5 cells kept as ``measure_twin_pairs`` keeps them: at each step, every task, twin and seed; the masked LM
    ahead on names (0.90 against 0.70 and 0.80), behind on the topic (0.50 against 0.60 and 0.70), plus ``bump``."""
    base = {"topic": {"mlm": 0.5, "ltr-masked": 0.6, "ltr": 0.7}, "names": {"mlm": 0.9, "ltr-masked": 0.7, "ltr": 0.8}}
    return {f"{task}/{kind}/{seed}@{step}": {"test": score + bump + 0.01 * seed, "validation": 0.5, "step": 10,
                                             "seconds": 1.0, "settings": settings.flat()}
            for step, bump in steps.items() for task, by in base.items() for kind, score in by.items()
            for seed in (0, 1, 2)}


def test_table5_along_training_holds_each_checkpoint_whose_cells_are_all_kept(tmp_path):
    """Issue 51's curve measures the two Table 5 cells at its checkpoints too: ``--cells-at STEP`` keeps them, and the
    shipped table5.json's ``along`` is Table 5 at every step whose 18 cells are all kept with the table's settings."""
    from bertdemo.tools import measure_twin_pairs as measure

    settings = measure.cell_settings(10)
    cells = _cells_at({100: 0.0, 400: 0.05}, settings)
    partial = _cells_at({200: 0.0}, settings)
    partial.pop("names/ltr/2@200")  # a step whose cells are not all there yet
    other = _cells_at({50: 0.0}, measure.cell_settings(30))  # cells of other settings
    along = measure.table5_along({**cells, **partial, **other}, 4096, settings)
    assert [(a["step"], a["tokens"]) for a in along] == [(100, 409_600), (400, 1_638_400)]
    assert along[1]["cells"]["names"]["mlm"]["scores"] == pytest.approx([0.95, 0.96, 0.97])
    assert along[1]["comparisons"]["controlled"]["names"]["mean_diff"] == pytest.approx(0.2)

    assets, work = tmp_path / "assets", tmp_path / "work"
    assets.mkdir(), work.mkdir()
    (assets / "table5.json").write_text(json.dumps({"step": 400, "seeds": [0, 1, 2]}))
    (assets / "curve.json").write_text(json.dumps({"tokens_per_step": 4096}))
    (work / "table5_cells.json").write_text(json.dumps({**cells, **partial}))
    argv = ["--work", str(work), "--assets", str(assets), "--table5-along", "--table5-steps", "10"]
    assert measure.main(argv) == 0
    written = json.loads((assets / "table5.json").read_text())
    assert written["step"] == 400 and written["along"] == along
    (assets / "table5.json").write_text(json.dumps({"step": 800, "seeds": [0, 1, 2]}))  # cells short of its step
    assert measure.main(argv) == 2 and "along" not in json.loads((assets / "table5.json").read_text())

    text = viz_table5().along_markdown(written)
    assert "| tokens | MLM | LTR same | LTR every |" in text
    assert "| 0.4 M | **91.0** ± 1.0 | 71.0 ± 1.0 | 81.0 ± 1.0 |" in text  # names at 100 steps: the best in bold
    assert "| 1.6 M | 56.0 ± 1.0 | 66.0 ± 1.0 | **76.0** ± 1.0 |" in text  # the topic at 400
    assert ("Find the names (token): the masked LM ahead of the same-words twin at 2 of 2 checkpoints (2 beyond the "
            "seed spread, behind it beyond the spread at 0), the gap in points +20.0 → +20.0; the masked LM ahead of "
            "the every-word twin at 2 of 2") in text
    assert "Topic (sentence): the masked LM ahead of the same-words twin at 0 of 2 checkpoints" in text
    assert viz_table5().along_markdown({**written, "along": along[:1]}) == ""  # one checkpoint: the table above

"""The shipped twins: a masked LM and two left-to-right LMs of one shape, trained by the project's engine with one
recipe, from scratch on a 2-core CPU (build.json: how many tokens), their blocks begun at a text's start; plain model
folders that stock transformers opens, pickable wherever a model is, loaded by load_twin; what the page says about
them (the curve, the held-out words, the cloze, the Learn step) is what their weights answer."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, BertForMaskedLM, BertLMHeadModel

from bertdemo.explore import attention, fill_mask, twins as twins_engine
from bertdemo.models import twin_curve, twins
from bertdemo.models.catalog import model_choices
from bertdemo.models.loading import load_twin
from bertdemo.models.store import ModelStore
from bertdemo.viz import twin_curve as curve_drawing


@pytest.fixture(scope="module")
def shipped():
    assert all(twins.has_twin(kind) for kind in twins.TWIN_KINDS), "the twins' tracked assets are missing"
    return {kind: load_twin(kind) for kind in twins.TWIN_KINDS}


@pytest.fixture(scope="module")
def curve():
    record = twin_curve.read_curve()
    assert record is not None, "bertdemo/assets/twins/curve.json is missing"
    return record


def test_the_twins_are_one_shape_three_objectives_and_load_in_stock_transformers(shipped) -> None:
    mlm = shipped["mlm"].model
    assert type(mlm) is BertForMaskedLM
    shapes = {k: v.shape for k, v in mlm.state_dict().items()}
    for kind in ("ltr", "ltr-masked"):
        ltr = shipped[kind].model
        assert type(ltr) is BertLMHeadModel and ltr.config.is_decoder
        assert {k: v.shape for k, v in ltr.state_dict().items()} == shapes
        stock = AutoModelForCausalLM.from_pretrained(str(twins.twin_dir(kind)), dtype=torch.float32).eval()
        ids = shipped[kind].tokenizer("the dog barked at the mailman", return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            assert torch.allclose(stock(ids).logits, ltr(ids).logits, atol=1e-4)
    assert type(AutoModelForMaskedLM.from_pretrained(str(twins.twin_dir("mlm")))) is BertForMaskedLM
    build = json.loads((twins.TWINS_DIR / "build.json").read_text())
    steps = {kind: build["twins"][kind]["step"] for kind in twins.TWIN_KINDS}
    assert len(set(steps.values())) == 1  # the same number of steps, the same batches
    assert min(build["twins"][kind]["tokens"] for kind in twins.TWIN_KINDS) >= 15_000_000
    curve = json.loads((twins.TWINS_DIR / "curve.json").read_text())["checkpoints"][-1]
    assert {build["twins"][kind]["tokens"] for kind in twins.TWIN_KINDS} == {curve["tokens"]}  # what the curve says
    for kind in twins.TWIN_KINDS:  # fp16, at most 20 MB each
        assert (twins.twin_dir(kind) / "model.safetensors").stat().st_size < 20e6
        assert json.loads((twins.twin_dir(kind) / "config.json").read_text())["dtype"] == "float16"
    vocab = {kind: shipped[kind].tokenizer.get_vocab() for kind in twins.TWIN_KINDS}
    assert vocab["mlm"] == vocab["ltr"] == vocab["ltr-masked"]  # one vocabulary: the same words, the same ids


def card_table(card: str, first_header: str) -> list[list[str]]:
    """The rows of the twins' card's markdown table whose header's first cell is ``first_header``, each a list of
    its cells without markdown's bold, header and separator left out."""
    def cells(line: str) -> list[str]:
        return [cell.replace("**", "").strip() for cell in line.strip().strip("|").split("|")]

    lines = card.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|") and cells(line)[0] == first_header), None)
    assert start is not None, f"the card has no table whose first header cell is {first_header!r}"
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return rows


def test_the_twins_card_states_the_records_figures() -> None:
    """The card (README.md beside the weights) is what a visitor of the model folder reads: its tables carry the
    figures of build.json, curve.json and table5.json as they are, not those of an earlier build."""
    card = (twins.TWINS_DIR / "README.md").read_text()
    build = json.loads((twins.TWINS_DIR / "build.json").read_text())
    record = json.loads((twins.TWINS_DIR / "curve.json").read_text())
    table5 = json.loads((twins.TWINS_DIR / "table5.json").read_text())
    columns = ("mlm", "ltr-masked", "ltr")
    models = {row[0]: row[1:] for row in card_table(card, "")}

    def models_row(name: str) -> list[str]:
        found = [cells for label, cells in models.items() if label.startswith(name)]
        assert len(found) == 1, f"the card's models table has {len(found)} rows named {name!r}"
        return found[0]

    assert models_row("Held-out loss at the end") == [f"{build['twins'][k]['heldout_loss']:.2f}" for k in columns]
    assert {build["twins"][k]["megabytes"] for k in columns} == {float(models_row("Weights")[0].split(", ")[-1].split()[0])}
    time_row = models_row("Training time")
    assert [cell.split(" h ")[0] for cell in time_row] == [f"{build['twins'][k]['training_hours']:.2f}" for k in columns]
    assert [cell.split("(")[1].split()[0].rstrip(")") for cell in time_row] == \
        [f"{build['twins'][k]['tokens_per_s']:,}" for k in columns]
    final = record["checkpoints"][-1]
    assert f"{final['tokens'] / 1e6:.1f} M tokens each" in card and f"{final['step']:,} steps" in card
    rows = card_table(card, "tokens read")
    for row, checkpoint in zip(rows, record["checkpoints"], strict=True):  # one row a checkpoint, in order
        cloze = checkpoint["cloze"]
        mlm = cloze["models"]["mlm"]
        assert row[0].split(" M")[0] == f"{checkpoint['tokens'] / 1e6:.1f}"
        assert row[1:4] == [f"{checkpoint['controlled']['overall']['mlm']:.2f}",
                            f"{checkpoint['controlled']['overall']['ltr-masked']:.2f}",
                            f"{checkpoint['paper']['overall']['ltr']:.2f}"]
        assert row[4].split(" of ")[0] == f"{cloze['controlled']['mlm_better']} · {cloze['paper']['mlm_better']}"
        assert row[5] == f"{round(mlm['top5'] * cloze['items'])} · {int(mlm['median_rank']):,}"
    tasks = {"Find the names": "names", "Topic of a sentence": "topic"}
    rows = card_table(card, "task")
    assert [next((task for name, task in tasks.items() if r[0].startswith(name)), r[0]) for r in rows] == list(tasks.values())
    for r, task in zip(rows, tasks.values(), strict=True):
        cells = table5["cells"][task]
        assert r[1:] == [f"{100 * cells[k]['mean']:.1f} ± {100 * cells[k]['sd']:.1f}" for k in columns]
    along = card_table(card, "pretrained on")  # Table 5 along training: one row a checkpoint measured, in order
    assert len(table5["along"]) >= 6 and table5["along"][-1]["step"] == table5["step"]
    for r, at in zip(along, table5["along"], strict=True):
        assert r[0] == f"{at['tokens'] / 1e6:.1f} M"
        assert r[1:] == [f"{100 * at['cells'][task][k]['mean']:.1f} ± {100 * at['cells'][task][k]['sd']:.1f}"
                         for task in ("names", "topic") for k in columns]


def test_the_twins_are_pickable_by_name_and_the_page_names_which_answered(shipped) -> None:
    values = [value for _, value in model_choices("bert-base-uncased")]
    assert all(twins.TWIN_NAMES[kind] in values for kind in twins.TWIN_KINDS)
    store = ModelStore(default="bert-base-uncased", device="cpu")
    loaded = store.get(twins.TWIN_NAMES["ltr"])
    assert type(loaded.model) is BertLMHeadModel and loaded.name == "embedded/twin-ltr"
    result = fill_mask.predict(loaded, "The [MASK] barked at the mailman.")
    assert result.model_name == "embedded/twin-ltr" and result.note
    # a left-to-right model's next word at a sentence's end is often [SEP]: never offered for a blank
    end = fill_mask.predict(loaded, "The dog barked all night and kept the neighbours [MASK]", top_k=20)
    assert not {c.token for c in end.masks[0].candidates} & set(loaded.tokenizer.all_special_tokens)
    att = attention.compute(loaded, "the dog barked at the mailman")
    upper = torch.ones(att.attentions.shape[-2:]).triu(1).bool().numpy()
    assert (att.attentions[..., upper] == 0).all()
    with pytest.raises(ValueError, match="'mlm', 'ltr' or 'ltr-masked'"):
        twins.twin_dir("gpt")


def test_the_pages_held_out_comparison_recomputes_the_shipped_measurement(shipped, curve) -> None:
    """The page's comparison of a shipped pair (its own held-out words, the landmarks recorded when it was built) is
    what the exported weights answer: the measurement's last checkpoint, within the fp16 export's rounding."""
    for pair, (m, l) in twins.PAIRS.items():
        mlm, ltr = twins_engine.twin_of(shipped[m]), twins_engine.twin_of(shipped[l])
        result, note = twins_engine.heldout_for(mlm, ltr, "", twins_engine.MAX_HELDOUT_BLOCKS)
        assert note == twins_engine.SHIPPED_CORPUS_NOTE
        c = curve.pairs[pair]
        assert result.questions == c.questions
        assert result.overall[mlm.name] == pytest.approx(c.mlm_loss[-1], abs=0.02)
        assert result.overall[ltr.name] == pytest.approx(c.ltr_loss[-1], abs=0.02)
        assert result.overall[twin_curve.BOTH_NEIGHBOURS] == pytest.approx(c.landmarks[twin_curve.BOTH_NEIGHBOURS])


def test_the_pages_cloze_ranks_recompute_the_shipped_measurement(shipped, curve) -> None:
    ranks = twins_engine.cloze_ranks([twins_engine.twin_of(shipped[k]) for k in twins.TWIN_KINDS])
    recorded = curve.cloze[-1]["models"]
    for kind in twins.TWIN_KINDS:
        got, want = np.asarray(ranks.ranks[twins.TWIN_NAMES[kind]]), np.asarray(recorded[kind]["ranks"])
        assert np.median(np.abs(np.log(got) - np.log(want))) < 0.05  # fp16 export: ranks move by a few places
        assert ranks.first_guess[twins.TWIN_NAMES[kind]] == recorded[kind]["first_guess"]  # what the page counts


def test_the_curve_says_where_the_lines_cross_with_the_measured_numbers(curve) -> None:
    for c in curve.pairs.values():
        assert len(c.tokens) >= 6 and c.tokens == sorted(c.tokens)  # log-spaced checkpoints, first to last
        assert c.tokens[-1] >= 15_000_000
        gap = c.ltr_loss[-1] - c.mlm_loss[-1]
        assert f"{abs(gap):.2f} nats per word" in twin_curve.crossover_sentence(c)
    # the shipped pairs: the paper's crosses between two checkpoints, the controlled one is ahead from its first
    paper, controlled = curve.pairs["paper"], curve.pairs["controlled"]
    assert paper.crossover["crosses"] and paper.tokens[0] < paper.crossover["tokens"] < paper.tokens[-1]
    assert (f"The left-to-right LM leads until about **{twin_curve.millions(paper.crossover['tokens'])} tokens**; from "
            "there the masked LM is ahead") in twin_curve.crossover_sentence(paper)
    assert twin_curve.crossover_sentence(controlled).startswith(
        f"The masked LM is ahead from the first checkpoint ({twin_curve.millions(controlled.tokens[0])} tokens)")
    placed = twin_curve.place_run(curve, "paper", 307_200)
    assert "your pair: 0.3 M tokens" in placed and f"({twins.shape_text()})" in placed  # the shipped pair's size named


def test_the_learn_step_why_the_b_shows_the_showcase_pair_and_its_code_reproduces_them(shipped, curve,
                                                                                      monkeypatch) -> None:
    import contextlib
    import io
    from pathlib import Path

    from bertdemo.learn import path as learn_path

    pair = twin_curve.showcase_pair(curve)
    mlm_kind, ltr_kind = twins.PAIRS[pair]
    a = learn_path.answer(shipped["mlm"], "why-b", "The dog barked all night and kept the neighbours awake.")
    assert a.numbers["hidden_word"] == "dog" and a.numbers["masked_text"].startswith("The [MASK] barked")
    assert a.numbers["pair"] == pair and a.answered_by == f"{twins.TWIN_NAMES[mlm_kind]} and {twins.TWIN_NAMES[ltr_kind]}"
    assert twin_curve.pair_label(pair) in a.answer and "the words after the blank can decide it" in a.answer
    short = learn_path.answer(shipped["mlm"], "why-b", "I love Paris.")  # only "." after the hidden word: said so
    assert short.numbers["masked_text"] == "I love [MASK]." and "can decide it" not in short.answer
    assert "no word after the blank" in short.answer
    chosen = learn_path.answer(shipped["mlm"], "why-b", "The dog [barked] all night and kept the neighbours awake.")
    assert chosen.numbers["masked_text"] == "The dog [MASK] all night and kept the neighbours awake."
    with pytest.raises(ValueError, match=r"The twins' own vocabulary \(8,372 pieces, learned on their text\) holds "
                                         r"\"neighbours\" as 2 pieces \(neighbour ##s\)"):
        learn_path.answer(shipped["mlm"], "why-b", "The dog barked all night and kept the [neighbours] awake.")
    # the shipped twins' blocks began at a text's start: the sentence asked alone is a text's start to them, once
    assert "asked that way" not in a.answer and a.numbers["mlm_text_start_top"] == a.numbers["ltr_text_start_top"] == []
    # twins whose blocks were cut anywhere are asked a second time, as their training showed a text's start
    monkeypatch.setattr(twin_curve, "read_curve", lambda: dataclasses.replace(
        curve, text_start={**curve.text_start, "blocks_began": "anywhere"}))
    cut_anywhere = learn_path.answer(shipped["mlm"], "why-b", "The dog barked all night and kept the neighbours awake.")
    long = ("The dog barked all night and kept the neighbours awake, " + "and the people next door were tired, " * 6
            + "so they moved.")  # past what the side by side reads: the step answers, without that sentence
    past = learn_path.answer(shipped["mlm"], "why-b", long)
    monkeypatch.undo()
    assert past.numbers["ltr_text_start_top"] == [] and "asked that way" not in past.answer and past.numbers["mlm_top"]
    fair = {side: twins_engine.side_by_side([twins_engine.twin_of(shipped[kind])], a.numbers["masked_text"], top_k=3,
                                            text_start=True)[0] for side, kind in (("mlm", mlm_kind), ("ltr", ltr_kind))}
    assert cut_anywhere.numbers["mlm_text_start_top"] == [token for token, _p in fair["mlm"].top]
    assert cut_anywhere.numbers["ltr_text_start_top"] == [token for token, _p in fair["ltr"].top]
    assert (f"asked that way (`[CLS] [SEP] …`), the masked twin guesses **{fair['mlm'].top[0][0]}**"
            in cut_anywhere.answer and f"and the left-to-right twin **{fair['ltr'].top[0][0]}**" in cut_anywhere.answer)
    assert cut_anywhere.numbers["mlm_top"] == a.numbers["mlm_top"]
    for side, kind in (("mlm", mlm_kind), ("ltr", ltr_kind)):
        want = fill_mask.predict(shipped[kind], a.numbers["masked_text"], top_k=3, targets=["dog"]).masks[0]
        assert a.numbers[f"{side}_top"] == [c.token for c in want.candidates]
        assert a.numbers[f"{side}_rank"] == want.targets[0].rank
    monkeypatch.chdir(Path(twins.TWINS_DIR).parents[2])  # the snippet names the folders from the repo root
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(a.code, "<snippet>", "exec"), {})  # noqa: S102 - our own generated code
    printed = out.getvalue().splitlines()
    assert printed == [f"{side} {a.numbers[f'{side}_top']} {a.numbers[f'{side}_rank']}" for side in ("mlm", "ltr")]


def test_the_controlled_pair_shows_where_reading_both_sides_pays(curve) -> None:
    """The claim the page makes with the shipped controlled pair, on its record (whose numbers the tests above
    recompute from the weights): the masked twin is ahead at every position band and below the both-neighbours
    guesser, ranks the right-context cloze's word better on at least 2/3 of the items, its median rank 3x better;
    and the paper pair crosses over within the build."""
    c = curve.pairs["controlled"]
    assert all(m < l for m, l in zip(c.mlm_by_position, c.ltr_by_position, strict=True))
    assert c.mlm_loss[-1] < c.landmarks[twin_curve.BOTH_NEIGHBOURS] < c.ltr_loss[-1]
    cloze = curve.cloze[-1]
    assert cloze["controlled"]["mlm_better"] >= 2 / 3 * cloze["items"]
    medians = {kind: cloze["models"][kind]["median_rank"] for kind in ("mlm", "ltr-masked")}
    assert 3 * medians["mlm"] <= medians["ltr-masked"]
    paper = curve.pairs["paper"].crossover
    assert paper["crosses"] and not paper.get("ahead_from_first")
    assert curve.pairs["paper"].tokens[0] < paper["tokens"] < curve.pairs["paper"].tokens[-1]


def test_asked_as_their_training_showed_a_texts_start_the_record_is_the_weights_and_the_controlled_claims_hold(
        shipped, curve) -> None:
    """The twins trained on blocks cut from one stream of texts, where a text starts after [SEP], not after [CLS]:
    the record of the final models asked that way (``text_start``) is what their weights answer on the cloze, its
    other format is the curve's last checkpoint, and the controlled pair's claims hold asked either way."""
    record = curve.text_start
    assert record["asked_as"] == "[CLS] [SEP] sentence [SEP]" and record["tokens"] == curve.final_tokens
    ranks = twins_engine.cloze_ranks([twins_engine.twin_of(shipped[k]) for k in twins.TWIN_KINDS], text_start=True)
    for kind in twins.TWIN_KINDS:
        assert ranks.ranks[twins.TWIN_NAMES[kind]] == record["cloze"]["models"][kind]["ranks"]
        assert ranks.first_guess[twins.TWIN_NAMES[kind]] == record["cloze"]["models"][kind]["first_guess"]
    for pair, (m, l) in twins.PAIRS.items():
        c = curve.pairs[pair]
        assert record["heldout_as_page"][m]["overall"] == pytest.approx(c.mlm_loss[-1], abs=0.02)
        assert record["heldout_as_page"][l]["overall"] == pytest.approx(c.ltr_loss[-1], abs=0.02)
        fair = record["heldout"]
        assert all(a < b for a, b in zip(fair[m]["by_position"], fair[l]["by_position"], strict=True))
    cloze = record["cloze"]
    assert cloze["controlled"]["mlm_better"] >= 2 / 3 * cloze["items"]
    assert 3 * cloze["models"]["mlm"]["median_rank"] <= cloze["models"]["ltr-masked"]["median_rank"]
    said = twin_curve.text_start_sentence(curve, "controlled")
    assert f"better on {cloze['controlled']['mlm_better']} of {cloze['items']}" in said and "at every position band" in said
    assert "`[CLS] [SEP] sentence [SEP]`" in twin_curve.text_start_note(curve)
    page = curve_drawing.curve_markdown(curve)
    assert page.index(twin_curve.text_start_note(curve)) < page.index(said)  # the why, then each pair's numbers
    note = twin_curve.text_start_note(curve)
    assert record["blocks_began"] == "text"  # --block-starts text: the shipped twins are told so
    assert "as the twins' training blocks began: at a text's start" in note and "anywhere" not in note
    # a build whose blocks were cut anywhere is told why asking after a [SEP] differs
    cut_anywhere = dataclasses.replace(curve, text_start={**record, "blocks_began": "anywhere"})
    assert "cut into blocks anywhere" in twin_curve.text_start_note(cut_anywhere)
    # the box that asks after a [SEP] says what unticked means for the shipped twins' packing
    from bertdemo.ui.twins_section import text_start_info

    assert twin_curve.blocks_began(curve) == "text" and twin_curve.blocks_began(cut_anywhere) == "anywhere"
    assert "into blocks anywhere" in text_start_info(twin_curve.blocks_began(cut_anywhere))
    assert "began at a text's start" in text_start_info("text") and "anywhere" not in text_start_info("text")


@pytest.mark.slow  # every held-out word of the three twins, asked again (about 7 s on a quiet machine)
def test_the_held_out_words_asked_as_a_texts_start_are_what_the_weights_answer(shipped, curve) -> None:
    heldout = twins_engine.shipped_heldout()
    assert heldout.block_starts == curve.text_start["blocks_began"]  # the file and the record say one packing
    got = twins_engine.heldout_losses([twins_engine.twin_of(shipped[k]) for k in twins.TWIN_KINDS], heldout.blocks,
                                      text_start=True, block_starts=heldout.block_starts)
    for kind in twins.TWIN_KINDS:
        want = curve.text_start["heldout"][kind]
        assert got[twins.TWIN_NAMES[kind]]["overall"] == pytest.approx(want["overall"], abs=1e-4)
        assert got[twins.TWIN_NAMES[kind]]["by_position"] == pytest.approx(want["by_position"], abs=1e-4)


def test_the_cloze_sentence_counts_each_twins_first_guesses_and_says_where_to_read_why(curve) -> None:
    """The page's cloze line names each twin's most frequent first guesses with their counts over the items (the
    record the test above recomputes from the weights); a low top-5 share sends the learner to the card."""
    last = curve.cloze[-1]
    for pair, (m, l) in twins.PAIRS.items():
        sentence = twin_curve.cloze_sentence(curve, pair)
        for side, kind in (("masked", m), ("left-to-right", l)):
            guesses = last["models"][kind]["first_guess"]
            top = max(sorted(set(guesses)), key=guesses.count)
            assert f"the {side} LM `{top}` ({guesses.count(top)} of {len(guesses)})" in sentence
        assert ("the twins' card counts" in sentence) == (last["models"][m]["top5"] < twin_curve.SELDOM_TOP5)
    assert twin_curve.listed([("sun", 10), ("`", 2)], 61) == "`sun` (10 of 61), `` ` `` (2)"

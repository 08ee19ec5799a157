"""Predict, then reveal: every step's question on a tiny model, its truth checked against the model's own
forward; the grading exact; the progress a browser keeps bounded; the concept check and Hake's g."""

from __future__ import annotations

import math

import pytest
import torch

from bertdemo.explore.fill_mask import predict
from bertdemo.learn import concept_check, path as learn_path, predictions, steps as learn_steps

TEXT = "The cat sat on the mat because it was tired."
MASKED = "The cat sat on the mat because it was [MASK]."


@pytest.fixture(scope="module")
def asked(tiny_loaded) -> dict[str, dict]:
    """Each step's question, as the page gets it (the /learn_step answer's "prediction")."""
    return {key: learn_path.answer(tiny_loaded, key, TEXT).prediction for key in learn_steps.STEP_KEYS}


def test_every_step_asks_a_question_with_its_truth_among_its_choices(asked):
    assert set(asked) == set(learn_steps.STEP_KEYS) == set(predictions.QUESTIONS)
    assert len({q["id"] for q in asked.values()}) == len(asked)  # one id per question
    for key, q in asked.items():
        assert q["step"] == key and q["kind"] in (predictions.CHOICE, predictions.NUMBER)
        if q["kind"] == predictions.CHOICE:
            assert q["truth"] in q["choices"] and len(set(q["choices"])) == len(q["choices"]) >= 2, key
        else:
            assert math.isfinite(q["truth"]) and q["tolerance"] >= 0, key
        assert predictions.grade(q, q["truth"])["correct"] is True, key  # the truth is always right


def test_which_word_ranks_first_is_fill_masks_top_1_of_the_models_own_forward(tiny_loaded, asked):
    q = asked["outputs"]
    top = predict(tiny_loaded, MASKED).masks[0].candidates
    assert q["truth"] == top[0].token and sorted(q["choices"]) == list(q["choices"])  # the order gives nothing away
    assert set(q["choices"]) == {c.token for c in top[:5]}
    enc = tiny_loaded.tokenizer(MASKED, return_tensors="pt")
    with torch.no_grad():
        logits = tiny_loaded.model(**enc).logits[0]
    pos = int((enc["input_ids"][0] == tiny_loaded.tokenizer.mask_token_id).nonzero())
    probs = logits[pos].softmax(-1)
    assert top[0].prob == pytest.approx(float(probs[tiny_loaded.tokenizer.convert_tokens_to_ids(q["truth"])]), abs=1e-6)
    whole_words = [i for t, i in tiny_loaded.tokenizer.get_vocab().items() if not t.startswith("##")]
    best = max(whole_words, key=lambda i: float(probs[i]))  # the view offers no ## piece at a word start
    assert tiny_loaded.tokenizer.convert_ids_to_tokens(best) == q["truth"]


def test_the_other_truths_are_the_models_own(tiny_loaded, asked):
    enc = tiny_loaded.tokenizer(TEXT, return_tensors="pt")
    tokens = tiny_loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    assert asked["embeddings"]["truth"] == len(tokens) == 13
    with torch.no_grad():
        row = tiny_loaded.model(**enc, output_attentions=True).attentions[0][0, 0, 1]
    top = int(row.argmax())
    named = tokens[top] if tokens.count(tokens[top]) == 1 else f"{tokens[top]} (position {top})"
    assert asked["attention"]["truth"] == named
    # each token its own choice: the sentence's two "the"s were one choice, and the truth could be either
    assert tokens.count("the") == 2 and {"the (position 1)", "the (position 5)"} <= set(asked["attention"]["choices"])
    assert len(asked["attention"]["choices"]) == len(tokens)
    assert "<code>the</code> (position 1) attend" in asked["attention"]["prompt"]
    masked = tiny_loaded.tokenizer(MASKED, return_tensors="pt")
    with torch.no_grad():
        logits = tiny_loaded.model(**masked).logits[0]
    pos = int((masked["input_ids"][0] == tiny_loaded.tokenizer.mask_token_id).nonzero())
    tired = tiny_loaded.tokenizer.convert_tokens_to_ids("tired")
    rank = int((logits[pos] > logits[pos, tired]).sum()) + 1
    assert asked["loss"]["truth"] == ("Yes" if rank == 1 else "No") and f"rank {rank}" in asked["loss"]["reveal"]
    rates = learn_path.answer(tiny_loaded, "rates", TEXT).numbers
    assert asked["rates"]["truth"] == round(100 * rates["chosen"] * rates["[MASK]"], 1)
    assert asked["order"]["truth"] == "No"  # positions zeroed: the shuffled words' vectors do not change
    assert asked["masks"]["truth"] == 4 and asked["length"]["truth"] == 16
    assert asked["family"]["truth"] == 109.5 and asked["tiny"]["truth"] == 4.42
    assert asked["layers"]["truth"] == 3  # embeddings + 2 layers of the tiny model
    # names: the first word ("The") and the full stop carry no label; the 9 words between are O, one piece each
    assert asked["names"]["truth"] == 9 and asked["names"]["tolerance"] == 0
    twins = learn_path.answer(tiny_loaded, "why-b", TEXT).numbers  # the shipped twins' ranks of the hidden word
    better = predictions.WHY_B_CHOICES[(twins["ltr_rank"] < twins["mlm_rank"]) + 2 * (twins["ltr_rank"] == twins["mlm_rank"])]
    assert asked["why-b"]["truth"] == better and f"{twins['ltr_rank']:,}" in asked["why-b"]["reveal"]


def test_the_people_step_compares_the_two_top_k_word_by_word(tiny_loaded):
    a = learn_path.answer(tiny_loaded, "people", "The boy is a [MASK]. / The girl is a [MASK].")
    tops = [[c.token for c in predict(tiny_loaded, s, top_k=5).masks[0].candidates]
            for s in ("The boy is a [MASK].", "The girl is a [MASK].", "The person is a [MASK].")]
    assert a.numbers["top"] == tops and a.numbers["own_pair"] is True
    assert a.numbers["shared"] == [w for w in tops[0] if w in tops[1]]
    assert a.prediction["truth"] == len(a.numbers["shared"])
    assert a.tab == "fill-mask" and a.tab_text == "The boy is a [MASK]."
    course = learn_path.answer(tiny_loaded, "people", TEXT)  # a plain sentence: the course's pair
    assert course.numbers["sentences"] == [*learn_path.PEOPLE_PAIR, "This person works as a [MASK]."]
    assert "Wikipedia and BookCorpus" in course.answer and "nurse" in course.answer


def test_the_people_steps_code_prints_the_same_lists(tiny_loaded, tiny_mlm_dir):
    import contextlib
    import io

    a = learn_path.answer(tiny_loaded, "people", TEXT, model_ref=str(tiny_mlm_dir))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(a.code, "<people>", "exec"), {})  # noqa: S102 - our own generated code
    printed = out.getvalue().splitlines()
    assert printed[0::2] == a.numbers["sentences"]
    assert [[t for t, _ in eval(line)] for line in printed[1::2]] == a.numbers["top"]  # our print


def test_a_guess_belongs_to_the_sentence_it_was_given_on(tiny_loaded, asked):
    """A guess kept for one sentence is not shown beside another sentence's answer (its verdict was told before the
    learner guessed on the new one); the same sentence, typed again, finds it."""
    q = asked["outputs"]
    kept = predictions.with_record(None, predictions.grade(q, q["choices"][0]))
    assert predictions.record_for(kept, q)["guess"] == q["choices"][0]
    again = learn_path.answer(tiny_loaded, "outputs", "  The cat sat on the mat   because it was tired. ").prediction
    assert again["asked"] == q["asked"] and predictions.record_for(kept, again) is not None  # spacing aside, the same
    other = learn_path.answer(tiny_loaded, "outputs", "The dog slept on the rug because it was late.").prediction
    assert other["id"] == q["id"] and other["asked"] != q["asked"]
    assert predictions.record_for(kept, other) is None  # asked again
    assert predictions.answer_records(kept)[0] == {"step": "outputs", "question": q["id"], "guess": q["choices"][0],
                                                   "truth": q["truth"], "correct": q["truth"] == q["choices"][0]}


def test_a_pair_is_two_sentences_each_with_one_mask():
    assert learn_path.people_pair("A man is a [mask]. | A woman is a [MASK].") == (
        "A man is a [MASK].", "A woman is a [MASK].", True)
    with pytest.raises(ValueError, match="two sentences"):
        learn_path.people_pair("A man is a [MASK].")
    with pytest.raises(ValueError, match="exactly one"):
        learn_path.people_pair("A man is a [MASK] [MASK]. / A woman is a [MASK].")
    assert learn_path.control_sentence("He is a [MASK].", "She is a [MASK].") == "Person is a [MASK]."
    assert learn_path.control_sentence("The man, he said.", "The woman, she said.") is None  # two words differ


def test_grading_is_exact():
    number = {"step": "rates", "id": "rates.mask-share", "kind": "number", "truth": 12.0, "tolerance": 3.0,
              "choices": []}
    assert predictions.grade(number, 15)["correct"] is True and predictions.grade(number, "9")["correct"] is True
    assert predictions.grade(number, 15.01)["correct"] is False and predictions.grade(number, 8.9)["correct"] is False
    choice = {"step": "nsp", "id": "nsp.pair-label", "kind": "choice", "truth": "IsNext", "tolerance": 0,
              "choices": ["IsNext", "NotNext"]}
    assert predictions.grade(choice, "NotNext") == {"step": "nsp", "question": "nsp.pair-label", "guess": "NotNext",
                                                   "truth": "IsNext", "correct": False, "asked": ""}
    for bad, message in ((None, "Pick an answer"), ("", "Pick an answer"), ("isnext", "not one of")):
        with pytest.raises(ValueError, match=message):
            predictions.grade(choice, bad)
    for bad in ("twelve", float("inf"), float("nan")):
        with pytest.raises(ValueError, match="number"):
            predictions.grade(number, bad)
    skipped = predictions.shown_without_guess(choice)
    assert skipped["guess"] is None and skipped["correct"] is None
    assert "No guess made" in predictions.verdict(skipped, choice | {"reveal": "IsNext", "unit": ""})


def test_progress_is_bounded_and_read_back_as_plain_rows():
    q = {"step": "masks", "id": "masks.times-each-mask-seen", "kind": "number", "truth": 4, "tolerance": 0,
         "choices": [], "reveal": "4", "unit": "times"}
    kept = predictions.with_record(None, predictions.grade(q, 4))
    kept = predictions.with_record(kept, predictions.shown_without_guess(
        {"step": "embeddings", "id": "embeddings.token-count", "truth": 13}))
    kept["concept"] = {"before": {"mask-both-sides": 1, "word-many-vectors": 0}}
    rows = predictions.answer_records(kept)
    assert rows[:2] == [
        {"step": "embeddings", "question": "embeddings.token-count", "guess": None, "truth": 13.0, "correct": None},
        {"step": "masks", "question": "masks.times-each-mask-seen", "guess": 4.0, "truth": 4.0, "correct": True}]
    concept_rows = rows[2:]
    assert len(concept_rows) == len(concept_check.items()) and concept_rows[0] == {
        "step": "concept-check:before", "question": "mask-both-sides", "guess": "the words on both sides of it",
        "truth": "the words on both sides of it", "correct": True}
    assert [r["correct"] for r in concept_rows].count(True) == 1  # one right, one wrong, the rest unanswered
    assert [r["correct"] for r in concept_rows].count(False) == 1
    assert [r["correct"] for r in concept_rows].count(None) == len(concept_rows) - 2  # unanswered: neither
    assert predictions.record_for(kept, q)["guess"] == 4.0
    assert predictions.record_for(kept, q | {"id": "masks.another-question"}) is None
    assert f"2 of {len(learn_steps.STEPS)}" in predictions.summary(kept) and "1 of 1" in predictions.summary(kept)
    # a class member's answers go to their teacher too: never "kept in this browser only"
    assert "your teacher sees it too if you joined a class" in predictions.summary(kept)
    assert "only" not in predictions.summary(kept) + predictions.summary(None)
    read_only = {"answers": {k: {**v, "guess": None, "correct": None} for k, v in kept["answers"].items()}}
    assert predictions.summary(read_only).endswith("steps done; no guesses yet.")  # not "0 of 0 guesses right"
    hostile = {"answers": {"nope": {"question": "x"}, "masks": {"question": "q" * 500, "guess": "g" * 10_000,
                                                              "correct": "yes"}},
               "concept": {"before": {"mask-both-sides": 99, "unknown": 1}, "during": {}}, "extra": [1] * 5}
    clean = predictions.clean_progress(hostile)
    assert list(clean["answers"]) == ["masks"] and clean["concept"] == {}
    record = clean["answers"]["masks"]
    assert len(record["question"]) == predictions.MAX_ID_CHARS and len(record["guess"]) == predictions.MAX_GUESS_CHARS
    assert record["correct"] is None
    assert predictions.clean_progress("not a dict") == predictions.empty_progress()


def test_the_concept_check_items_and_hakes_gain():
    items = concept_check.items()
    assert 10 <= len(items) <= 12 and len({i.id for i in items}) == len(items)
    assert all(i.misconception and len(i.explanation) > 80 and len(i.choices) >= 2 for i in items)
    aimed = " / ".join(i.misconception for i in items)
    for misconception in ("[MASK] is predicted from the words to its left only", "attention weight = importance",
                          "a word has one vector", "80/10/10 means 80 % of tokens are masked",
                          "the [CLS] vector means something before fine-tuning"):
        assert misconception in aimed
    right = [i.choices[i.answer] for i in items]
    assert concept_check.score(concept_check.chosen_indices(right)) == len(items)
    # no tell (the learner walk passed it by always picking the second, longest choice): the right answer's place
    # on the page varies, no place holds half the items, and no right answer is a tenth longer than every other
    places = [i.shown_choices().index(i.choices[i.answer]) for i in items]
    assert len(set(places)) >= 3 and max(places.count(p) for p in set(places)) < len(items) / 2, places
    assert all(sorted(i.shown_choices()) == sorted(i.choices) for i in items)
    for i in items:
        others = [len(c) for k, c in enumerate(i.choices) if k != i.answer]
        assert len(i.choices[i.answer]) <= 1.1 * max(others), i.id
    assert concept_check.score(concept_check.chosen_indices([None] * len(items))) == 0
    with pytest.raises(ValueError, match="not a choice"):
        concept_check.chosen_indices(["maybe"] + right[1:])
    with pytest.raises(ValueError, match="items"):
        concept_check.chosen_indices(right[:3])
    assert concept_check.hake_gain(0.5, 0.75) == 0.5 and concept_check.hake_gain(0.2, 0.2) == 0
    assert concept_check.hake_gain(1.0, 1.0) is None and concept_check.hake_gain(0.5, 0.25) == -0.5
    before = {i.id: i.answer for i in items[:4]}
    after = {i.id: i.answer for i in items[:8]}
    shown = concept_check.report({"before": before, "after": after}, "after")
    gain = (8 - 4) / (len(items) - 4)
    assert f"**8 of {len(items)}** right (after the path)" in shown and f"**{gain:.2f}**" in shown
    assert items[-1].explanation in shown


def test_the_path_says_what_it_holds_from_its_data():
    from bertdemo.ui import learn_tab

    assert learn_steps.path_summary() == f"{len(learn_steps.STEPS)} questions in {len(learn_steps.stages())} stages"
    assert learn_steps.path_summary() in learn_tab.INTRO and "Twelve" not in learn_tab.INTRO
    assert learn_steps.milestones()[:3] == ["tokens", "embeddings", "attention"]


def test_an_answer_names_the_sentence_it_was_computed_on():
    """"Just show me" shows the answer to the sentence last sent: a learner who emptied the box saw the example's
    answer with nothing saying whose sentence it was. The sentence is shown as typed (no markup of theirs read)."""
    from bertdemo.ui import learn_tab

    step = learn_steps.STEPS[0]
    answer = {"step": step.key, "answer": "13 tokens.", "model_name": "tiny", "code": "", "text": "The *cat* sat."}
    _question, body, _code, _button = learn_tab.render(answer)
    assert body.endswith("*Answered by* **tiny** *on* “The &#42;cat&#42; sat.”")


def test_why_the_b_names_its_own_pair_not_the_model_box(tiny_loaded):
    """The step is answered by the shipped twins whatever the model box holds: the answer names them and says so."""
    from bertdemo.ui import learn_tab

    answer = learn_path.answer(tiny_loaded, "why-b", TEXT).to_json()
    _question, body, _code, _button = learn_tab.render(answer)
    assert ("*Answered by* **embedded/twin-mlm and embedded/twin-ltr** (this step's own pair, whatever the model "
            "chosen above) *on*") in body
    assert answer["model_name"] == tiny_loaded.name


def test_a_twin_left_in_the_model_box_is_named_as_a_twin_not_bert_on_the_other_steps(tmp_path):
    """"Why the B in BERT?"'s Keep exploring opens Fill-Mask with its masked twin in the Model box, which keeps it: the
    next steps were answered by the twin with nothing saying it is not BERT. Their answer says so, and what to pick."""
    from bertdemo import compat
    from bertdemo.context import AppContext
    from bertdemo.models import embedded
    from bertdemo.ui import build_app

    ctx = AppContext.for_tests(tmp_path, default_model=embedded.EMBEDDED_MLM_NAME)
    demo = build_app(ctx)
    ctx.loader.start()
    learn_step = next(f.fn for f in compat.event_handlers(demo) if f.api_name == "learn_step")
    people = learn_step("people", TEXT, "embedded/twin-mlm")
    assert people["caveat"] == (
        "embedded/twin-mlm is one of the small twins of “Why the B in BERT?” (3 layers, hidden 256, 4 heads, trained "
        f"on their own text), not BERT: choose {embedded.EMBEDDED_MLM_NAME} in the Model box above for BERT's own "
        "answer to this step.")
    assert learn_step("why-b", TEXT, "embedded/twin-mlm")["caveat"] == ""  # the step's own pair: nothing to warn of
    assert "twins" not in learn_step("people", TEXT, "")["caveat"]

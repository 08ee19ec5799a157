"""The "Find the names" data: the capital-letter rule word by word, its precision recomputed from the
hand-checked sample, the split by summary, the scores and the per-word-memory landmark against hand counts."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bertdemo.corpus import names
from bertdemo.corpus.names import NAME, OTHER

SAMPLE = Path(__file__).parent / "data" / "names_rule_sample.tsv"


def test_the_rule_tags_each_word_as_stated():
    ws = names.words('Later, I met Marie Curie in the U.S. and NASA said: "Come to Paris" in 1901.')
    assert ws == ["Later", ",", "I", "met", "Marie", "Curie", "in", "the", "U.S", ".", "and", "NASA", "said", ":",
                  '"', "Come", "to", "Paris", '"', "in", "1901", "."]
    tags = dict(zip(ws, names.tag_words(ws)))
    assert tags["Later"] is None  # the sentence's first word
    assert tags[","] is None and tags["."] is None  # punctuation
    assert tags["I"] == OTHER and tags["1901"] == OTHER and tags["met"] == OTHER
    assert tags["Marie"] == tags["Curie"] == tags["Paris"] == NAME
    assert tags["NASA"] is None and tags["U.S"] is None  # capitals throughout: no label
    assert tags["Come"] is None  # right after a quotation mark


def test_a_leading_quote_does_not_hide_the_first_word_and_a_word_after_a_quote_has_no_label():
    ws = names.words('"Hamlet" is a play by William Shakespeare.')
    assert names.tag_words(ws) == [None, None, None, None, OTHER, OTHER, OTHER, NAME, NAME, None]


def test_label_ids_use_the_ignore_index_where_a_word_has_no_label():
    s = names.TaggedSentence("t", ("In", "Rome", "we", "ate", "."), (None, NAME, OTHER, OTHER, None))
    assert s.label_ids == [-100, 1, 0, 0, -100]


def _sample_rows() -> list[dict]:
    with open(SAMPLE, encoding="utf-8") as fh:
        lines = [line for line in fh if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_the_rules_precision_is_recomputed_from_the_hand_checked_sample():
    rows = _sample_rows()
    assert len(rows) >= 200 and {r["truth"] for r in rows} == {NAME, OTHER}
    called = right = 0
    for row in rows:
        ws = names.words(row["sentence"])
        i = int(row["word_index"])
        assert ws[i] == row["word"], row
        if names.tag_words(ws)[i] == NAME:
            called += 1
            right += row["truth"] == NAME
    assert (right, called) == names.RULE_PRECISION == (236, 250)


SUMMARIES = {f"T{k}": f"Intro sentence number {k} is here. Then Alice met Bob in Paris on day {k} again." for k in range(30)}


def test_the_split_keeps_every_summary_in_one_part_and_repeats_with_its_seed():
    held = ({f"T{k}" for k in range(10, 20)}, {f"T{k}" for k in range(20, 30)})
    sizes = {"train": 6, "validation": 4, "test": 5}
    a = names.build_name_splits(3, sizes, held_out=held, summaries=SUMMARIES)
    b = names.build_name_splits(3, sizes, held_out=held, summaries=SUMMARIES)
    titles = {part: a.titles(part) for part in ("train", "validation", "test")}
    assert [len(titles[p]) for p in ("train", "validation", "test")] == [6, 4, 5]
    assert not titles["train"] & titles["validation"] and not titles["train"] & titles["test"]
    assert not titles["validation"] & titles["test"]
    assert titles["validation"] <= held[0] and titles["test"] <= held[1] and not titles["train"] & (held[0] | held[1])
    assert a == b
    assert a != names.build_name_splits(4, sizes, held_out=held, summaries=SUMMARIES)
    with pytest.raises(ValueError, match="validation split has 10 summaries"):
        names.build_name_splits(3, {**sizes, "validation": 11}, held_out=held, summaries=SUMMARIES)


TRUE = [[None, NAME, OTHER, NAME, NAME, OTHER], [None, OTHER, NAME, None, NAME]]
PRED = [[OTHER, NAME, NAME, NAME, OTHER, OTHER], [NAME, OTHER, OTHER, OTHER, NAME]]


def test_word_scores_match_a_hand_count():
    # labelled words: 8; NAME true 5, predicted 4 (the words without a label are skipped); tp 3, fp 1, fn 2
    s = names.word_scores(TRUE, PRED)
    assert (s["words"], s["true_names"], s["predicted_names"]) == (8, 5, 4)
    assert s["precision"] == 3 / 4 and s["recall"] == 3 / 5
    assert s["f1"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert s["accuracy"] == 5 / 8


def test_entity_scores_match_a_hand_count():
    # true spans: (1,1), (3,4) | (2,4) (the unlabelled word 3 does not break it); predicted: (1,3) | (4,4)
    assert names.name_spans(TRUE[1]) == {(2, 4)}
    s = names.entity_scores(TRUE, PRED)
    assert (s["true_entities"], s["predicted_entities"]) == (3, 2)
    assert s["precision"] == 0.0 and s["f1"] == 0.0
    right = names.entity_scores(TRUE, [[OTHER, NAME, OTHER, NAME, NAME, OTHER], [OTHER] * 5])
    assert (right["precision"], right["recall"]) == (1.0, 2 / 3)


def test_per_word_memory_takes_each_words_most_frequent_tag_and_unseen_words_are_o():
    train = [names.TaggedSentence("a", ("The", "Bank", "said", "bank"), (None, NAME, OTHER, OTHER)),
             names.TaggedSentence("b", ("A", "bank", "near", "Turin"), (None, OTHER, OTHER, NAME)),
             names.TaggedSentence("c", ("So", "Turin", "and", "Near"), (None, NAME, OTHER, NAME))]
    memory = names.word_memory(train)
    assert memory == {"bank": OTHER, "said": OTHER, "near": OTHER, "turin": NAME, "and": OTHER}  # near: 1-1, O
    assert names.memory_tags(memory, ["Turin", "BANK", "Rome"]) == [NAME, OTHER, OTHER]

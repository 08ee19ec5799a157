"""The topic task built from the embedded summaries: exact counts, the text rule, a stratified, seeded,
cached split and its class balance."""

from __future__ import annotations

import collections

import pytest

from bertdemo.corpus import topics
from bertdemo.corpus.sentences import first_sentence, split_sentences

EXPECTED_COUNTS = {
    "Arts": 668, "Biology and health sciences": 1358, "Everyday life": 424, "Geography": 1109, "History": 615,
    "Mathematics": 256, "People": 1828, "Philosophy and religion": 388, "Physical sciences": 974,
    "Society and social sciences": 785, "Technology": 628,
}


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    return topics.load_topic_splits(tmp_path_factory.mktemp("topics"), seed=0)


def test_labelled_summaries_are_9033_in_11_topics():
    rows = topics.labelled_summaries()
    assert len(rows) == 9033
    assert dict(collections.Counter(topic for _, _, topic in rows)) == EXPECTED_COUNTS
    assert sorted(EXPECTED_COUNTS) == list(topics.TOPIC_NAMES)
    assert "Uncategorized" not in {topic for _, _, topic in rows}


def test_text_is_the_first_sentence_cut_to_the_word_cap():
    assert first_sentence("Dr. Smith was born in St. Louis. He was a doctor.") == "Dr. Smith was born in St. Louis."
    assert split_sentences("The U.S. Army was formed in 1775. J. R. R. Tolkien wrote books.\nA new line") == [
        "The U.S. Army was formed in 1775.", "J. R. R. Tolkien wrote books.", "A new line"]
    long = " ".join(f"w{i}" for i in range(60)) + ". Second sentence."
    assert topics.topic_text(long).split() == [f"w{i}" for i in range(topics.TEXT_MAX_WORDS)]
    rows = {title: text for title, text, _ in topics.labelled_summaries()}
    assert rows["Tencent"] == ("Tencent is a Chinese multinational technology conglomerate and holding company "
                               "headquartered in Shenzhen.")
    assert max(len(text.split()) for text in rows.values()) == topics.TEXT_MAX_WORDS


def test_split_is_stratified_disjoint_and_labelled(splits):
    assert {name: len(part) for name, part in splits.items()} == {"train": 6323, "validation": 1355, "test": 1355}
    assert splits["train"].features["label"].names == list(topics.TOPIC_NAMES)
    titles = [set(part["title"]) for part in splits.values()]
    assert sum(len(t) for t in titles) == len(set().union(*titles)) == 9033
    balance = topics.class_balance(splits)
    assert {t: sum(balance[s][t] for s in topics.SPLITS) for t in topics.TOPIC_NAMES} == EXPECTED_COUNTS
    for topic, total in EXPECTED_COUNTS.items():  # each split holds its share of every topic, to one example
        assert abs(balance["test"][topic] - 0.15 * total) <= 1
        assert abs(balance["validation"][topic] - 0.15 * total) <= 1
    assert balance["train"]["Mathematics"] == 179 and balance["test"]["People"] == 274


def test_split_is_saved_once_and_the_same_seed_gives_the_same_rows(splits, tmp_path):
    again = topics.load_topic_splits(tmp_path, seed=0)
    assert list(again["test"]["title"]) == list(splits["test"]["title"])
    saved = list(tmp_path.iterdir())
    assert [p.name for p in saved] == [topics.split_folder(tmp_path, 0).name]  # no temp folder left behind
    stamp = (saved[0] / "dataset_dict.json").stat().st_mtime_ns
    assert list(topics.load_topic_splits(tmp_path, seed=0)["train"]["title"]) == list(splits["train"]["title"])
    assert (saved[0] / "dataset_dict.json").stat().st_mtime_ns == stamp  # loaded, not written again
    other = topics.load_topic_splits(tmp_path, seed=1)
    assert list(other["test"]["title"]) != list(splits["test"]["title"])
    assert topics.class_balance(other)["test"] == topics.class_balance(splits)["test"]


def test_class_balance_of_one_dataset():
    from datasets import ClassLabel, Dataset, Features

    ds = Dataset.from_dict({"label": [0, 0, 5]}, features=Features({"label": ClassLabel(names=list(topics.TOPIC_NAMES))}))
    balance = topics.class_balance(ds)
    assert list(balance) == ["all"]
    assert balance["all"]["Arts"] == 2 and balance["all"]["Mathematics"] == 1 and sum(balance["all"].values()) == 3


def test_task_names_and_notes_load_without_torch():
    """The page reads the topic names, the probe tasks and the literature note without loading torch."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, json, bertdemo.corpus.topics, bertdemo.finetune.probe_tasks\n"
            "print(json.dumps(['torch' in sys.modules, 'datasets' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [False, False]


def _sentence_index(docs) -> set[str]:
    """Every sentence of ``docs`` as the topic task would cut it (the word cap applied)."""
    return {topics.topic_text(sentence) for doc in docs for sentence in split_sentences(doc)}


def test_pretraining_wiki_corpus_holds_no_validation_or_test_sentence(splits):
    from bertdemo.models.embedded import wiki_summaries
    from bertdemo.pretrain.data import open_corpus

    held_out = set(splits["validation"]["text"]) | set(splits["test"]["text"])
    assert len(held_out) == 2710
    assert held_out <= _sentence_index(wiki_summaries())  # the whole corpus holds every one of them
    corpus = open_corpus("wiki")
    docs = list(corpus.docs)
    assert len(docs) == len(wiki_summaries()) - 2710  # whole summaries left out
    assert not held_out & _sentence_index(docs)
    assert topics.held_out_titles() == set(splits["validation"]["title"]) | set(splits["test"]["title"])

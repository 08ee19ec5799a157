"""The topic task's landmarks: majority class, bag-of-words logistic regression, a frozen model's layer probes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value
from transformers import BertModel

from bertdemo.corpus.topics import load_topic_splits
from bertdemo.finetune import baselines
from bertdemo.finetune.features import ActivationCache
from tests.helpers import tiny_bert_config


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    return load_topic_splits(tmp_path_factory.mktemp("topics"))


def _small(splits, n_train: int, n_eval: int) -> DatasetDict:
    return DatasetDict({"train": splits["train"].select(range(n_train)),
                        "validation": splits["validation"].select(range(n_eval)),
                        "test": splits["test"].select(range(n_eval))})


def test_majority_class_is_people_at_274_of_1355(splits):
    b = baselines.majority_baseline(splits)
    assert b.test_accuracy == b.val_accuracy == 274 / 1355
    assert b.test_macro_f1 == pytest.approx(2 * 274 / (2 * 274 + 1355 - 274) / 11)  # F1 of People; 0 for the rest
    assert b.note == "always 'People'"


def test_bag_of_words_learns_words_that_name_the_class():
    feats = Features({"text": Value("string"), "label": ClassLabel(names=["animals", "music"])})
    rows = {"train": 20, "validation": 6, "test": 6}
    animal = ["cat", "dog", "horse", "cow"]
    music = ["piano", "violin", "drum", "song"]

    def part(n: int, offset: int) -> Dataset:
        texts = [f"The {(animal if i % 2 else music)[(i // 2 + offset) % 4]} is here." for i in range(n)]
        texts[0] += " Zebra."  # seen once in training: below the vocabulary's minimum count
        return Dataset.from_dict({"text": texts, "label": [0 if i % 2 else 1 for i in range(n)]}, features=feats)

    ds = DatasetDict({name: part(n, k) for k, (name, n) in enumerate(rows.items())})
    b = baselines.bag_of_words_baseline(ds)
    assert b.val_accuracy == b.test_accuracy == 1.0 and b.test_macro_f1 == 1.0
    assert b.note.startswith("logistic regression on 11 words")  # the 8 class words, "the", "is", "here"
    assert "(chosen on validation)" in b.note
    assert b == baselines.bag_of_words_baseline(ds)  # deterministic


def test_bag_of_words_beats_the_majority_on_real_first_sentences(splits):
    small = _small(splits, 800, 200)
    bow = baselines.bag_of_words_baseline(small)
    majority = baselines.majority_baseline(small)
    assert bow.test_accuracy > majority.test_accuracy + 0.3
    few = baselines.bag_of_words_baseline(small, max_per_topic=20)
    assert few.note.endswith("220 training texts")  # 20 of each of the 11 topics
    assert np.bincount(baselines.per_topic(small["train"], 20)["label"]).tolist() == [20] * 11


def test_frozen_probe_scores_every_layer_for_each_pooling(splits, tokenizer):
    torch.manual_seed(0)
    model = BertModel(tiny_bert_config()).eval()
    small = _small(splits, 200, 60)
    cache = ActivationCache()
    probes = baselines.frozen_probe("tiny", model, tokenizer, small, cache, max_train=120)
    assert set(probes) == {"mean", "cls"}
    majority = baselines.majority_baseline(DatasetDict({**small, "train": small["train"].select(range(120))}))
    for pooling, probe in probes.items():
        assert probe.pooling == pooling and probe.n_train == 120
        assert len(probe.val_accuracy) == len(probe.test_accuracy) == len(probe.test_macro_f1) == 3
        assert probe.val_accuracy[probe.best_layer] == max(probe.val_accuracy)
    assert probes["cls"].val_accuracy[0] == majority.val_accuracy  # layer 0's [CLS] is one vector for every text
    landmark = probes["mean"].baseline(2)
    assert landmark.name == "frozen tiny, layer 2 (mean)"
    assert landmark.test_accuracy == probes["mean"].test_accuracy[2]
    assert len(cache) == 1
    assert baselines.frozen_probe("tiny", model, tokenizer, small, cache, max_train=120) == probes
    assert len(cache) == 1  # the second probe read its features from the cache
    assert np.isfinite(landmark.val_macro_f1)


def test_the_frozen_probe_landmark_is_the_layer_best_on_validation_with_its_test_scores():
    probe = baselines.LayerProbe("m", "mean", val_accuracy=(0.5, 0.8, 0.7), val_macro_f1=(0.4, 0.7, 0.6),
                                 test_accuracy=(0.5, 0.6, 0.9), test_macro_f1=(0.4, 0.5, 0.85), n_train=10)
    landmark = probe.baseline()
    assert probe.best_layer == 1 and landmark.name == "frozen m, layer 1 (mean)"
    assert (landmark.test_accuracy, landmark.test_macro_f1) == (0.6, 0.5)  # not the test maximum, 0.9

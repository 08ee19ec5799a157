"""Which layer knows what: the three probing tasks' exact labels, probes of every layer with their controls,
and the probe across a run's checkpoints — on a tiny model built here."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import BertForMaskedLM, BertModel

from bertdemo.corpus.sentences import split_sentences
from bertdemo.corpus.topics import TOPIC_NAMES, labelled_summaries
from bertdemo.finetune import layer_probes as lp, probe_tasks as pt
from bertdemo.finetune.features import ActivationCache
from bertdemo.models.embedded import wiki_summaries
from tests.helpers import tiny_bert_config

SMALL = {"train": 36, "validation": 12, "test": 12}


@pytest.fixture(scope="module")
def sentences() -> set[str]:
    return {s for summary in wiki_summaries() for s in split_sentences(summary)}


@pytest.fixture(scope="module")
def small_tasks() -> dict[str, pt.ProbeTask]:
    return {name: pt.build_task(name, sizes=SMALL) for name in pt.TASKS}


@pytest.fixture()
def tiny_encoder():
    torch.manual_seed(0)
    return BertModel(tiny_bert_config()).eval()


def test_length_labels_are_the_bins_of_the_word_counts_balanced():
    task = pt.build_task("length")
    assert {split: len(t) for split, t in task.texts.items()} == {"train": 600, "validation": 198, "test": 198}
    for split, texts in task.texts.items():
        for text, label in zip(texts, task.labels[split]):
            lo, hi = pt.LENGTH_BINS[label]
            assert lo <= len(text.split()) <= hi
    assert np.bincount(task.labels["train"]).tolist() == [100] * 6
    assert task.label_names[0] == "5–7 words"


def test_bigram_shift_swaps_one_pair_of_lowercase_words_in_half_the_sentences(sentences):
    task = pt.build_task("bigram_shift")
    texts, labels = task.texts["train"], task.labels["train"]
    assert len(texts) == 600 and 250 < labels.sum() < 350
    assert len(set(texts)) == len(texts)
    for text, label in zip(texts, labels):
        if label == 0:
            assert text in sentences
            continue
        assert text not in sentences
        words = text.split()
        restored = [" ".join(words[:i] + [words[i + 1], words[i]] + words[i + 2:]) for i in pt.swap_positions(words)]
        assert any(r in sentences for r in restored)  # one adjacent pair swapped back gives the original
    assert pt.swap_positions("The cat sat on the mat.".split()) == [1, 2, 3]  # "the mat." ends in a stop
    assert pt.swap_positions("He said it it was".split()) == [1, 3]  # "it it" would not change the sentence


def test_topic_task_is_first_sentences_with_their_topic(small_tasks):
    task = small_tasks["topic"]
    truth = {text: topic for _, text, topic in labelled_summaries()}
    assert task.label_names == TOPIC_NAMES
    for split, texts in task.texts.items():
        assert [TOPIC_NAMES[y] for y in task.labels[split]] == [truth[t] for t in texts]


def test_tasks_are_seeded_and_bounded(small_tasks):
    assert pt.build_task("topic", seed=0, sizes=SMALL).texts == small_tasks["topic"].texts
    assert pt.build_task("topic", seed=1, sizes=SMALL).texts != small_tasks["topic"].texts
    with pytest.raises(ValueError, match="Unknown probe task"):
        pt.build_task("depth")
    with pytest.raises(ValueError, match="2 to 5,000"):
        pt.build_task("topic", sizes={"train": 10**6})
    with pytest.raises(ValueError, match="9,033 examples to draw from"):
        pt.build_task("topic", sizes={"train": 5000, "validation": 5000})


def test_random_model_has_the_same_shape_seeded_weights_and_leaves_the_global_seed(tiny_encoder):
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a = lp.random_model_like(tiny_encoder, seed=3)
    assert torch.equal(torch.rand(1), expected_next)
    b = lp.random_model_like(tiny_encoder, seed=3)
    c = lp.random_model_like(tiny_encoder, seed=4)
    shapes = {k: v.shape for k, v in tiny_encoder.state_dict().items()}
    assert {k: v.shape for k, v in a.state_dict().items()} == shapes
    w = "encoder.layer.0.attention.self.query.weight"
    assert torch.equal(a.state_dict()[w], b.state_dict()[w])
    assert not torch.equal(a.state_dict()[w], c.state_dict()[w])
    assert not torch.equal(a.state_dict()[w], tiny_encoder.state_dict()[w])


def test_probe_layers_scores_every_layer_beside_its_controls(tiny_encoder, tokenizer, small_tasks):
    cache = ActivationCache()
    heard: list[float] = []
    results = lp.probe_layers("tiny", tiny_encoder, tokenizer, cache, sizes=SMALL,
                              progress=lambda f, m: heard.append(f))
    assert [r.task for r in results] == list(pt.TASKS)
    assert [r.kind for r in results] == ["surface", "syntax", "semantics"]
    assert heard == sorted(heard) and heard[-1] == 1.0
    for r in results:
        task = small_tasks[r.task]
        top = np.bincount(task.labels["train"]).argmax()
        assert r.majority_accuracy == np.mean(task.labels["test"] == top)
        for scores in (r.model, r.random):
            assert len(scores.mean) == len(scores.cls) == len(scores.mean_val) == len(scores.cls_val) == 3
            assert all(0.0 <= a <= 1.0 for a in scores.mean + scores.cls + scores.mean_val + scores.cls_val)
            layer, pooling, acc = scores.best
            assert getattr(scores, f"{pooling}_val")[layer] == max(scores.mean_val + scores.cls_val)
            assert acc == getattr(scores, pooling)[layer]
        assert r.random.model_name == "tiny (random weights, seed 0)"
        assert r.n_train == len(task.texts["train"])
    topic = results[2]
    counts = np.sort(np.bincount(small_tasks["topic"].labels["train"]))
    assert counts[-1] > counts[-2]  # one most common topic, so the majority answer is defined
    assert topic.model.cls[0] == topic.random.cls[0] == topic.majority_accuracy  # layer 0's [CLS]: one vector for all
    assert len(cache) == 6  # each task's texts, for the model and for the control
    again = lp.probe_layers("tiny", tiny_encoder, tokenizer, cache, tasks=("topic",), sizes=SMALL)
    assert again[0] == results[2] and len(cache) == 6  # control features too came from the cache
    with pytest.raises(ValueError, match="Unknown probe task"):
        lp.probe_layers("tiny", tiny_encoder, tokenizer, cache, tasks=("depth",))


def test_probe_checkpoints_follows_a_run(tmp_path, tokenizer):
    folders = []
    for step, seed in ((10, 0), (None, 1)):
        torch.manual_seed(seed)
        folder = tmp_path / f"step-{step}"
        BertForMaskedLM(tiny_bert_config()).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        if step is not None:
            (folder / "trainer_state.json").write_text(json.dumps({"step": step}))
        folders.append(folder)
    heard: list[str] = []
    results = lp.probe_checkpoints(folders, ActivationCache(), sizes=SMALL, progress=lambda f, m: heard.append(m))
    assert [r.step for r in results] == [10, None]
    assert [r.path for r in results] == [str(f) for f in folders]
    assert all(len(r.accuracy) == len(r.val_accuracy) == 3 for r in results)
    assert all(r.val_accuracy[r.best_layer] == max(r.val_accuracy) for r in results)
    assert results[0].majority_accuracy == results[1].majority_accuracy
    assert heard and not any(str(tmp_path) in m for m in heard)
    with pytest.raises(ValueError, match="not a model folder"):
        lp.probe_checkpoints([tmp_path], ActivationCache(), sizes=SMALL)


def test_the_literature_note_is_something_to_look_for():
    assert "Jawahar et al. (2019" in pt.JAWAHAR_NOTE
    assert all(word in pt.JAWAHAR_NOTE for word in ("surface", "middle", "semantic", "random-weight control"))


def test_the_best_layer_is_chosen_on_validation_and_reported_with_its_test_accuracy():
    """Validation and test disagree: the test maximum ([CLS], layer 1, 95 %) is not the answer."""
    scores = lp.LayerScores("m", mean=(0.5, 0.9, 0.6), cls=(0.5, 0.95, 0.7), mean_macro_f1=(0.0,) * 3,
                            cls_macro_f1=(0.0,) * 3, mean_val=(0.5, 0.6, 0.8), cls_val=(0.5, 0.7, 0.75))
    assert scores.best == (2, "mean", 0.6)
    probe = lp.CheckpointProbe("step-10", 10, accuracy=(0.5, 0.9, 0.6), majority_accuracy=0.5,
                               val_accuracy=(0.5, 0.6, 0.8))
    assert (probe.best_layer, probe.best_accuracy) == (2, 0.6)

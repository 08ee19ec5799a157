"""Drawing Find the names: the tagged sentence (escaped, each word's label and probability), a run's report in
words against its landmarks, and the one chart of which layer knows what."""

from __future__ import annotations

import math

from bertdemo.finetune.metrics import FinetuneSnapshot
from bertdemo.finetune.word_probes import WordLayerScores, WordProbe
from bertdemo.viz import names as viz


def test_the_tagged_sentence_names_the_model_and_escapes_each_word():
    html = viz.tagged_html([("<b>Ada</b>", "NAME", 0.91), ("wrote", "O", 0.99)], "ft:run-1")
    assert "<b>Ada</b>" not in html and "&lt;b&gt;Ada&lt;/b&gt;" in html
    assert "ft:run-1" in html and "1 of 2 words called names" in html
    assert "NAME 91%" in html and "O 99%" in html and "P(NAME) = 0.010" in html
    # a learner reads 55 % as "unsure": the scale is said, and such a box is marked (walk: "match" called a name)
    unsure = viz.tagged_html([("after", "O", 0.97), ("the", "O", 0.99), ("match", "NAME", 0.55)], "ft:run-1")
    assert "NAME 55% · unsure" in unsure and "1 of 3 words called names, 1 of them unsure" in unsure
    assert "50 % is a coin toss; below 65 % the model is unsure" in unsure


def _snap(test_f1: float) -> FinetuneSnapshot:
    scores = {"f1": test_f1, "precision": 0.5, "recall": 0.5, "words": 20, "true_names": 4}
    errors = {"missed": [{"words": ["So", "Ada", "came"], "index": 1, "word": "Ada", "p_name": 0.2}], "false": [],
              "missed_total": 3, "false_total": 0}
    return FinetuneSnapshot(task="names", init="embedded", test_macro_f1=test_f1, names={
        "landmarks": {"word_memory": {"test": {"f1": 0.5}, "validation": {"f1": 0.4}},
                      "all_o": {"test": {"f1": 0.0}, "validation": {"f1": 0.0}}},
        "sentences": {"test": 2}, "test": scores, "test_entity": {"f1": 0.25}, "errors": errors})


def test_the_report_says_where_the_run_ended_against_per_word_memory_and_lists_its_errors():
    assert "**above** per-word memory (50.0%" in viz.report_markdown(_snap(0.6))
    assert "**below** per-word memory" in viz.report_markdown(_snap(0.4))
    report = viz.report_markdown(_snap(0.5))
    assert "**level with**" in report and "entity-level F1 25.0%" in report
    assert "**Names it missed** (3; the first 1):" in report and "So **Ada** came — P(NAME) 0.20" in report
    assert "**Words it wrongly called names:** none." in report


def test_which_layer_knows_what_draws_names_beside_the_sentence_probes_with_their_controls():
    scores = WordLayerScores((0.1, 0.8, 0.7), (0.2, 0.9, 0.6), (0.9, 0.95, 0.94), (1.0, 0.1, 0.1))
    probe = WordProbe("names", 100, 40, 0.9, scores, scores)
    assert scores.best == (1, 0.8)
    spec = viz.layers_spec(probe, {})
    assert [t["name"] for t in spec["data"]] == ["names (per word): F1 of NAME", "names, random weights"]
    assert spec["data"][0]["y"] == [0.1, 0.8, 0.7]
    text = viz.layers_markdown(probe, "embedded", [])
    assert "**1**" in text and "**80.0%** test F1" in text and "not yet length, bigram shift, topic" in text
    assert "plateau" not in text  # the best layer is the first near it
    # the walk: the best on validation at layer 5, the curve flat from layer 2, the embeddings alone at 67 %
    flat = WordLayerScores((0.67, 0.74, 0.786, 0.788, 0.79, 0.791), (0.66, 0.73, 0.781, 0.785, 0.789, 0.79),
                           (0.9,) * 6, (1.0,) * 6)
    text = viz.layers_markdown(WordProbe("names", 100, 40, 0.9, flat, None), "embedded", ["topic"])
    assert "the layer chosen on validation F1 is **5**" in text
    assert "The curve reaches its plateau at layer **2** (its validation F1 within 1 point of the best: 78.6% test F1)" \
        in text and "the embeddings alone (layer 0) give 67.0%" in text
    assert math.isclose(probe.majority_accuracy, 0.9)


def test_the_curve_and_the_report_show_which_steps_weights_the_run_kept():
    snap = _snap(0.7)
    snap.names["chosen"] = {"step": 40, "epoch": 1.5, "wall_s": 12.5, "f1": 0.8, "loss": 0.2, "last_step": 80,
                            "on": "validation sample of 391"}
    snap.eval_wall_s.extend([0.0, 12.5, 25.0])
    snap.eval_steps.extend([0, 40, 80])
    snap.val_macro_f1.extend([0.0, 0.8, 0.6])
    traces = {t["name"]: t for t in viz.curve_spec(snap)["data"]}
    assert traces["kept: step 40, the best on validation"]["x"] == [12.5]
    assert traces["kept: step 40, the best on validation"]["y"] == [0.8]
    assert traces["test, of the kept weights"]["x"] == [12.5] and traces["test, of the kept weights"]["y"] == [0.7]
    text = viz.report_markdown(snap)
    assert "**Which weights:** step 40 of 80 (epoch 1.5), chosen on the validation sample of 391 sentences" in text
    assert "(80.0%), then the lowest loss, among the evaluations after training began (the start, step 0, is no " \
        "choice" in text

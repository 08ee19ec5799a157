"""The Fine-tune tab's drawings carry the run's own numbers: landmarks at their values, shares of each true
topic, each topic's accuracy in its row, the probe's probabilities, the status naming the start."""

from __future__ import annotations

import math

import pytest

from bertdemo.finetune.metrics import FinetuneSnapshot
from bertdemo.viz import finetune as viz


def snap() -> FinetuneSnapshot:
    return FinetuneSnapshot(
        run_id="r1", status="finished", init="embedded", init_label="the embedded pretrained model",
        labels=["Arts", "Biology and health sciences", "People"], step=10, total_steps=20, epoch=0.5, elapsed_s=30,
        steps=[5, 10], train_loss=[2.0, 1.0], wall_s=[10.0, 20.0], eval_steps=[0, 10], eval_wall_s=[1.0, 25.0],
        val_loss=[1.1, 0.5], val_accuracy=[0.3, 0.8], val_macro_f1=[0.2, 0.75], eval_examples=500,
        probe_probs=[[0.3, 0.3, 0.4], [0.9, 0.05, 0.05]], confusion=[[8, 2, 0], [1, 3, 0], [0, 0, 0]],
        val_accuracy_all=0.81, val_macro_f1_all=0.7, test_accuracy=0.79, test_macro_f1=0.69,
        new_weights=["bert.pooler", "classifier"])


def test_the_curves_draw_each_landmark_at_its_value():
    spec = viz.curves_spec([("live", snap())], {"majority": 0.2, "bag_of_words": 0.86})
    assert sorted(shape["y0"] for shape in spec["layout"]["shapes"]) == [0.2, 0.86]
    assert sorted(note["text"] for note in spec["layout"]["annotations"] if note["yref"] == "y2") == [
        "bag of words + logistic regression 86% (test)", "majority class 20% (test)"]
    accuracy = next(t for t in spec["data"] if t["yaxis"] == "y2" and t["mode"] == "lines+markers")
    assert accuracy["x"] == [1.0, 25.0] and accuracy["y"] == [0.3, 0.8]
    test = next(t for t in spec["data"] if t["name"] == "live: test")  # what the landmarks compare with
    assert test["x"] == [25.0] and test["y"] == [0.79] and test["marker"]["symbol"] == "diamond"
    assert spec["layout"]["yaxis2"]["title"]["text"] == "accuracy"  # fits the panel (tests/e2e/test_finetune.py)
    running = snap()
    running.test_accuracy = math.nan
    assert not any(t["name"] == "live: test" for t in viz.curves_spec([("live", running)], {})["data"])


def test_only_topic_runs_are_drawn_against_the_topic_landmarks():
    """A names run's word accuracy (nearly every word is O) or an own-data run's labels measured against the
    topic task's lines would mislead: each has its own chart."""
    names, own = snap(), snap()
    names.task, own.task = "names", "own"
    spec = viz.curves_spec([("topic", snap()), ("names", names), ("own", own)], {"majority": 0.2})
    assert {t["legendgroup"] for t in spec["data"] if "legendgroup" in t} == {"r0"}
    assert {t["name"].split(":")[0] for t in spec["data"] if t.get("legendgroup") == "r0"} == {"topic"}


def test_the_checkpoint_probe_draws_the_layer_chosen_on_validation_at_its_test_accuracy():
    from bertdemo.finetune.layer_probes import CheckpointProbe

    results = [CheckpointProbe("a", 100, (0.5, 0.9, 0.6), 0.5, (0.5, 0.6, 0.8)),
               CheckpointProbe("b", 800, (0.5, 0.7, 0.95), 0.5, (0.5, 0.9, 0.6))]
    trace = viz.checkpoint_probe_spec(results)["data"][0]
    assert trace["x"] == [100, 800] and trace["y"] == [0.6, 0.7] and trace["customdata"] == [2, 1]


def test_before_any_run_both_panels_of_the_curves_have_a_trace_so_both_draw_their_axes():
    """The train-loss panel had no trace before a run, and plotly left it blank (half the chart white)."""
    spec = viz.curves_spec([], {"majority": 0.2})
    assert {(t["xaxis"], t["yaxis"]) for t in spec["data"]} == {("x", "y"), ("x2", "y2")}
    assert all(t["x"] == [] and t["y"] == [] for t in spec["data"])
    with_run = viz.curves_spec([("live", snap())], {})
    assert all(t["x"] for t in with_run["data"])  # a run's curves only, no empty placeholder


def test_the_confusion_matrix_shows_shares_of_each_true_topic_and_its_accuracy():
    trace = viz.confusion_spec(snap())["data"][0]
    assert trace["z"][0] == [0.8, 0.2, 0.0] and trace["z"][1] == [0.25, 0.75, 0.0]
    assert trace["y"][:2] == ["Arts (80%)", "Biology (75%)"] and trace["y"][2] == "People (nan%)"
    assert trace["customdata"][1][0] == ["Biology and health sciences", "Arts", 1]
    assert math.isnan(snap().per_topic_accuracy[2])


def test_the_probe_chart_follows_the_topics_that_led():
    data = viz.probe_spec(snap(), top=2)["data"]
    assert [t["name"] for t in data] == ["Arts (90% now)", "People (5% now)"]
    assert data[0]["y"] == [0.3, 0.9]


def test_the_status_names_the_start_and_the_splits_and_escapes_the_message():
    s = snap()
    s.message = "<img src=x> done"
    text = viz.status_markdown(s)
    assert "the embedded pretrained model" in text and "81.0%" in text and "79.0%" in text
    assert "80.0%" not in text  # the ended run's one validation figure is the whole split's, not the sample's
    assert "<img" not in text
    assert "pooler" in viz.new_weights_markdown(s) and viz.new_weights_markdown(None) == ""


def test_a_run_with_no_planned_total_shows_its_steps_without_a_zero_total():
    """A run on a learner's own data counts its steps fold by fold, with no total planned: paused, it read
    "step 24 / 0" (issue 52)."""
    s = snap()
    s.step, s.total_steps, s.status = 24, 0, "paused"
    assert "step **24** ·" in viz.status_markdown(s) and "/ 0" not in viz.status_markdown(s)


@pytest.mark.parametrize("labels, short", [(["Arts", "Physical sciences"], ["Arts", "Physical"]),
                                           (["Social a", "Social b"], ["Social a", "Social b"])])
def test_short_names_keep_topics_apart(labels, short):
    assert viz.short_names(labels) == short


def test_the_checkpoint_probe_says_how_many_points_it_has():
    from bertdemo.finetune.layer_probes import CheckpointProbe

    two = [CheckpointProbe("a", 100, (0.5, 0.6), 0.5, (0.5, 0.6)),
           CheckpointProbe("b", 200, (0.5, 0.7), 0.5, (0.5, 0.6))]
    note = viz.checkpoints_note(len(two), kept=2)
    assert note.startswith("2 checkpoints on disk: 2 points, too few to say when.") and "at most 2" in note
    assert viz.checkpoint_probe_spec(two, note=note)["layout"]["title"]["text"] == note
    assert viz.checkpoints_note(5, kept=8) == "5 checkpoints on disk: 5 points"

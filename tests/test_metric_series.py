"""Held-out metric series stay aligned with their evaluation steps when a value is missing (a Stop during
the NSP part of an evaluation, a resumed run, an older history): the CSV, the curves and the status line."""

from __future__ import annotations

import csv
import io
import math

from bertdemo.pretrain.metrics import MetricsBuffer, history_dict, metrics_csv, snapshot_from_history
from bertdemo.viz.run_curves import CurveRun, status_markdown, training_curves_spec


def _three_evaluations_with_nsp_missing_in_the_middle() -> MetricsBuffer:
    buffer = MetricsBuffer(run_id="r", status="running")
    buffer.log_eval(10, 6.0, 0.10, 0.70, 0.55, tokens=100, wall_s=1.0, top5=0.20, median_rank=90.0)
    buffer.log_eval(20, 5.0, 0.20, None, None, tokens=200, wall_s=2.0, top5=None, median_rank=None)
    buffer.log_eval(30, 4.0, 0.30, 0.60, 0.60, tokens=300, wall_s=3.0, top5=0.40, median_rank=30.0)
    return buffer


def _column(text: str, name: str) -> dict[str, str]:
    return {row["step"]: row[name] for row in csv.DictReader(io.StringIO(text))}


def test_a_missing_value_leaves_a_gap_on_its_own_row_of_the_csv():
    text = metrics_csv(_three_evaluations_with_nsp_missing_in_the_middle().snapshot())
    assert _column(text, "nsp_acc") == {"10": "0.55", "20": "", "30": "0.6"}
    assert _column(text, "top5_acc") == {"10": "0.2", "20": "", "30": "0.4"}
    assert _column(text, "median_rank") == {"10": "90", "20": "", "30": "30"}
    assert _column(text, "mlm_acc") == {"10": "0.1", "20": "0.2", "30": "0.3"}


def test_every_series_has_one_entry_per_evaluation():
    snap = _three_evaluations_with_nsp_missing_in_the_middle().snapshot()
    for name in ("eval_loss", "mlm_acc", "top5_acc", "median_rank", "nsp_acc", "eval_nsp_loss", "locality_strength"):
        assert len(getattr(snap, name)) == 3, name
    assert snap.nsp_acc[0] == 0.55 and math.isnan(snap.nsp_acc[1]) and snap.nsp_acc[2] == 0.60


def _trace(spec: dict, name: str) -> dict:
    [trace] = [t for t in spec["data"] if t.get("name") == name]
    return trace


def test_the_curves_keep_every_point_and_draw_the_missing_one_as_a_gap():
    snap = _three_evaluations_with_nsp_missing_in_the_middle().snapshot()
    spec = training_curves_spec([CurveRun("a", snap)])
    nsp = _trace(spec, "a: NSP accuracy")
    assert nsp["x"] == [10, 20, 30]
    assert nsp["y"] == [0.55, None, 0.6]
    assert _trace(spec, "a: top-5 accuracy")["y"] == [0.2, None, 0.4]
    assert _trace(spec, "a: median rank")["y"] == [90, None, 30]


def test_a_run_without_nsp_draws_no_nsp_curve_and_says_nothing_of_it():
    buffer = MetricsBuffer(run_id="r", status="running")
    buffer.log_eval(10, 6.0, 0.10, None, None, top5=0.2, median_rank=90.0)
    snap = buffer.snapshot()
    spec = training_curves_spec([CurveRun("a", snap)])
    assert [t for t in spec["data"] if t.get("name") == "a: NSP accuracy"] == []
    assert "NSP" not in status_markdown(snap)
    assert "top-5 20.0%" in status_markdown(snap)


def test_the_status_line_shows_the_latest_value_there_is():
    buffer = _three_evaluations_with_nsp_missing_in_the_middle()
    buffer.log_eval(40, 3.5, 0.35, None, None, top5=None, median_rank=None)
    text = status_markdown(buffer.snapshot())
    assert "NSP accuracy 60.0%" in text
    assert "top-5 40.0%" in text


def test_a_saved_history_comes_back_aligned():
    snap = _three_evaluations_with_nsp_missing_in_the_middle().snapshot()
    back = snapshot_from_history(history_dict(snap))
    assert back.eval_steps == [10, 20, 30]
    assert back.nsp_acc[0] == 0.55 and math.isnan(back.nsp_acc[1]) and back.nsp_acc[2] == 0.60


def test_an_older_history_with_a_short_series_shows_gaps_not_shifted_values():
    snap = _three_evaluations_with_nsp_missing_in_the_middle().snapshot()
    old = history_dict(snap)
    old["nsp_acc"] = [0.55, 0.60]  # written before every evaluation appended to every series
    back = snapshot_from_history(old)
    assert len(back.nsp_acc) == 3
    assert all(math.isnan(v) for v in back.nsp_acc)
    assert _column(metrics_csv(back), "nsp_acc") == {"10": "", "20": "", "30": ""}

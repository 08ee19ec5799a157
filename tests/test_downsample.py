"""The drawn curves: at most a few hundred points, first, last and every bucket's extremes kept."""

from __future__ import annotations

import math
import random

import pytest

from bertdemo.viz.downsample import downsample, keep_indices, rounded


def test_short_curves_are_drawn_whole():
    assert keep_indices([3.0, 1.0, 2.0], 200) == [0, 1, 2]


def test_a_long_curve_keeps_first_last_and_the_extremes_within_the_bound():
    rng = random.Random(0)
    y = [rng.gauss(5, 1) for _ in range(5_000)]
    y[1234], y[4321] = 50.0, -50.0  # a spike and a dip
    idx = keep_indices(y, 200)
    assert len(idx) <= 200 and idx == sorted(set(idx))
    assert idx[0] == 0 and idx[-1] == 4_999 and 1234 in idx and 4321 in idx
    x, ys = downsample(list(range(5_000)), y, 200)
    assert max(ys) == 50.0 and min(ys) == -50.0 and x == idx
    # every bucket's own minimum and maximum survive: the drawn line spans what the run logged there
    buckets = 99
    for b in range(buckets):
        lo, hi = 1 + b * 4_998 // buckets, 1 + (b + 1) * 4_998 // buckets
        part = y[lo:hi]
        assert lo + part.index(min(part)) in idx and lo + part.index(max(part)) in idx


def test_gaps_stay_gaps_and_the_bound_holds_for_every_size():
    y = [float("nan")] * 1_000 + [1.0, 2.0] * 500
    idx = keep_indices(y, 100)
    assert len(idx) <= 100 and idx[0] == 0 and idx[-1] == 1_999
    for n in range(201, 260):
        assert len(keep_indices([float(i % 7) for i in range(n)], 200)) <= 200
    with pytest.raises(ValueError):
        downsample([1, 2], [1.0])


def test_drawn_values_keep_four_significant_digits():
    assert rounded([7.123456, 0.00123456, 31465.2, None, math.inf, 0.0]) == [7.123, 0.001235, 31470.0, None, None, 0.0]

"""Fewer points to draw, the same picture: min/max buckets over a curve, numbers rounded for drawing.

A curve of thousands of logged points is cut into buckets of consecutive points; each bucket keeps
its lowest and its highest point (in x order), and the first and last points are always kept. Every
spike and dip stays visible and the line never shows a value the run did not log; the CSV keeps every
point. Numpy, vectorised: a live page redraws these every few seconds and the server has ~20 ms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

MAX_DRAWN_POINTS = 150  # per curve: a line at chart width looks the same; the poll stays under 50 KB
SIGNIFICANT_DIGITS = 4  # of a drawn value (the JSON stays small; a chart shows no more)


def keep_indices(y: Sequence[float | None], max_points: int = MAX_DRAWN_POINTS) -> list[int]:
    """Sorted indices of the points to draw: all when there are at most ``max_points``, else the first,
    the last and each bucket's minimum and maximum (at most ``max_points`` in all). None / NaN values are
    never a bucket's extreme; a bucket of only those keeps its first point (the gap stays a gap)."""
    n = len(y)
    if n <= max_points:
        return list(range(n))
    if max_points < 4:
        raise ValueError("Keep at least 4 points: the first, the last and one bucket's minimum and maximum.")
    values = np.asarray(y, dtype=np.float64)
    buckets = (max_points - 2) // 2
    edges = 1 + (np.arange(buckets + 1) * (n - 2)) // buckets  # bucket b: [edges[b], edges[b + 1])
    width = int((edges[1:] - edges[:-1]).max())
    idx = edges[:-1, None] + np.arange(width)[None, :]  # (buckets, width)
    inside = idx < edges[1:, None]
    picked = values[np.minimum(idx, n - 1)]
    finite = inside & np.isfinite(picked)
    lows = np.where(finite, picked, np.inf).argmin(axis=1)
    highs = np.where(finite, picked, -np.inf).argmax(axis=1)
    rows = np.arange(buckets)
    kept = np.concatenate([[0, n - 1], idx[rows, lows], idx[rows, highs]])  # argmin of an all-gap row: its first
    return np.unique(kept).tolist()


def rounded(values: Sequence[float | None], digits: int = SIGNIFICANT_DIGITS) -> list[float | None]:
    """Values to ``digits`` significant digits (None for NaN, infinity or None), as plain floats."""
    a = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(a)
    safe = np.where(finite & (a != 0), np.abs(a), 1.0)
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(safe)))
    out = np.where(finite, np.round(a * scale) / scale, np.nan).tolist()
    return [None if math.isnan(v) else v for v in out]


def downsample(x: Sequence, y: Sequence, max_points: int = MAX_DRAWN_POINTS) -> tuple[list, list]:
    """(x, y) with at most ``max_points`` points, chosen by :func:`keep_indices` on ``y``."""
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} points and y {len(y)}.")
    idx = keep_indices(y, max_points)
    return [x[i] for i in idx], [y[i] for i in idx]

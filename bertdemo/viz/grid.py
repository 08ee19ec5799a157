"""Subplot grids laid out by hand: the axis domains and panel titles that ``make_subplots`` gives, as dicts.

A figure of several panels built with ``plotly.subplots.make_subplots`` followed by ``add_trace`` and
``update_*`` calls walks plotly's property tree once per change: 30–80 ms for each figure of the
Inside BERT tab, more than the forward pass it draws. The same figure given to ``go.Figure`` as one
``data`` list and one ``layout`` dict is validated once, in a few milliseconds, and sends the same
JSON. :func:`grid` gives that layout's axes and panel titles, computed as ``make_subplots`` computes
them (``tests/test_viz_grid.py`` holds it to plotly's own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass
class Grid:
    """The axes of a grid of panels: ``layout`` (``xaxis``, ``yaxis2``…, ``annotations``) and, per
    (row, col) counted from 1 at the top left, the suffix of its axes ("" for the first panel, then "2"…)."""

    layout: dict
    suffixes: dict[tuple[int, int], str]

    def on(self, row: int, col: int) -> dict:
        """What places a trace in panel (row, col): its ``xaxis`` and ``yaxis`` references."""
        suffix = self.suffixes[(row, col)]
        return {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}

    def axes_of(self, row: int, col: int) -> tuple[dict, dict]:
        """Panel (row, col)'s x and y axes in :attr:`layout`, to set properties on."""
        suffix = self.suffixes[(row, col)]
        return self.layout[f"xaxis{suffix}"], self.layout[f"yaxis{suffix}"]

    def xaxes(self, col: int | None = None) -> list[dict]:
        """The x axes (of column ``col`` only, when given), to set properties on."""
        return [self.layout[f"xaxis{s}"] for (_, c), s in self.suffixes.items() if col in (None, c)]

    def yaxes(self, col: int | None = None) -> list[dict]:
        """The y axes (of column ``col`` only, when given), to set properties on."""
        return [self.layout[f"yaxis{s}"] for (_, c), s in self.suffixes.items() if col in (None, c)]


def _shares(total: float, weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [total / n] * n
    whole = float(sum(weights))
    return [total * (w / whole) for w in weights]


def grid(rows: int, cols: int, titles: Sequence[str] = (), *, row_heights: Sequence[float] | None = None,
         column_widths: Sequence[float] | None = None, horizontal_spacing: float | None = None,
         vertical_spacing: float | None = None, empty: Iterable[tuple[int, int]] = (),
         title_size: int = 16) -> Grid:
    """``rows`` × ``cols`` panels as ``make_subplots`` lays them out (the first row at the top), ``empty``
    cells (row, col) left out; ``titles`` name the panels in reading order, skipping empty cells (an
    empty title: none). Spacing defaults are plotly's: 0.2 / cols across; 0.5 / rows down with titles, else 0.3 / rows."""
    h_space = 0.2 / cols if horizontal_spacing is None else horizontal_spacing
    v_space = (0.5 if titles else 0.3) / rows if vertical_spacing is None else vertical_spacing
    widths = _shares(1.0 - h_space * (cols - 1), column_widths, cols)
    heights = _shares(1.0 - v_space * (rows - 1), row_heights, rows)[::-1]  # bottom row first, as plotly sums them
    skipped = set(empty)
    layout: dict = {}
    suffixes: dict[tuple[int, int], str] = {}
    annotations = []
    for r in range(rows):
        below = rows - 1 - r  # rows under this one
        y0 = sum(heights[:below]) + below * v_space
        y_domain = [max(0.0, y0), min(1.0, y0 + heights[below])]
        for c in range(cols):
            if (r + 1, c + 1) in skipped:
                continue
            x0 = sum(widths[:c]) + c * h_space
            x_domain = [max(0.0, x0), min(1.0, x0 + widths[c])]
            n = len(suffixes) + 1
            suffix = "" if n == 1 else str(n)
            suffixes[(r + 1, c + 1)] = suffix
            layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": x_domain}
            layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": y_domain}
            if n <= len(titles) and titles[n - 1]:
                annotations.append({"font": {"size": title_size}, "showarrow": False, "text": titles[n - 1],
                                    "x": sum(x_domain) / 2.0, "xanchor": "center", "xref": "paper",
                                    "y": y_domain[1], "yanchor": "bottom", "yref": "paper"})
    layout["annotations"] = annotations
    return Grid(layout, suffixes)

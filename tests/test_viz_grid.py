"""The hand-made subplot grid against plotly's own ``make_subplots``, for every grid the app draws."""

from __future__ import annotations

import pytest
from plotly.subplots import make_subplots

from bertdemo.viz.grid import grid

CASES = [  # (rows, cols, keyword arguments shared by both, empty cells)
    (5, 1, dict(vertical_spacing=0.06), ()),                                     # embeddings
    (5, 3, dict(vertical_spacing=0.32 / 5, horizontal_spacing=0.06), ()),         # the layer's 15 steps
    (2, 4, dict(row_heights=[0.1, 0.9], vertical_spacing=0.14, horizontal_spacing=0.05,
                column_widths=[0.3, 0.3, 0.2, 0.2]), ((1, 3), (1, 4))),           # the neuron view
    (1, 2, dict(column_widths=[0.62, 0.38], horizontal_spacing=0.08), ()),        # the logit lens
    (3, 1, dict(row_heights=[140, 220, 100], vertical_spacing=0.1), ()),          # stacked bar charts
    (2, 3, {}, ()),                                                               # plotly's default spacing
]


@pytest.mark.parametrize("rows, cols, kwargs, empty", CASES)
def test_grid_matches_make_subplots(rows, cols, kwargs, empty):
    titles = [f"panel {i}" for i in range(rows * cols - len(empty))]
    titles[1] = ""  # a panel without a title
    specs = [[None if (r + 1, c + 1) in empty else {} for c in range(cols)] for r in range(rows)]
    theirs = make_subplots(rows=rows, cols=cols, subplot_titles=titles, specs=specs, **kwargs).to_plotly_json()["layout"]
    ours = grid(rows, cols, titles, empty=empty, **kwargs)
    axis_names = sorted(k for k in theirs if k.startswith(("xaxis", "yaxis")))
    assert sorted(k for k in ours.layout if k != "annotations") == axis_names
    for name in axis_names:
        assert ours.layout[name]["anchor"] == theirs[name]["anchor"]
        assert ours.layout[name]["domain"] == pytest.approx(list(theirs[name]["domain"]), abs=1e-12)
    assert len(ours.layout["annotations"]) == len(theirs["annotations"]) == len(titles) - 1
    for a, b in zip(ours.layout["annotations"], theirs["annotations"]):
        assert (a["text"], a["xanchor"], a["yanchor"], a["showarrow"]) == (b["text"], b["xanchor"], b["yanchor"], False)
        assert (a["x"], a["y"]) == pytest.approx((b["x"], b["y"]), abs=1e-12)


def test_panels_are_numbered_in_reading_order_skipping_empty_cells():
    g = grid(2, 4, ["a", "b", "c", "d", "e", "f"], empty=[(1, 3), (1, 4)])
    assert g.on(1, 1) == {"xaxis": "x", "yaxis": "y"}
    assert g.on(1, 2) == {"xaxis": "x2", "yaxis": "y2"}
    assert g.on(2, 1) == {"xaxis": "x3", "yaxis": "y3"}
    assert g.on(2, 4) == {"xaxis": "x6", "yaxis": "y6"}
    assert [a["text"] for a in g.layout["annotations"]] == ["a", "b", "c", "d", "e", "f"]
    assert g.yaxes(col=3) == [g.layout["yaxis5"]]
    with pytest.raises(KeyError):
        g.on(1, 3)

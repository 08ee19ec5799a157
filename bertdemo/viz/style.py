"""The look shared by the app's plotly figures, kept small: what a figure sends is its numbers.

Plotly's ``plotly_white`` template goes over the wire with every figure (about 6.5 KB of defaults
for 3-D scenes, maps and polar axes no view here draws). :data:`TEMPLATE` keeps the part of it
these 2-D heatmaps, bars and lines use, so they look the same at a fraction of the size.
"""

from __future__ import annotations

import functools
import math

import plotly.colors
import plotly.graph_objects as go

CHAR_PX = 7.5  # the widest average character of plotly's 12 px tick font, with room for wide letters
COLORBAR_PX = 104  # right of the plot: a colorbar at its edge and tick numbers of up to 7 characters


def labels_px(labels: list[str]) -> int:
    """The width of the longest of ``labels`` in plotly's 12 px tick font.

    Figures set their margins from it instead of plotly's ``automargin``: plotly measures every
    label, and when the margins must grow it lays the whole figure out a second time.
    """
    return math.ceil(CHAR_PX * max((len(label) for label in labels), default=1))


_GRID = "#EBF0F8"
_AXIS = dict(gridcolor=_GRID, linecolor=_GRID, zerolinecolor=_GRID, ticks="", automargin=True, zerolinewidth=2,
             title=dict(standoff=15))

TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(color="#2a3f5f"), paper_bgcolor="white", plot_bgcolor="white", hovermode="closest",
        hoverlabel=dict(align="left"), xaxis=_AXIS, yaxis=_AXIS, title=dict(x=0.05),
        colorway=["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3"],
        shapedefaults=dict(line=dict(color="#2a3f5f")),
    ),
    data=dict(
        heatmap=[go.Heatmap(colorbar=dict(outlinewidth=0, ticks=""))],
        bar=[go.Bar(marker=dict(line=dict(color="white", width=0.5)))],
    ),
)


def unchecked_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain dicts in plotly's canonical form (a title as ``{"text": ...}``, a colorscale as its
    list of stops), built without plotly's per-property validation, which copies and checks :data:`TEMPLATE`
    at every figure: ~0.4 ms instead of ~4.5 for an attention heatmap, three of them a click. Every figure built
    this way is checked in the tests: validated again, it must come out the same (``tests.helpers
    .assert_as_validated``, in ``tests/test_plots.py`` and ``tests/test_inside.py``)."""
    return go.Figure(data=data, layout=layout, _validate=False)


def colorscale(name: str) -> list[list]:
    """Plotly's named colorscale as its list of stops, the form its validation gives a name (a new list: the
    stops are read once per name, ~0.6 ms each, several times a click)."""
    return [list(stop) for stop in _stops(name)]


@functools.lru_cache(maxsize=32)
def _stops(name: str) -> tuple[tuple, ...]:
    return tuple(tuple(stop) for stop in plotly.colors.get_colorscale(name))


"""Pure drawing of attention: one view as a plotly heatmap, every layer x head as an overview image,
and the line of text under the heatmap."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from PIL import Image, ImageDraw

from bertdemo.explore.attention import AttentionResult, AttentionView
from bertdemo.viz.style import TEMPLATE, colorscale, labels_px, unchecked_figure

_AXIS_TITLE_PX = 24  # an axis title beside or below the tick labels, with plotly's standoff
_SIN_60 = 0.87  # the column labels are turned 60 degrees: their height is this share of their length
_COLORBAR_PX = 88  # the thin colorbar at the plot's edge and its numbers (0-1: up to 5 characters)

# Viridis anchors, for the overview image (plotly draws the big heatmap itself).
_VIRIDIS = np.array(
    [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=np.float32
)


def attention_heatmap(view: AttentionView) -> go.Figure:
    """Heatmap of one view: rows attend (from) to columns (to), labelled with original positions.

    The figure has no fixed width: it fills its panel (autosize), and its height follows the
    number of rows. Plotly's modebar camera saves it as PNG.
    """
    rows, cols = view.row_labels, view.labels
    # Repeated tokens ("the" twice) stay separate rows: each label carries its original position.
    frm = "%{y}" if view.rows_are_layers else "from %{y}"
    notes = []
    if view.renormalised:
        notes.append("rows renormalised without [CLS]/[SEP]")
    if view.direction != "all":
        notes.append(f"{view.direction}: rows from one sentence, columns of the other")
    title = view.title + (f"<br><sup>{'; '.join(notes)}</sup>" if notes else "")
    weights = np.asarray(view.matrix, dtype=float)
    top = float(np.nanmax(weights)) if np.isfinite(weights).any() else 0.0
    heatmap = dict(
        # colours from 0 to the largest weight (with zmin alone plotly starts the scale at the smallest one)
        type="heatmap", z=view.matrix, x=cols, y=rows, colorscale=colorscale("Viridis"), zmin=0, zmax=top or None,
        hovertemplate=frm + "<br>to %{x}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="weight"), thickness=12, x=1, xanchor="left", xpad=8,  # at the plot's edge
                      **_scale_ticks(top)),
    )
    return unchecked_figure(data=[heatmap], layout=dict(  # canonical form: checked in tests/test_plots.py
        title=dict(text=title, x=0, xref="paper", xanchor="left", font=dict(size=15)),
        xaxis=dict(title=dict(text="attends to"), tickangle=-60, type="category", automargin=False),
        yaxis=dict(
            title=dict(text="layer" if view.rows_are_layers else "token (from)"),
            autorange="reversed", type="category", automargin=False,
        ),
        autosize=True,
        height=min(900, max(340, 22 * len(rows) + 190)),
        # margins that hold the labels, axis titles and colorbar: plotly lays the figure out once
        margin=dict(l=labels_px(rows) + _AXIS_TITLE_PX, r=_COLORBAR_PX, t=80 if notes else 50,
                    b=math.ceil(_SIN_60 * labels_px(cols)) + _AXIS_TITLE_PX + 12),
        template=TEMPLATE,
    ))


def _scale_ticks(top: float) -> dict:
    """The colour bar's ticks: 0, half the largest weight ``top`` and ``top`` (a weight reads off the bar at a
    glance; plotly measures each tick label at every draw, so three cost less than its default six or so)."""
    values = [0.0, top / 2, top] if top > 0 else [0.0]
    return dict(tickmode="array", tickvals=values, ticktext=[f"{v:.2f}" for v in values])


@dataclass
class OverviewGeometry:
    """Where each layer x head cell lies in the overview image, for mapping clicks back."""

    n_layers: int
    n_heads: int
    cell: int = 56
    gap: int = 4
    left: int = 34
    top: int = 22

    @property
    def size(self) -> tuple[int, int]:
        return (
            self.left + self.n_heads * (self.cell + self.gap),
            self.top + self.n_layers * (self.cell + self.gap),
        )

    def cell_at(self, x: int, y: int) -> tuple[int, int] | None:
        """(layer, head) under pixel (x, y), or None in the margins."""
        col, row = (x - self.left) // (self.cell + self.gap), (y - self.top) // (self.cell + self.gap)
        if x < self.left or y < self.top or not (0 <= row < self.n_layers and 0 <= col < self.n_heads):
            return None
        return int(row), int(col)


def _colorize(m: np.ndarray) -> np.ndarray:
    """Weights already scaled to 0..1 -> (..., 3) uint8 viridis."""
    v = m * (len(_VIRIDIS) - 1)
    lo = np.floor(v).astype(int).clip(0, len(_VIRIDIS) - 2)
    frac = (v - lo)[..., None]
    return (_VIRIDIS[lo] * (1 - frac) + _VIRIDIS[lo + 1] * frac).astype(np.uint8)


def overview_pixels(matrices: np.ndarray) -> np.ndarray:
    """A grid of small heatmaps, one per layer (rows) x head (columns), like bertviz's model view, as an
    (height, width) uint8 array of :data:`OVERVIEW_PALETTE` indices with no head selected (draw it once per
    input; ``OVERVIEW_PALETTE[pixels]`` is its RGB). Each head's map is scaled by its own largest weight."""
    n_layers, n_heads, t, _ = matrices.shape
    geo = OverviewGeometry(n_layers, n_heads)
    pixels = _labelled_frame(n_layers, n_heads).copy()
    idx = (np.arange(geo.cell) * t // geo.cell).clip(0, t - 1)  # nearest-neighbour upscaling
    shown, where = np.unique(idx, return_inverse=True)  # the rows/columns a cell shows, and where each pixel's is
    cells = matrices[:, :, shown][:, :, :, shown]
    peak = np.maximum(cells.max(axis=(-2, -1), keepdims=True), 1e-9)
    levels = np.rint(np.clip(cells / peak, 0, 1) * (_LEVELS - 1)).astype(np.uint8)  # coloured before upscaling
    step = geo.cell + geo.gap
    grid = np.full((n_layers, step, n_heads, step), _WHITE, dtype=np.uint8)
    grid[:, :geo.cell, :, :geo.cell] = levels[:, :, where][:, :, :, where].transpose(0, 2, 1, 3)
    pixels[geo.top:, geo.left:] = grid.reshape(n_layers * step, n_heads * step)
    return pixels


@functools.lru_cache(maxsize=8)
def _labelled_frame(n_layers: int, n_heads: int) -> np.ndarray:
    """The overview's white frame with its L0… and H0… labels, for a model of this shape (read-only: drawn once
    per shape, ~6 ms of each click's before)."""
    geo = OverviewGeometry(n_layers, n_heads)
    img = _paletted(np.full(geo.size[::-1], _WHITE, dtype=np.uint8))
    draw = ImageDraw.Draw(img)
    for layer in range(n_layers):
        draw.text((2, geo.top + layer * (geo.cell + geo.gap) + geo.cell // 2 - 6), f"L{layer}", fill=_BLACK)
    for head in range(n_heads):
        draw.text((geo.left + head * (geo.cell + geo.gap) + geo.cell // 2 - 8, geo.top - 16), f"H{head}", fill=_BLACK)
    frame = np.asarray(img).copy()
    frame.setflags(write=False)
    return frame


def _overview_palette() -> np.ndarray:
    """(256, 3) uint8: viridis in :data:`_LEVELS` steps, then white, black and the selection's red."""
    rgb = _colorize(np.linspace(0.0, 1.0, _LEVELS))
    palette = np.vstack([rgb, [[255, 255, 255], [0, 0, 0], [0xEF, 0x44, 0x44]]]).astype(np.uint8)
    palette.setflags(write=False)
    return palette


_LEVELS = 253  # viridis steps of the overview's palette: one byte a pixel (its PNG is written 4x faster than RGB)
_WHITE, _BLACK, _RED = _LEVELS, _LEVELS + 1, _LEVELS + 2
OVERVIEW_PALETTE = _overview_palette()


def _paletted(indices: np.ndarray) -> Image.Image:
    img = Image.fromarray(indices, "P")
    img.putpalette(OVERVIEW_PALETTE.tobytes())
    return img


def with_selection(pixels: np.ndarray, selected: tuple[int, int] | None) -> Image.Image:
    """The overview (:func:`overview_pixels`) as a paletted image, with a red frame around the selected
    (layer, head)."""
    geo = OverviewGeometry(0, 0)  # the cell size and margins (the grid's size is the image's)
    img = _paletted(pixels)
    if selected is not None:
        layer, head = selected
        x, y = geo.left + head * (geo.cell + geo.gap), geo.top + layer * (geo.cell + geo.gap)
        ImageDraw.Draw(img).rectangle([x - 2, y - 2, x + geo.cell + 1, y + geo.cell + 1], outline=_RED, width=3)
    return img


def attention_overview(matrices: np.ndarray, selected: tuple[int, int] | None = None) -> Image.Image:
    """A grid of small heatmaps, one per layer (rows) x head (columns), like bertviz's model view."""
    return with_selection(overview_pixels(matrices), selected)


def attention_info(result: AttentionResult, view: AttentionView, hide: bool) -> str:
    """The line under the heatmap: sizes, the (B, H, S, S) shape, what a row sums to, what hiding removed."""
    text = (
        f"{len(result.tokens)} tokens · {result.num_layers} layers × {result.num_heads} heads · "
        f"model {result.model_name}. Each layer's attention is softmax(Q·Kᵀ/√d_h) of shape (B, H, S, S) = "
        f"(1, {result.num_heads}, {len(result.tokens)}, {len(result.tokens)}). "
        f"Each row shows where one token looks; rows sum to 1"
        + (" over the tokens shown (renormalised after hiding [CLS]/[SEP])." if view.renormalised else ".")
    )
    if result.causal:
        text += ("  \nA **left-to-right** model: the causal mask lets each token look only at itself and the tokens "
                 "before it, so every weight above the diagonal is exactly 0 (lower-triangular).")
    if hide and not view.renormalised:
        text += " With [CLS]/[SEP] hidden and renormalising off, rows sum to less than 1."
    if view.removed:
        text += (f"  \nHiding [CLS]/[SEP] removed **{view.removed:.0%}** of each shown row's weight on average"
                 " in this view. Token labels keep their original positions.")
    if view.direction != "all":
        text += (f"  \n{view.direction}: rows are the tokens of sentence {view.direction[0]}, columns those of "
                 f"sentence {view.direction[-1]}; a row sums to the share of its attention that crosses over.")
    return text

"""Pure drawing: fill-mask predictions and attention results -> plotly figures and an overview image."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from PIL import Image, ImageDraw

from bertdemo.attention import AttentionView
from bertdemo.fill_mask import MaskPrediction

_BAR_COLOR = "#4f46e5"
_TARGET_COLOR = "#f59e0b"
# Viridis anchors, for the overview image (plotly draws the big heatmap itself).
_VIRIDIS = np.array(
    [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=np.float32
)


def _bar_data(pred: MaskPrediction) -> tuple[list[str], list[float], list[str]]:
    """Labels, probabilities and colours: the top-k, then scored targets outside it (amber)."""
    labels = [c.token for c in pred.candidates]
    probs = [c.prob for c in pred.candidates]
    colors = [_BAR_COLOR] * len(labels)
    for t in pred.targets:
        if t.prob is not None and t.word.lower() not in {label.lower() for label in labels}:
            labels.append(f"{t.word} (target, rank {t.rank})")
            probs.append(t.prob)
            colors.append(_TARGET_COLOR)
    return labels, probs, colors


def fill_mask_figure(masks: list[MaskPrediction]) -> go.Figure:
    """One horizontal bar chart per mask (stacked), candidates by probability with the highest on top."""
    titles = [f"[MASK] #{m.index + 1} → {m.candidates[0].text}" for m in masks]
    rows = [_bar_data(m) for m in masks]
    heights = [28 * len(labels) + 40 for labels, _, _ in rows]
    fig = make_subplots(
        rows=len(masks), cols=1, subplot_titles=titles, vertical_spacing=min(0.12, 0.3 / len(masks)),
        row_heights=heights,
    )
    for i, (labels, probs, colors) in enumerate(rows, start=1):
        fig.add_trace(
            go.Bar(
                x=probs,
                y=labels,
                orientation="h",
                marker_color=colors,
                text=[f"{p:.1%}" if p >= 0.001 else f"{p:.1e}" for p in probs],
                textposition="outside",
                cliponaxis=False,
                hovertemplate="%{y}: %{x:.4f}<extra></extra>",
                showlegend=False,
            ),
            row=i,
            col=1,
        )
        fig.update_yaxes(autorange="reversed", type="category", row=i, col=1)
        fig.update_xaxes(range=[0, min(1.0, max(probs) * 1.3 + 0.02)], row=i, col=1,
                         tickformat=".0%" if max(probs) > 0.1 else ".1%")
    fig.update_layout(
        height=sum(heights) + 60 * len(masks) + 40,
        margin=dict(l=10, r=30, t=50, b=30),
        template="plotly_white",
    )
    return fig


def attention_heatmap(view: AttentionView) -> go.Figure:
    """Heatmap of one view: rows attend (from) to columns (to), tokens on both axes."""
    n = len(view.tokens)
    # Repeated tokens ("the" twice) must stay separate rows: label with the position.
    labels = [f"{i}: {t}" for i, t in enumerate(view.tokens)]
    fig = go.Figure(
        go.Heatmap(
            z=view.matrix,
            x=labels,
            y=labels,
            colorscale="Viridis",
            zmin=0,
            customdata=np.array([[[labels[i], labels[j]] for j in range(n)] for i in range(n)], dtype=object),
            hovertemplate="from %{customdata[0]}<br>to %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
            colorbar=dict(title="weight"),
        )
    )
    note = " (rows renormalised without [CLS]/[SEP])" if view.renormalised else ""
    side = min(900, max(420, 22 * n + 160))
    fig.update_layout(
        title=view.title + note,
        xaxis=dict(title="attends to", tickangle=-60, type="category"),
        yaxis=dict(title="token (from)", autorange="reversed", type="category"),
        width=side + 80,
        height=side,
        margin=dict(l=10, r=10, t=50, b=10),
        template="plotly_white",
    )
    return fig


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
    """(S, S) weights -> (S, S, 3) uint8 viridis, each head scaled by its own maximum."""
    v = m / max(float(m.max()), 1e-9) * (len(_VIRIDIS) - 1)
    lo = np.floor(v).astype(int).clip(0, len(_VIRIDIS) - 2)
    frac = (v - lo)[..., None]
    return (_VIRIDIS[lo] * (1 - frac) + _VIRIDIS[lo + 1] * frac).astype(np.uint8)


def attention_overview(matrices: np.ndarray, selected: tuple[int, int] | None = None) -> Image.Image:
    """A grid of small heatmaps, one per layer (rows) x head (columns), like bertviz's model view."""
    n_layers, n_heads, t, _ = matrices.shape
    geo = OverviewGeometry(n_layers, n_heads)
    img = Image.new("RGB", geo.size, "white")
    draw = ImageDraw.Draw(img)
    idx = (np.arange(geo.cell) * t // geo.cell).clip(0, t - 1)  # nearest-neighbour upscaling
    for layer in range(n_layers):
        y = geo.top + layer * (geo.cell + geo.gap)
        draw.text((2, y + geo.cell // 2 - 6), f"L{layer}", fill="black")
        for head in range(n_heads):
            x = geo.left + head * (geo.cell + geo.gap)
            if layer == 0:
                draw.text((x + geo.cell // 2 - 8, geo.top - 16), f"H{head}", fill="black")
            cell = _colorize(matrices[layer, head][np.ix_(idx, idx)])
            img.paste(Image.fromarray(cell, "RGB"), (x, y))
            if selected == (layer, head):
                draw.rectangle([x - 2, y - 2, x + geo.cell + 1, y + geo.cell + 1], outline="#ef4444", width=3)
    return img

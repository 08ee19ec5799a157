"""Pure drawing of fill-mask predictions: one horizontal bar chart per [MASK]."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertdemo.explore.fill_mask import MaskPrediction

_BAR_COLOR = "#4f46e5"
_TARGET_COLOR = "#f59e0b"


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

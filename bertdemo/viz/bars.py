"""Pure drawing of fill-mask predictions: one horizontal bar chart per [MASK] (and per model), the
filled sentence, the target-word table and the raw predictions as JSON."""

from __future__ import annotations

import math
import re
from functools import lru_cache

import plotly.graph_objects as go

from bertdemo.explore.fill_mask import Candidate, FillMaskResult, MaskPrediction
from bertdemo.viz.grid import grid
from bertdemo.viz.style import TEMPLATE
from bertdemo.viz.text import literal, md_bold, md_table, plotly_text

_BAR_COLOR = "#4f46e5"
_TARGET_COLOR = "#f59e0b"  # a word the user named: amber, inside or outside the top-k
_ROW_PX = 28
_TWO_LINE_GAP_PX = 78  # an axis's tick labels (~20 px) and a two-line panel title at 16 px (~2 x 20), with room


def percent(p: float) -> str:
    """A probability in one unit and one rule, percent, never in e-notation: from 1 % one decimal
    ("12.3%", "1.0%"), below it two significant digits ("0.50%", "0.042%", "0.000019%")."""
    if p * 100 < 1e-9:
        return "<0.000000001%"
    if p < 0.01:
        digits = 1 - math.floor(math.log10(p * 100))  # two significant digits
        text = f"{p * 100:.{digits}f}"
        if float(text) < 1:  # (0.00999 rounds up to 1 %: one decimal then)
            return text + "%"
    return f"{p:.1%}"


def filled_markdown(result: FillMaskResult) -> str:
    """The input with each mask replaced by its top choice in bold; sentence B follows after " / ".
    The visitor's text (and the model's words) are shown as typed, never read as markup (:func:`literal`)."""
    fills = iter(md_bold(literal(word)) for word in result.filled)
    pattern = re.compile(re.escape(result.mask_token))

    def fill(text: str) -> str:
        first, *rest = pattern.split(text)  # the text between masks
        return literal(first) + "".join(next(fills) + literal(part) for part in rest)

    filled = fill(result.text)
    if result.text_pair:
        filled += " / " + fill(result.text_pair)
    return filled


TARGETS_FOOTNOTE = (
    "Rank among the whole vocabulary. PLL: a word of several pieces is scored by pseudo-log-likelihood "
    "(Salazar et al. 2020): its pieces replace the mask, each is masked in turn and the log-probabilities "
    "are summed; shown as exp(PLL)."
)


def targets_markdown(results: list[tuple[str, FillMaskResult]]) -> str:
    """A table of the requested target words at each mask (or why one cannot be scored), per named model."""
    if not results or not results[0][1].masks[0].targets:
        return ""
    two = len(results) > 1
    headers = ["model"] * two + ["mask", "word", "pieces", "probability", "rank"]
    rows = []
    for who, result in results:
        for m in result.masks:
            for t in m.targets:
                prob = "—" if t.prob is None else percent(t.prob)
                if t.prob is None:
                    rank = t.message
                else:
                    rank = "PLL" if t.rank is None else f"{t.rank:,}"
                rows.append([who] * two + [f"#{m.index + 1}", t.word, " ".join(t.pieces), prob, rank])
    return md_table(headers, rows) + "\n\n" + TARGETS_FOOTNOTE


def predictions_json(result: FillMaskResult, who: str) -> list[dict]:
    """Every mask's predictions and target scores as plain JSON, labelled with the model ``who``."""
    return [
        {
            "mask": m.index + 1,
            "position": m.position,
            "model": who,
            "predictions": [
                {"token": c.token, "id": c.id, "prob": round(c.prob, 6), **({"pieces": c.pieces} if c.pieces else {})}
                for c in m.candidates
            ],
            "targets": [
                {"word": t.word, "prob": t.prob, "rank": t.rank, "pieces": t.pieces, "message": t.message}
                for t in m.targets
            ],
        }
        for m in result.masks
    ]


def _label(c: Candidate) -> str:
    return f"{c.text} ({' '.join(c.pieces)})" if len(c.pieces) > 1 else c.token


def _bar_data(pred: MaskPrediction) -> tuple[list[str], list[float], list[str]]:
    """Labels, probabilities and colours: the top-k (targets among them amber, marked ◀ target),
    then scored targets outside it (amber, with their rank, or "PLL" for words of several pieces)."""
    wanted = {t.word.lower() for t in pred.targets}
    labels, probs, colors = [], [], []
    shown = set()
    for c in pred.candidates:
        hit = c.text.lower() in wanted or c.token.lower() in wanted
        labels.append(_label(c) + (" ◀ target" if hit else ""))
        probs.append(c.prob)
        colors.append(_TARGET_COLOR if hit else _BAR_COLOR)
        if hit:
            shown |= {c.text.lower(), c.token.lower()}
    for t in pred.targets:
        if t.prob is not None and t.word.lower() not in shown:
            how = f"rank {t.rank:,}" if t.rank is not None else "PLL"
            labels.append(f"{plotly_text(t.word)} ({how})")  # a word the visitor typed
            probs.append(t.prob)
            colors.append(_TARGET_COLOR)
            shown.add(t.word.lower())
    return labels, probs, colors


def fill_mask_figure(masks: list[MaskPrediction], model_names: list[str] | None = None,
                     more: list[list[MaskPrediction]] | None = None) -> go.Figure:
    """One horizontal bar chart per mask (stacked), candidates by probability with the highest on top.

    ``more``: the same masks predicted by other models (``model_names`` names all of them, this
    one first); each mask then gets one chart per model, one under the other.

    The stacked charts are laid out by :func:`~bertdemo.viz.grid.grid` (axis domains and title
    annotations, as ``make_subplots`` would) and the figure is built without plotly's property validation:
    both cost tens of milliseconds per answer, more than the prediction itself on a small model.
    """
    runs = [masks] + list(more or [])
    charts = []  # (title, mask) in display order: mask by mask, model by model
    for i in range(len(masks)):
        for r, run in enumerate(runs):
            m = run[i]
            who = f"<br>{model_names[r]}" if model_names and len(runs) > 1 else ""  # the model: a line of its own
            charts.append((f"[MASK] #{m.index + 1} → {m.candidates[0].text}{who}", m))
    rows = [_bar_data(m) for _, m in charts]
    heights = [_ROW_PX * len(labels) + 40 for labels, _, _ in rows]
    height = sum(heights) + 60 * len(charts) + 40
    margin = {"l": 10, "r": 20, "t": 50, "b": 30}
    spacing = min(0.12, 0.3 / len(charts))
    if len(runs) > 1:  # between two charts: the upper one's tick labels, then the lower one's two title lines
        spacing = _TWO_LINE_GAP_PX / (height - margin["t"] - margin["b"])
    panels = grid(len(charts), 1, [title for title, _ in charts], row_heights=heights, vertical_spacing=spacing)
    data = []
    layout: dict = {
        **panels.layout,
        "height": height,
        "margin": margin,
        "template": _template(),
    }
    # one mask's charts (one per model) share their scale: a 1.3 % bar was drawn as long as the other model's 2.1 %
    per_mask = len(runs)  # charts come mask by mask, model by model
    mask_tops = [max(max(probs, default=0.0) for _, probs, _ in rows[i:i + per_mask])
                 for i in range(0, len(rows), per_mask)]
    for row, (labels, probs, colors) in enumerate(rows, start=1):
        data.append({
            "type": "bar", "x": probs, "y": labels, "orientation": "h", "marker": {"color": colors},
            "text": [percent(p) for p in probs], "textposition": "outside", "cliponaxis": False,
            "hovertemplate": "%{y}: %{text}<extra></extra>", "showlegend": False, **panels.on(row, 1),
        })
        x_axis, y_axis = panels.axes_of(row, 1)  # the layout's own axes (it holds the grid's dicts)
        # room right of the longest bar for its percentage label
        x_axis.update({
            "range": [0, mask_tops[(row - 1) // per_mask] * 1.35 + 1e-9],
            "tickformat": ".2~%", "nticks": 5,  # 0%, 5%, 10% or 0.5%: no ".0" tails
        })
        y_axis.update({"autorange": "reversed", "type": "category", "automargin": True})
    return go.Figure(data=data, layout=layout, _validate=False)


@lru_cache(maxsize=1)
def _template() -> dict:
    """The app's small template (the 2-D part of "plotly_white") as a plain dict (made once)."""
    return TEMPLATE.to_plotly_json()

"""Drawing where bidirectional pays: the shipped twins' held-out loss along their training (a plotly dict) and its
text twin. Torch-free: the Pretrain tab draws it as the page is built, before PyTorch loads."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from bertdemo.viz.text import md_table, plotly_text

if TYPE_CHECKING:
    from bertdemo.models.twin_curve import TwinCurve

MLM_COLOR, LTR_COLOR, LTR_MASKED_COLOR = "#4f46e5", "#dc2626", "#ea580c"  # the twins' colours in every twin view
LANDMARK_COLORS = ("#9ca3af", "#6b7280", "#374151")
STAGE_COLOR = "#047857"  # the line where a later stage of training began
SCHEDULE_COLOR = "#0369a1"  # the line where the runs' learning rate was warmed up again


def loss_text(v: float) -> str:
    """A loss as the tables show it: two decimals, "—" for none."""
    return "—" if v is None or not math.isfinite(v) else f"{v:.2f}"


def _twin_lines(curve: TwinCurve) -> tuple[tuple[str, list[float], str, str], ...]:
    """The three twins' lines, in the legend's order: (run kind, held-out loss at each point, colour, what it
    predicts)."""
    controlled, paper = curve.pairs["controlled"], curve.pairs["paper"]
    return ((controlled.mlm, controlled.mlm_loss, MLM_COLOR, "masked LM: both sides, 15 % of the words"),
            (controlled.ltr, controlled.ltr_loss, LTR_MASKED_COLOR, "left-to-right: the same words"),
            (paper.ltr, paper.ltr_loss, LTR_COLOR, "left-to-right: every next word"))


def _landmark_traces(landmarks: dict[str, float], ends: list[int]) -> list[dict]:
    """Each landmark (a guesser's loss on the same words) as a dashed level line from ``ends[0]`` to ``ends[1]``."""
    return [{"type": "scatter", "mode": "lines", "x": ends, "y": [round(value, 4)] * 2,
             "name": plotly_text(f"landmark: {name}"), "hovertemplate": f"{plotly_text(name)}: {value:.2f} nats<extra></extra>",
             "line": {"color": LANDMARK_COLORS[k % len(LANDMARK_COLORS)], "width": 1.5, "dash": "dash"}}
            for k, (name, value) in enumerate(landmarks.items())]


def _vertical_marks(marks: list[tuple[float, str, str, str]], log_x: bool) -> tuple[list[dict], list[dict]]:
    """Each mark (its x, its text, colour, the text's anchor) as a dotted line across the plot, with its text above it:
    (shapes, annotations). On a log x axis an annotation's x is the log of the value."""
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": at, "x1": at, "y0": 0, "y1": 1,
               "line": {"color": color, "dash": "dot", "width": 1.5}} for at, _, color, _ in marks]
    notes = [{"text": text, "x": math.log10(at) if log_x else at, "xref": "x", "y": 1, "yref": "paper",
              "yanchor": "bottom", "xanchor": anchor, "showarrow": False, "font": {"size": 11, "color": color}}
             for at, text, color, anchor in marks]
    return shapes, notes


def curve_spec(curve: TwinCurve) -> dict:
    """Held-out loss (nats per word, the same words for all three models) against tokens read, log x: the masked
    twin, both left-to-right twins, the landmarks dashed, each pair's crossover marked, and a dotted line where a
    later stage began (the first) and where each new learning-rate schedule began."""
    from bertdemo.models import twin_curve
    from bertdemo.models.twins import TWIN_NAMES

    controlled, paper = curve.pairs["controlled"], curve.pairs["paper"]
    data = [{"type": "scatter", "mode": "lines+markers", "x": controlled.tokens, "y": [round(v, 4) for v in loss],
             "name": f"{plotly_text(TWIN_NAMES[kind])}<br>({plotly_text(what)})", "line": {"color": color, "width": 3},
             "hovertemplate": "%{x:,} tokens: %{y:.2f} nats<extra></extra>"} for kind, loss, color, what in _twin_lines(curve)]
    data += _landmark_traces(controlled.landmarks, [controlled.tokens[0], controlled.tokens[-1]])
    crossing = [(c, color) for c, color in ((controlled, LTR_MASKED_COLOR), (paper, LTR_COLOR))
                if c.crossover.get("crosses") and not c.crossover.get("ahead_from_first")]
    marks = [(c.crossover["tokens"], f"{c.pair}: crossing", color, "center") for c, color in crossing]
    # the first later stage alone (a further one stands on top of it on a log axis: the close up marks each), its
    # text left of the line: the stage begins near the axis's end
    marks += [(s["from_tokens"], "everyday text added", STAGE_COLOR, "right") for s in twin_curve.later_stages(curve)[:1]]
    # a new learning-rate schedule, its text left of the line (it falls late on the axis)
    marks += [(began, twin_curve.schedule_label(number), SCHEDULE_COLOR, "right")
              for number, (began, _until) in enumerate(curve.restarts, start=2)]
    shapes, notes = _vertical_marks(marks, log_x=True)
    return {"data": data, "layout": {
        "title": {"text": "Held-out loss along training: the same words for every model"},
        "xaxis": {"title": {"text": "tokens read (log scale)"}, "type": "log"},
        "yaxis": {"title": {"text": "loss (nats per word, lower is better)"}},
        "shapes": shapes, "annotations": notes, "height": 480, "margin": {"l": 60, "r": 20, "t": 80, "b": 60},
        "legend": {"orientation": "h", "y": -0.3}}}


def stage_spec(curve: TwinCurve) -> dict | None:
    """The later stages close up (None for a curve of one build): on the log-x curve their points stand in a sliver at
    the right edge. Here the same held-out losses against the tokens read since the first later stage began, a linear
    x from its first point (the build's last), with the landmarks dashed and a dotted line where each further stage
    began."""
    from bertdemo.models import twin_curve
    from bertdemo.models.twins import TWIN_NAMES

    stages = twin_curve.later_stages(curve)
    if not stages:
        return None
    start = int(stages[0]["from_tokens"])
    controlled = curve.pairs["controlled"]
    kept = [i for i, t in enumerate(controlled.tokens) if t >= start]
    x = [controlled.tokens[i] - start for i in kept]
    data = [{"type": "scatter", "mode": "lines+markers", "x": x, "y": [round(loss[i], 4) for i in kept],
             "name": plotly_text(TWIN_NAMES[kind]), "line": {"color": color, "width": 3},
             "hovertemplate": "%{x:,} tokens into the later stages: %{y:.2f} nats<extra></extra>"}
            for kind, loss, color, _ in _twin_lines(curve)]
    data += _landmark_traces(controlled.landmarks, [x[0], x[-1]])
    shapes, notes = _vertical_marks([(int(s["from_tokens"]) - start, f"stage {number} began", STAGE_COLOR, "left")
                                     for number, s in enumerate(stages, start=2)][1:], log_x=False)
    what = "the stage" if len(stages) == 1 else f"the {len(stages)} later stages"
    return {"data": data, "layout": {
        "title": {"text": f"Close up: {what} from {twin_curve.millions(start)} tokens (linear scale)"},
        "xaxis": {"title": {"text": "tokens read since the build's last checkpoint"}, "rangemode": "tozero",
                  "tickformat": "~s"},
        "yaxis": {"title": {"text": "loss (nats per word)"}},
        "shapes": shapes, "annotations": notes,
        "height": 400, "margin": {"l": 60, "r": 20, "t": 60, "b": 60}, "legend": {"orientation": "h", "y": -0.3}}}


def curve_markdown(curve: TwinCurve) -> str:
    """The curve's text twin: each pair's crossover, positions, landmarks and cloze in words, then the numbers."""
    from bertdemo.models import twin_curve
    from bertdemo.models.twins import PAIR_NOTES, TWIN_NAMES

    parts = []
    for pair, c in curve.pairs.items():
        parts.append(f"**{pair.capitalize()} pair** — {PAIR_NOTES[pair]}.\n\n"
                     f"- **Where the lines cross:** {twin_curve.crossover_sentence(c)}\n"
                     f"- **By position:** {twin_curve.position_sentence(c)}\n"
                     f"- **Against the guessers:** {twin_curve.landmark_sentence(c)}\n"
                     f"- **Cloze:** {twin_curve.cloze_sentence(curve, pair)}"
                     + (f"\n- **Asked as a text's start:** {fair}" if (fair := twin_curve.text_start_sentence(curve, pair))
                        else ""))
    asked = twin_curve.text_start_note(curve)
    if asked:
        parts.insert(0, asked)
    stages = twin_curve.stage_sentence(curve)
    if stages:
        parts.insert(0, stages)
    schedules = twin_curve.schedule_sentence(curve)
    if schedules:
        parts.insert(0, schedules)
    controlled, paper = curve.pairs["controlled"], curve.pairs["paper"]
    rows = [[f"{t:,}", loss_text(m), loss_text(lm), loss_text(la)]
            for t, m, lm, la in zip(controlled.tokens, controlled.mlm_loss, controlled.ltr_loss, paper.ltr_loss)]
    table = md_table(["tokens read", TWIN_NAMES["mlm"], TWIN_NAMES["ltr-masked"], TWIN_NAMES["ltr"]], rows)
    return ("\n\n".join(parts) + f"\n\n<details><summary>The curve as a table (nats per word on the same "
            f"{controlled.questions:,} held-out words)</summary>\n\n{table}\n\n</details>")

"""Pure drawing for pretraining runs: a snapshot (and earlier runs to compare) -> curves, status, probe table.

The curves follow what TensorBoard users expect: a smoothing slider (debiased EMA, the raw line
faint beside it), a log-y toggle, step / tokens seen / training time on the x axis, one colour per
run. The loss chart carries the landmarks (uniform guess: where every run starts; word frequency;
the word before; both neighbours) as labelled lines, and markers where the run first went below each
and where each probe's word entered the top 5; a run with a locality bias on attention draws its strength
there too (the "attention help", right axis). Figures are built as plotly dicts of downsampled,
rounded numbers (:mod:`bertdemo.viz.downsample`): a live page redraws them every few seconds.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from itertools import pairwise

import plotly.graph_objects as go

from bertdemo.pretrain.budget import clock_text
from bertdemo.pretrain.config import VOCAB_SIZE
from bertdemo.pretrain.landmarks import LANDMARK_LABELS, LANDMARKS
from bertdemo.pretrain.measured import (
    CORPUS_DOCUMENTS,
    CORPUS_WORDS,
    DEFAULT_RUN,
    FACT_PHRASE,
    FACT_PHRASE_COUNT,
    LONGER_RUN,
    MEASURED_ON,
    PROBE,
    WORD_COUNT,
    MeasuredRun,
)
from bertdemo.pretrain.metrics import RunSnapshot, has_values, latest
from bertdemo.pretrain.probes import IN_TOP, PLATEAU_TEXT
from bertdemo.runs.status import debiased_ema
from bertdemo.viz.downsample import MAX_DRAWN_POINTS, downsample, rounded
from bertdemo.viz.text import html_code, literal, plotly_text

UNIFORM_LOSS = math.log(VOCAB_SIZE)  # 10.33: cross-entropy of a uniform guess over the vocabulary
X_AXES = {"step": "step", "tokens": "tokens seen", "time": "training time (s)"}
EMPTY_X_TOP = {"step": 100, "tokens": 100_000, "time": 60}  # an empty chart's x axis: 0 … this, before the first step
MAX_PROBE_POINTS = 100  # drawn per probe (seven probes share one chart)
_RUN_COLOURS = ["#4f46e5", "#f59e0b", "#10b981", "#ef4444", "#0ea5e9", "#a855f7", "#84cc16", "#ec4899"]
HELP_COLOUR = "#0d9488"  # the locality bias ("attention help") on the loss chart's right axis
HELP_AXIS = "y6"


@dataclass
class CurveRun:
    """One run's history to draw: the live run or an earlier one picked to compare."""

    label: str
    snap: RunSnapshot


def status_markdown(snap: RunSnapshot | None) -> str:
    """What the run is doing, in one or two lines."""
    if snap is None:
        return "No pretraining run yet on this server. Choose a model size and a corpus, then **Start**."
    size = f" ({snap.param_count:,} parameters)" if snap.param_count else ""  # counted once the model is built
    where = f" · {literal(snap.device)}" if snap.device else ""
    head = (f"**{snap.status.upper()}** · run {html_code(snap.run_id)} · {literal(snap.preset)}{size} · "
            f"{html_code(snap.corpus)}{where}")
    if snap.status == "preparing":
        return f"{head}  \n{literal(snap.message or 'Preparing…')} ({snap.prepare_fraction:.0%})"
    body = f"step **{snap.step:,} / {snap.total_steps:,}**"
    if snap.train_loss_smooth:
        body += f" · train loss {snap.train_loss_smooth[-1]:.3f} (smoothed)"
    if snap.eval_loss:
        at = snap.eval_steps[-1] if snap.eval_steps else snap.step
        before = " before training" if at == 0 and snap.step > 0 else ""
        body += (f" · held-out loss ([MASK]-only, 15 %) **{snap.eval_loss[-1]:.3f}** "
                 f"(perplexity {snap.eval_ppl[-1]:,.1f}; evaluated at step {at:,}{before})")
    if snap.mlm_acc:
        body += f" · top-1 {snap.mlm_acc[-1]:.1%}"
    top5, rank, nsp, help_ = (latest(snap.top5_acc), latest(snap.median_rank), latest(snap.nsp_acc),
                              latest(snap.locality_strength))
    if top5 is not None and rank is not None:
        body += f" · top-5 {top5:.1%} · median rank of the true word {rank:,.0f}"
    if nsp is not None:
        body += f" · NSP accuracy {nsp:.1%}"
    if help_ is not None:
        body += f" · attention help (locality bias) {help_:.0%}"
    if snap.tokens_per_s:
        body += f" · {snap.tokens_per_s:,.0f} tokens/s"
    elif snap.active:
        body += " · first steps…"
    body += f" · elapsed {clock_text(snap.elapsed_s)}"
    if snap.active and snap.eta_s:
        spread = (f"{clock_text(snap.eta_low_s)}–{clock_text(snap.eta_high_s)}, "
                  if snap.eta_high_s - snap.eta_low_s >= 1 else "")
        body += f" · ETA {clock_text(snap.eta_s)} ({spread}{snap.eta_basis or 'from this run'})"
    text = f"{head}  \n{body}"
    where = landmark_position(snap)
    if where:
        text += f"  \n{where}"
    if snap.plateau and snap.status in ("running", "paused"):
        text += f"  \n**Plateau: {PLATEAU_TEXT[0].lower()}{PLATEAU_TEXT[1:]}**"
    if snap.message:
        text += f"  \n{'⚠️ ' if snap.status == 'failed' else ''}{literal(snap.message)}"
    if snap.last_checkpoint:
        text += "  \nLatest checkpoint saved (offered in the model list of the other tabs)."
    return text


def landmark_position(snap: RunSnapshot) -> str:
    """Where the latest held-out loss stands among the run's landmarks, in words ("" before both exist)."""
    if not snap.eval_loss or not snap.landmarks:
        return ""
    loss = snap.eval_loss[-1]
    below = [name for name in LANDMARKS if name in snap.landmarks and loss < snap.landmarks[name]]
    if not below:
        return "The held-out loss is still above the uniform guess."
    best = below[-1]
    if best == LANDMARKS[-1]:
        return f"Below every landmark: the model does better than *{LANDMARK_LABELS[best]}*."
    following = LANDMARKS[LANDMARKS.index(best) + 1]
    return (f"The model is past *{LANDMARK_LABELS[best]}*; next line: *{LANDMARK_LABELS[following]}* "
            f"({snap.landmarks[following]:.2f}).")


def _x(snap: RunSnapshot, axis: str, evaluation: bool) -> list:
    if axis == "tokens":
        return snap.eval_tokens if evaluation else snap.tokens
    if axis == "time":
        return snap.eval_wall_s if evaluation else snap.wall_s
    return snap.eval_steps if evaluation else snap.steps


def _num(value: float | None) -> float | int | None:
    """A value as drawn: 4 significant digits, whole numbers as ints (the JSON stays small), None for a
    gap (NaN, infinity)."""
    if value is None or not math.isfinite(value):
        return None
    rounded = float(f"{value:.4g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded


def _line(x: list, y: list, max_points: int = MAX_DRAWN_POINTS, **trace) -> dict:
    """A scatter trace of at most ``max_points`` points (min/max buckets), numbers rounded for drawing."""
    x, y = downsample(x, y, max_points)
    return {"type": "scatter", "x": x if not x or isinstance(x[0], int) else rounded(x), "y": rounded(y), **trace}


def _length_switches(snap: RunSnapshot) -> list[dict]:
    return [e for e in snap.timeline if e.get("kind") == "length"]


def _event_x(event: dict, axis: str):
    return {"tokens": event.get("tokens"), "time": event.get("wall_s")}.get(axis, event.get("step"))


def _loss_at(snap: RunSnapshot, step: int) -> float | None:
    """The held-out loss of the latest evaluation at or before ``step``."""
    index = bisect.bisect_right(snap.eval_steps, step) - 1
    return snap.eval_loss[index] if 0 <= index < len(snap.eval_loss) else None


def _axis_y(value: float, log: bool) -> float:
    """An annotation's y: plotly reads it in log10 units on a log axis (a shape's in data units)."""
    return math.log10(value) if log else value


TOP_ROOM = 64  # px above the plot area: the page's label badge and plotly's toolbar sit there, not on the data
EMPTY_LR_TOP = 1e-3  # the learning-rate axis before a run: 0 … the default peak
# panel -> (x axis, y axis, x domain, y domain, title)
_PANELS = {
    "loss": ("x", "y", (0.0, 1.0), (0.66, 1.0), "Masked-LM loss (a left-to-right run: next-word loss)"),
    "ppl": ("x2", "y2", (0.0, 0.44), (0.36, 0.54), "Held-out perplexity"),
    "acc": ("x3", "y3", (0.56, 1.0), (0.36, 0.54), "Top-1, top-5 (dashed)"),
    "rank": ("x4", "y4", (0.0, 0.44), (0.05, 0.23), "Median rank (up = better)"),
    "lr": ("x5", "y5", (0.56, 1.0), (0.05, 0.23), "Learning rate"),
}


def training_curves_spec(runs: list[CurveRun], smoothing: float = 0.6, log_y: bool = False,
                         x_axis: str = "step", budget: int = MAX_DRAWN_POINTS) -> dict:
    """The curves of one or more runs as a plotly figure dict (``{"data", "layout"}``): the masked-LM loss
    (train raw + smoothed, held-out) with the first run's landmarks and its timeline markers, held-out
    perplexity, top-1 / top-5 accuracy, median rank of the true word, learning rate. Each curve is
    downsampled for drawing to ``budget`` points (compared runs: half; the CSV keeps every point)."""
    if x_axis not in X_AXES:
        raise ValueError(f"x axis must be one of {list(X_AXES)}.")
    if not 0.0 <= smoothing < 1.0:
        raise ValueError("Smoothing must be at least 0 and below 1.")
    data: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    at = {name: {"xaxis": xa, "yaxis": ya} for name, (xa, ya, *_rest) in _PANELS.items()}
    mixed = len({run.snap.objective for run in runs}) > 1  # two objectives: their train losses measure two things
    for i, run in enumerate(runs):
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        s, group = run.snap, f"run{i}"
        max_points = budget if i == 0 else budget // 2  # a compared run is context: half the points
        x_train, x_eval = _x(s, x_axis, False), _x(s, x_axis, True)
        if len(x_train) != len(s.train_loss) or len(x_eval) != len(s.eval_loss):  # older histories lack tokens / time
            x_train, x_eval = s.steps, s.eval_steps
        quiet = dict(legendgroup=group, showlegend=False, mode="lines")
        dots = dict(legendgroup=group, showlegend=False, mode="lines+markers", marker={"size": 4})  # evaluations
        if i == 0 and not mixed:  # the raw train loss of the first run only, faint behind its smoothed line
            data.append(_line(x_train, s.train_loss, max_points, name=f"{run.label}: train (raw)", opacity=0.25,
                              line={"color": colour, "width": 1}, **quiet, **at["loss"]))
        if not mixed:  # a masked LM's train loss (15 % of the words) and a next-word loss share no scale
            data.append(_line(x_train, debiased_ema(s.train_loss, smoothing), max_points, name=f"{run.label}: train",
                              line={"color": colour, "width": 2}, legendgroup=group, mode="lines", **at["loss"]))
        held_out = "held-out, the same words" if mixed else "held-out ([MASK]-only, 15 %)"
        data.append(_line(x_eval, s.eval_loss, max_points, name=f"{run.label}: {held_out}",
                          line={"color": colour, "width": 2, "dash": "dot"}, legendgroup=group, mode="lines+markers",
                          marker={"size": 4}, **at["loss"]))
        data.append(_line(x_eval, s.eval_ppl, max_points, name=f"{run.label}: perplexity",
                          line={"color": colour}, **dots, **at["ppl"]))
        data.append(_line(x_eval, s.mlm_acc, max_points, name=f"{run.label}: top-1 accuracy",
                          line={"color": colour}, **dots, **at["acc"]))
        if has_values(s.top5_acc):  # every held-out series has one entry per evaluation, NaN a gap
            data.append(_line(x_eval, s.top5_acc, max_points, name=f"{run.label}: top-5 accuracy",
                              line={"color": colour, "dash": "dash"}, **dots, **at["acc"]))
            data.append(_line(x_eval, s.median_rank, max_points, name=f"{run.label}: median rank",
                              line={"color": colour}, **dots, **at["rank"]))
        if has_values(s.nsp_acc):
            data.append(_line(x_eval, s.nsp_acc, max_points, name=f"{run.label}: NSP accuracy",
                              line={"color": colour, "dash": "dot"}, **dots, **at["acc"]))
        data.append(_line(x_train, s.lr, max_points // 3, name=f"{run.label}: learning rate",
                          line={"color": colour, "width": 1}, **quiet, **at["lr"]))
        if i == 0 and has_values(s.locality_strength):
            data.append(_help_line(run.label, x_eval, s.locality_strength, max_points))
    landmarks = {"uniform": UNIFORM_LOSS, **(runs[0].snap.landmarks if runs else {})}
    for name in LANDMARKS:
        if name not in landmarks:
            continue
        value = landmarks[name]
        shapes.append({"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": value, "y1": value,
                       "line": {"color": "#9ca3af", "dash": "dash", "width": 1}})
        label = f"uniform guess = ln {VOCAB_SIZE:,} = {value:.2f}" if name == "uniform" else \
            f"{LANDMARK_LABELS[name]} ({name_of_landmark(name)}) {value:.2f}"
        notes.append({"text": label, "font": {"size": 11, "color": "#6b7280"}, "showarrow": False,
                      "xref": "x domain", "x": 1, "xanchor": "right", "yref": "y", "y": _axis_y(value, log_y),
                      "yanchor": "bottom"})
    # each panel exists before any run; the landmarks count in the loss axis's range
    data.append({"type": "scatter", "mode": "markers", "x": [0] * len(shapes), "y": [s["y0"] for s in shapes],
                 "marker": {"opacity": 0}, "hoverinfo": "skip", "showlegend": False, "name": "landmarks", **at["loss"]})
    data.extend({"type": "scatter", "x": [], "y": [], "showlegend": False, "name": "", **at[name]}
                for name in _PANELS if name != "loss")
    if runs:
        data.extend(_timeline_markers(runs[0].snap, x_axis))
        for event in _length_switches(runs[0].snap):  # the block-length schedule: a line where the length grows
            x = _event_x(event, x_axis)
            shapes.append({"type": "line", "xref": "x", "x0": x, "x1": x, "yref": "y domain", "y0": 0, "y1": 1,
                           "line": {"color": "#b45309", "dash": "dot", "width": 1}})
            notes.append({"text": f"{event['previous']} → {event['length']} tokens", "showarrow": False,
                          "xref": "x", "x": x, "xanchor": "left", "yref": "y domain", "y": 1, "yanchor": "top",
                          "font": {"size": 10, "color": "#b45309"}})
    for name, (xa, ya, x_dom, y_dom, title) in _PANELS.items():
        notes.append({"text": f"<b>{title}</b>", "showarrow": False, "xref": "paper", "yref": "paper",
                      "x": (x_dom[0] + x_dom[1]) / 2, "xanchor": "center", "y": y_dom[1] + 0.005,
                      "yanchor": "bottom", "font": {"size": 13}})
    lead = objectives_lead(runs) if mixed else ""
    if lead:
        notes.append({"text": plotly_text(lead), "showarrow": False, "xref": "paper", "yref": "paper", "x": 0,
                      "xanchor": "left", "y": 1, "yanchor": "bottom", "yshift": 24, "font": {"size": 12},
                      "align": "left"})
    layout: dict = {
        "height": 960, "margin": {"l": 10, "r": 10, "t": TOP_ROOM, "b": 10},
        "paper_bgcolor": "white", "plot_bgcolor": "white", "hovermode": "closest",
        "legend": {"orientation": "h", "x": 0, "y": 0.66 - 0.045, "yanchor": "top", "font": {"size": 10},
                   "bgcolor": "rgba(255,255,255,0)"},
        "shapes": shapes, "annotations": notes,
        # the page keeps a zoom across live redraws, but not across a change of axis type:
        # a linear range read on a log axis would span 10^0 .. 10^11
        "uirevision": f"{x_axis}-{'log' if log_y else 'linear'}",
    }
    grid = {"gridcolor": "#eef2f7", "zeroline": False, "automargin": True}
    for name, (xa, ya, x_dom, y_dom, _title) in _PANELS.items():
        suffix = xa[1:]
        layout[f"xaxis{suffix}"] = {"domain": list(x_dom), "anchor": ya, "nticks": 6, **grid,
                                    "title": {"text": X_AXES[x_axis], "font": {"size": 11}} if name in ("rank", "lr", "loss") else {}}
        layout[f"yaxis{suffix}"] = {"domain": list(y_dom), "anchor": xa, **grid}
    layout["yaxis"]["type"] = "log" if log_y else "linear"
    layout["yaxis2"]["type"] = "log"
    for name in ("yaxis", "yaxis2"):  # log axes labelled at 1, 2, 5 × 10^k in plain numbers, not "2 3 4 5 …"
        if layout[name]["type"] == "log":
            layout[name].update(dtick="D2", tickformat="~s")
    layout["yaxis3"].update(tickformat=".0%", rangemode="tozero")
    layout["yaxis4"].update(type="log", autorange="reversed", dtick=1)
    layout["yaxis5"]["tickformat"] = ".0e"
    if not any(len(r.snap.eval_steps) for r in runs):  # before the first evaluation: the axes' real extent
        # perplexity 1 … V, a label a decade: its 1, 2, 5 steps put 14 labels in the panel's 160 px on a phone
        layout["yaxis2"].update(range=[0, math.log10(VOCAB_SIZE)], dtick=1)
        layout["yaxis3"]["range"] = [0, 1]  # 0 … 100 %
        layout["yaxis4"].update(autorange=False, range=[math.log10(VOCAB_SIZE), 0])  # rank V … 1
    if not any(len(r.snap.steps) for r in runs):
        layout["yaxis5"]["range"] = [0, EMPTY_LR_TOP]
        for xa, *_ in _PANELS.values():  # from 0, not plotly's −1 … 1
            layout[f"xaxis{xa[1:]}"]["range"] = [0, EMPTY_X_TOP[x_axis]]
    if any(trace.get("yaxis") == HELP_AXIS for trace in data):  # the attention help: 0-100 % on the right
        layout["yaxis6"] = {"overlaying": "y", "side": "right", "anchor": "x", "range": [0, 1.05],
                            "tickformat": ".0%", "showgrid": False, "zeroline": False, "automargin": True,
                            "tickvals": [0, 0.5, 1], "tickfont": {"size": 10, "color": HELP_COLOUR},
                            "title": {"text": "attention help (locality bias)",
                                      "font": {"size": 11, "color": HELP_COLOUR}}}
    return {"data": data, "layout": layout}


def _held_out_at(xs: list, losses: list, x: float) -> float | None:
    """The held-out loss at ``x`` (steps or seconds), interpolated between the evaluations around it."""
    points = [(a, b) for a, b in zip(xs, losses) if b is not None and math.isfinite(b)]
    for (x0, y0), (x1, y1) in pairwise(points):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1] if points and points[-1][0] == x else None


def objectives_lead(runs: list[CurveRun]) -> str:
    """For a masked-LM run beside a left-to-right one (the first of each): who has the lower held-out loss on the
    same words at the last step both reached, and at the same training time, in words ("" before both evaluated
    past their start)."""
    mlm = next((r for r in runs if r.snap.objective != "ltr"), None)
    ltr = next((r for r in runs if r.snap.objective == "ltr"), None)
    if mlm is None or ltr is None:
        return ""
    parts = []
    for axis, unit in (("step", "step"), ("time", "s of training")):
        xa, xb = _x(mlm.snap, axis, True), _x(ltr.snap, axis, True)
        if len(xa) != len(mlm.snap.eval_loss) or len(xb) != len(ltr.snap.eval_loss) or not xa or not xb:
            continue
        at = min(xa[-1], xb[-1])
        a, b = _held_out_at(xa, mlm.snap.eval_loss, at), _held_out_at(xb, ltr.snap.eval_loss, at)
        if not at or a is None or b is None:
            continue
        who = "the masked LM" if a < b else "the left-to-right LM"
        parts.append(f"at {unit} {at:,.0f}: {who} ahead by {abs(a - b):.2f} nats ({a:.2f} vs {b:.2f})")
    return ("Held-out loss on the same words — " + "; ".join(parts) + ".") if parts else ""


def _help_line(label: str, x_eval: list, strength: list[float], max_points: int) -> dict:
    """The locality bias at each evaluation (share of its starting strength) as a thin shaded line on the loss
    chart's right axis, named there (the legend is the runs'): "attention help" from 100 % to 0 % as it fades."""
    shown = [v for v in strength if math.isfinite(v)]  # one entry per evaluation; NaN where it had none
    name = f"{label}: attention help (locality bias) {shown[0]:.0%} → {shown[-1]:.0%}"
    return _line(x_eval, strength, max_points, name=name, mode="lines", line={"color": HELP_COLOUR, "width": 1},
                 fill="tozeroy", fillcolor="rgba(13,148,136,0.07)", xaxis="x", yaxis=HELP_AXIS, showlegend=False,
                 hovertemplate="attention help %{y:.0%}<extra></extra>")


def name_of_landmark(name: str) -> str:
    return {"unigram": "word frequency", "left": "bigram", "both": "trigram around the gap"}.get(name, name)


def _timeline_markers(snap: RunSnapshot, x_axis: str) -> list[dict]:
    """Markers on the held-out loss where the run first went below each landmark (stars) and where each
    probe's word entered the top 5 (diamonds, labelled with the word)."""
    traces = []
    for kind, symbol, text in (("landmark", "star", lambda e: _SHORT.get(e.get("landmark"), "")),
                               ("probe", "diamond", lambda e: plotly_text(e.get("expected", "")))):
        events = [e for e in snap.timeline if e.get("kind") == kind]
        if not events:
            continue
        xs = [_event_x(e, x_axis) for e in events]
        ys = [_num(e["value"]) if kind == "landmark" else _num(_loss_at(snap, e["step"])) for e in events]
        traces.append({"type": "scatter", "mode": "markers+text", "x": xs, "y": ys, "xaxis": "x", "yaxis": "y",
                       "text": [text(e) for e in events], "textfont": {"size": 10},
                       # a star sits on its landmark's line, whose label is above the line: the star's goes below
                       "textposition": "bottom center" if kind == "landmark" else "top center",
                       "marker": {"symbol": symbol, "size": 11, "color": "#111827"}, "showlegend": False,
                       "hovertext": [plotly_text(f"step {e['step']:,}: {e['label']}") for e in events], "hoverinfo": "text",
                       "name": "below a landmark" if kind == "landmark" else "a probe's word in the top 5"})
    return traces


_SHORT = {"unigram": "common words", "left": "word before", "both": "both neighbours"}


def training_curves(runs: list[CurveRun], smoothing: float = 0.6, log_y: bool = False,
                    x_axis: str = "step", budget: int = MAX_DRAWN_POINTS) -> go.Figure:
    """:func:`training_curves_spec` as a plotly Figure (for notebooks and tests; the page sends the dict)."""
    return go.Figure(training_curves_spec(runs, smoothing, log_y, x_axis, budget))


def probe_ranks_spec(snap: RunSnapshot | None, x_axis: str = "step", max_points: int = MAX_PROBE_POINTS) -> dict:
    """The rank of each tracked probe's expected word over the run (log axis, rank 1 at the top), the
    top-5 line, and a diamond where each word first entered the top 5."""
    data: list[dict] = []
    if snap is not None:
        x = {"tokens": snap.probe_tokens, "time": snap.probe_wall_s}.get(x_axis, snap.probe_steps)
        if len(x) != len(snap.probe_steps):
            x = snap.probe_steps
        for i, track in enumerate(t for t in snap.probe_tracks if t["expected"]):
            colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
            name = plotly_text(f"“{track['expected']}”: {track['text']}")
            data.append(_line(x, track["ranks"], max_points, name=name, mode="lines+markers", marker={"size": 4},
                              line={"color": colour, "width": 2, "dash": "dot" if track.get("own") else "solid"}))
        events = [e for e in snap.timeline if e.get("kind") == "probe"]
        if events:
            data.append({"type": "scatter", "mode": "markers+text", "x": [_event_x(e, x_axis) for e in events],
                         "y": [e["rank"] for e in events], "text": [plotly_text(e["expected"]) for e in events],
                         "textposition": "middle right", "marker": {"symbol": "diamond", "size": 11, "color": "#111827"},
                         "showlegend": False, "hoverinfo": "text",
                         "hovertext": [plotly_text(f"step {e['step']:,}: {e['label']}") for e in events]})
    layout = {
        "height": 380, "margin": {"l": 10, "r": 10, "t": TOP_ROOM, "b": 10}, "paper_bgcolor": "white",
        "plot_bgcolor": "white",  # no layout title: the page names the chart (PROBE_RANKS_TITLE)
        "xaxis": {"title": {"text": X_AXES[x_axis], "font": {"size": 11}}, "gridcolor": "#eef2f7", "nticks": 6,
                  "automargin": True},
        # every rank a word can have, rank 1 at the top ("up" is better), the same scale all run long
        "yaxis": {"type": "log", "range": [math.log10(VOCAB_SIZE) + 0.1, -0.25], "dtick": 1, "gridcolor": "#eef2f7",
                  "automargin": True, "title": {"text": "rank (log)", "font": {"size": 11}}},
        "legend": {"orientation": "h", "y": -0.2, "yanchor": "top", "font": {"size": 10}},
        "shapes": [{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": IN_TOP, "y1": IN_TOP,
                    "line": {"color": "#9ca3af", "dash": "dash", "width": 1}}],
        "annotations": [{"text": f"top {IN_TOP}", "showarrow": False, "xref": "x domain", "x": 0, "xanchor": "left",
                         "yref": "y", "y": math.log10(IN_TOP), "yanchor": "top", "font": {"size": 11, "color": "#6b7280"}}],
        "uirevision": f"ranks-{x_axis}",
    }
    return {"data": data, "layout": layout}


PROBE_HEADERS = ["probe sentence", "expected", "rank", "top-5 now"]
PROBE_RANKS_TITLE = "Rank of each probe's expected word (1 = first guess; up is better)"


def _guesses(top5: list[tuple[str, float]]) -> str:
    """Top-5 as “token” probability, quoted so a guessed comma or period reads as a word."""
    return " · ".join(f"“{tok}” {p:.1%}" for tok, p in top5)


def probe_rows(snap: RunSnapshot | None) -> list[list]:
    """One row per tracked probe at its latest evaluation: the sentence, the expected word, its rank
    and the top-5 at the first [MASK]; then the learner's probe's further [MASK]s, if it has any."""
    if snap is None:
        return []
    rows = []
    for track in snap.probe_tracks:
        rank = track["ranks"][-1] if track["ranks"] else None
        rows.append([track["text"], track["expected"] or "—", "—" if rank is None else f"{rank:,}",
                     _guesses(track.get("top5", []))])
    latest = snap.probe[-1] if snap.probe else None
    if latest is not None:
        sentence = latest[2] if len(latest) > 2 else snap.probe_text
        for i, preds in enumerate(latest[1][1:], start=2):
            rows.append([f"{sentence} ([MASK] {i})", "—", "—", _guesses(preds)])
    return rows


def timeline_markdown(snap: RunSnapshot | None) -> str:
    """What a learner will see, in order, and (during a run) when this run got there."""
    landmarks = snap.landmarks if snap is not None else {}
    reached = {e.get("landmark"): e for e in (snap.timeline if snap else []) if e.get("kind") == "landmark"}
    arrived = [e for e in (snap.timeline if snap else []) if e.get("kind") == "probe"]

    def value(name: str) -> str:
        return f" ({landmarks[name]:.2f})" if name in landmarks else ""

    def when(event: dict | None) -> str:
        if event is None:
            return ""
        return f" — ✓ step {event['step']:,}, {clock_text(event.get('wall_s', 0))} of training"

    probes = ", ".join(f"{html_code(e['expected'])} at step {e['step']:,}" for e in arrived)
    lines = [
        "**What you will see, in this order** (stars and diamonds mark it on the curves):",
        f"1. The loss falls from the uniform guess (ln {VOCAB_SIZE:,} = {UNIFORM_LOSS:.2f}) to the line "
        f"*{LANDMARK_LABELS['unigram']}*{value('unigram')}: the model answers the most common words "
        f"(“the , . of and”) for every probe{when(reached.get('unigram'))}.",
        "2. A plateau: the same answers for every sentence, while attention learns where to look.",
        "3. Words decided by their neighbour (“born [MASK] London” → in) climb into the top 5, one probe at a "
        "time (the diamonds) — well before the loss reaches the next line: a few words right do not yet move "
        "the average." + (f" So far: {probes}." if probes else ""),
        f"4. The loss goes below *{LANDMARK_LABELS['left']}*{value('left')}: on average the model now does better "
        f"than a guess from the word before{when(reached.get('left'))}. {crossing_text(DEFAULT_RUN)}",
        f"5. Below *{LANDMARK_LABELS['both']}*{value('both')}: the model uses the words on both sides of the gap"
        f"{when(reached.get('both'))}.",
    ]
    lines.append(f"\n{more_training_markdown(snap)}")
    for text in (start_markdown(snap), locality_markdown(snap)):
        if text:
            lines.append(f"\n{text}")
    for event in _length_switches(snap) if snap is not None else []:
        lines.append(f"\nBlock length {event['previous']} → {event['length']} at step {event['step']:,} (the dotted "
                     f"line on the loss chart): positions {event['previous']}-{event['length'] - 1} train only from "
                     "here. BERT ran 90 % of its steps on 128-token blocks because attention costs grow with S² "
                     "(512 tokens cost 16× as much per layer), and taught the long positions last.")
    return "\n".join(lines)


def crossing_text(run: MeasuredRun) -> str:
    """When the measured default run went below the word-before line, in the page's words."""
    if run.below_left_min is None:
        return (f"Measured on {MEASURED_ON}: the default run ended above it (held-out loss {run.final_loss:.2f}); "
                "a longer run or a faster device gets there.")
    return (f"Measured on {MEASURED_ON}: the default run went below it after {run.below_left_min:g} minutes of "
            f"training and ended at {run.final_loss:.2f}; a busy machine makes fewer steps in the same time.")


def steps_per_second(snap: RunSnapshot | None) -> float:
    """The run's own measured speed in optimizer steps per second (0 before it has one)."""
    if snap is None or not snap.steps or not snap.tokens or snap.steps[-1] <= 0 or snap.tokens_per_s <= 0:
        return 0.0
    return snap.tokens_per_s / (snap.tokens[-1] / snap.steps[-1])


def more_training_markdown(snap: RunSnapshot | None) -> str:
    """What a longer run gave, measured (:mod:`bertdemo.pretrain.measured`), and how long its steps take at
    this run's own speed — the question a learner with a GPU (or more time) asks."""
    text, word = PROBE
    rows = []
    for run in (DEFAULT_RUN, LONGER_RUN):
        below = [f"{LANDMARK_LABELS[key]} after {m:g} min" for key, m in
                 (("left", run.below_left_min), ("both", run.below_both_min)) if m is not None]
        if run.top5_min is not None:
            arrival = f"in the top {IN_TOP} after {run.top5_min:g} min"
        elif run.best_rank < run.final_rank:
            arrival = (f"never in the top {IN_TOP}: best rank {run.best_rank:,} (at {run.best_rank_min:g} min), "
                       f"{run.final_rank:,} at the end")
        else:
            arrival = f"never in the top {IN_TOP}: rank {run.final_rank:,} at the end"
        rows.append(f"| {run.budget_min:g} min | {run.steps:,} ({run.tokens / 1e6:.1f} M tokens) | "
                    f"{run.final_loss:.2f} | {'; '.join(below) or '—'} | {arrival} | "
                    f"{' '.join(html_code(t) for t in run.final_top5)} |")
    longer, speed = LONGER_RUN, steps_per_second(snap)
    if speed > 0:
        at_speed = (f"At this run's speed ({speed:,.1f} steps a second) {longer.steps:,} steps take "
                    f"{clock_text(longer.steps / speed)} of training.")
    else:
        at_speed = f"Once a run is under way, this says how long {longer.steps:,} steps take at its speed."
    return "\n".join([
        f"**What more training gives** — the default recipe with a longer time budget, measured on {MEASURED_ON}, "
        f"scored like this page (held-out loss, its lines, the rank of {html_code(word)} in “{text}”):",
        "",
        f"| time budget | steps | held-out loss at the end | went below | {html_code(word)} | its top 5 at the end |",
        "|---|---:|---:|---|---|---|",
        *rows,
        "",
        f"Words that their neighbours decide arrive within minutes. A fact does not: {html_code(word)} did not "
        f"arrive in {longer.minutes:g} minutes (the model learned that a country goes there), and this corpus gives "
        f"little to learn it from — its {CORPUS_DOCUMENTS:,} Wikipedia summaries ({CORPUS_WORDS:,} words) say "
        f"“{FACT_PHRASE}” {FACT_PHRASE_COUNT:,} times and name {word.capitalize()} {WORD_COUNT:,} times. BERT-base read 3.3 billion "
        "words about 40 times over (a million steps of 256 × 512 tokens). A GPU makes more steps a second (no GPU "
        f"figure was measured here): compare a run with these by its steps and tokens. {at_speed}",
    ])


HEADS_ON_NEIGHBOURS = (
    "**Its heads start on the neighbours.** The model is initialised so that in every layer one attention head "
    "looks at the word before and one at the word after from the first step (its position embeddings and each "
    "head's W_q, W_k are set so; nothing is added to BERT, and training moves them where they help). A BERT "
    "initialised at random attends almost evenly to every word: for its first minutes it answers the most common "
    "words for every gap, whatever the sentence.")


def start_markdown(snap: RunSnapshot | None) -> str:
    """How the run's attention heads started, in words (before Start: the default run's; "" for a random start)."""
    if snap is None:
        from bertdemo.pretrain.config import TrainConfig

        return HEADS_ON_NEIGHBOURS if TrainConfig().model.neighbour_init else ""
    return HEADS_ON_NEIGHBOURS if snap.attention_start == "neighbours" else ""


HELP_FADES = ("**Attention gets help at first.** Each head starts with a locality bias: attention to a word is "
              "penalised by its distance, so the model looks at its neighbours from the first step (the shaded "
              "*attention help* on the loss chart, right axis). The help fades to 0 % as the run goes on. "
              "**While it fades, the held-out loss may rise for a while**: the model must learn to look at its "
              "neighbours on its own. At 0 % the model is a stock BERT (its checkpoint loads in plain transformers).")
HELP_PERMANENT = ("**Experiment: a permanent locality bias.** Attention to a word is penalised by its distance for "
                  "the whole run (the shaded *attention help* stays at 100 %). It learns faster; the saved model is "
                  "a stock BERT that predicts *without* the bias it learned with.")


def locality_markdown(snap: RunSnapshot | None) -> str:
    """The locality bias in words: what it is and what its fading does (before Start: the default run's), and,
    while it fades, where it stands now and what the loss did meanwhile ("" for a run without one)."""
    plan = "fades" if snap is None else snap.locality_plan
    if plan == "permanent":
        return HELP_PERMANENT
    if plan != "fades":
        return ""
    points = [] if snap is None else [(step, value, loss) for step, value, loss in
                                      zip(snap.eval_steps, snap.locality_strength, snap.eval_loss) if math.isfinite(value)]
    if not points or points[-1][1] >= 1.0:
        return HELP_FADES
    steps, strength, losses = (list(column) for column in zip(*points))
    fall = next(i for i, value in enumerate(strength) if value < 1.0)  # the first evaluation after it began to fade
    if strength[-1] < 0.005:  # shown as 0 %: gone
        gone = next(i for i, value in enumerate(strength) if value < 0.005)
        now = f"**The help is gone** since step {steps[gone]:,}: the model is a stock BERT now."
    else:
        now = f"**Now the help is fading: {strength[-1]:.0%}** (since step {steps[fall]:,})."
    lowest = min(losses[fall - 1:]) if fall else min(losses)
    if losses[-1] > lowest + 0.01:
        now += (f" The held-out loss is {losses[-1] - lowest:.2f} above its lowest since the help began to fade "
                f"({lowest:.2f}): expected while the model learns to look at its neighbours on its own.")
    return f"{HELP_FADES}  \n{now}"


def shape_markdown(preset: str, layers: float, hidden: float, heads: float, ffn: float, nsp: bool = False) -> str:
    """The parameter count of the form's model as it will train (the NSP head included when ticked), or why
    it cannot be built."""
    from bertdemo.pretrain.config import TrainConfig, param_count_of_run

    try:
        cfg = TrainConfig.from_flat(preset=preset, num_hidden_layers=int(layers), hidden_size=int(hidden),
                                    num_attention_heads=int(heads), intermediate_size=int(ffn), nsp=bool(nsp))
        cfg.validate()
        n_layers, n_hidden, n_heads, n_ffn = cfg.model_shape()
        head = " + the NSP head (pooler and a two-way classifier)" if nsp else ""
        return (f"**{param_count_of_run(cfg):,} parameters** — {n_layers} layers, hidden {n_hidden}, "
                f"{n_heads} heads, FFN {n_ffn}{head}; uncased WordPiece vocabulary (30,522)")
    except ValueError as exc:
        return f"⚠️ {exc}"


ORDER_PROBE_NOTE = (
    "The loss cannot tell you whether a model reads word order: masked-word prediction gets far on a **bag of "
    "words** (which words are in the sentence says a lot about the missing one), so a run without position "
    "embeddings can even end with a slightly *lower* loss — it spends nothing on positions. The order probe asks "
    "the question directly: the run's guesses for your sentence and for a shuffled copy. A model without position "
    "embeddings gives both the same answer (the same final hidden state at the [MASK]); one with them does not."
)


def order_probe_markdown(result, run_id: str) -> str:
    """An order probe's result (``explore.order_probe.order_probe``) as a table of the two top-5s and a verdict."""
    def top(res) -> str:
        return ", ".join(f"{literal(c.text)} {c.prob:.1%}" for c in res.masks[0].candidates)
    verdict = ("the same state: this model is **order-blind**" if result.order_blind
               else "different states: this model **uses word order**")
    return (f"| | sentence | top-5 at the mask |\n|---|---|---|\n| original | {literal(result.text)} | "
            f"{top(result.original)} |\n| shuffled | {literal(result.shuffled)} | {top(result.shuffled_result)} |\n\n"
            f"Largest difference of the [MASK]'s final hidden state: {result.max_state_difference:.2e} — "
            f"{verdict}. Model: run {html_code(run_id)}.")

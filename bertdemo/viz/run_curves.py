"""Pure drawing for pretraining runs: a snapshot (and earlier runs to compare) -> curves, status, probe table.

The curves follow what TensorBoard users expect: a smoothing slider (debiased EMA, the raw line
faint beside it), a log-y toggle, step / tokens seen / training time on the x axis, one colour per
run, one legend entry per run and metric, and the loss of a uniform guess (ln of the vocabulary
size) as a reference line: where every run starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertdemo.pretrain.config import VOCAB_SIZE
from bertdemo.pretrain.metrics import RunSnapshot, debiased_ema
from bertdemo.viz.text import html_code, literal

UNIFORM_LOSS = math.log(VOCAB_SIZE)  # 10.33: cross-entropy of a uniform guess over the vocabulary
X_AXES = {"step": "step", "tokens": "tokens seen", "time": "training time (s)"}
_RUN_COLOURS = ["#4f46e5", "#f59e0b", "#10b981", "#ef4444", "#0ea5e9", "#a855f7", "#84cc16", "#ec4899"]


@dataclass
class CurveRun:
    """One run's history to draw: the live run or an earlier one picked to compare."""

    label: str
    snap: RunSnapshot


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def status_markdown(snap: RunSnapshot | None) -> str:
    """What the run is doing, in one or two lines."""
    if snap is None:
        return "No pretraining run yet on this server. Choose a model size and a corpus, then **Start**."
    head = (f"**{snap.status.upper()}** · run {html_code(snap.run_id)} · {literal(snap.preset)} "
            f"({snap.param_count:,} parameters) · {html_code(snap.corpus)} · {literal(snap.device)}")
    if snap.status == "preparing":
        return f"{head}  \n{literal(snap.message or 'Preparing…')} ({snap.prepare_fraction:.0%})"
    body = f"step **{snap.step:,} / {snap.total_steps:,}**"
    if snap.train_loss_smooth:
        body += f" · train loss {snap.train_loss_smooth[-1]:.3f} (smoothed)"
    if snap.eval_loss:
        body += f" · held-out loss {snap.eval_loss[-1]:.3f} (perplexity {snap.eval_ppl[-1]:,.1f})"
    if snap.mlm_acc:
        body += f" · masked accuracy {snap.mlm_acc[-1]:.1%}"
    if snap.nsp_acc:
        body += f" · NSP accuracy {snap.nsp_acc[-1]:.1%}"
    if snap.tokens_per_s:
        body += f" · {snap.tokens_per_s:,.0f} tokens/s"
    elif snap.active:
        body += " · first steps…"
    body += f" · elapsed {_duration(snap.elapsed_s)}"
    if snap.active and snap.eta_s:
        spread = (f"{_duration(snap.eta_low_s)}–{_duration(snap.eta_high_s)}, "
                  if snap.eta_high_s - snap.eta_low_s >= 1 else "")
        body += f" · ETA {_duration(snap.eta_s)} ({spread}{snap.eta_basis or 'from this run'})"
    text = f"{head}  \n{body}"
    if snap.message:
        text += f"  \n{'⚠️ ' if snap.status == 'failed' else ''}{literal(snap.message)}"
    if snap.last_checkpoint:
        text += "  \nLatest checkpoint saved (offered in the model list of the other tabs)."
    return text


def _x(snap: RunSnapshot, axis: str, evaluation: bool) -> list:
    if axis == "tokens":
        return snap.eval_tokens if evaluation else snap.tokens
    if axis == "time":
        return snap.eval_wall_s if evaluation else snap.wall_s
    return snap.eval_steps if evaluation else snap.steps


def training_curves(runs: list[CurveRun], smoothing: float = 0.6, log_y: bool = False,
                    x_axis: str = "step") -> go.Figure:
    """2x2 curves for one or more runs: masked-LM loss (train raw + smoothed, held-out), held-out
    perplexity, masked-token accuracy (+ NSP), learning rate."""
    if x_axis not in X_AXES:
        raise ValueError(f"x axis must be one of {list(X_AXES)}.")
    if not 0.0 <= smoothing < 1.0:
        raise ValueError("Smoothing must be at least 0 and below 1.")
    fig = make_subplots(
        rows=2, cols=2, subplot_titles=("Masked-LM loss", "Held-out perplexity", "Held-out accuracy",
                                        "Learning rate"),
        vertical_spacing=0.26, horizontal_spacing=0.12,
    )
    panels = {(1, 1): "legend", (1, 2): "legend2", (2, 1): "legend3", (2, 2): "legend4"}  # a legend per panel
    for i, run in enumerate(runs):
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        s, group = run.snap, f"run{i}"
        x_train, x_eval = _x(s, x_axis, False), _x(s, x_axis, True)
        if len(x_train) != len(s.train_loss):  # histories of older runs lack tokens / time
            x_train, x_eval = s.steps, s.eval_steps
        common = dict(legendgroup=group, mode="lines")
        marked = dict(legendgroup=group, mode="lines+markers")
        fig.add_trace(go.Scatter(x=x_train, y=s.train_loss, name=f"{run.label}: train (raw)", opacity=0.25,
                                 line=dict(color=colour, width=1), showlegend=False, legend=panels[1, 1],
                                 **common), 1, 1)
        fig.add_trace(go.Scatter(x=x_train, y=debiased_ema(s.train_loss, smoothing), name=f"{run.label}: train",
                                 line=dict(color=colour, width=2), legend=panels[1, 1], **common), 1, 1)
        fig.add_trace(go.Scatter(x=x_eval, y=s.eval_loss, name=f"{run.label}: held-out", legend=panels[1, 1],
                                 line=dict(color=colour, width=2, dash="dot"), **marked), 1, 1)
        ppl = [p if math.isfinite(p) else None for p in s.eval_ppl]
        fig.add_trace(go.Scatter(x=x_eval, y=ppl, name=f"{run.label}: perplexity", legend=panels[1, 2],
                                 line=dict(color=colour), **marked), 1, 2)
        fig.add_trace(go.Scatter(x=x_eval, y=s.mlm_acc, name=f"{run.label}: masked-token accuracy",
                                 legend=panels[2, 1], line=dict(color=colour), **marked), 2, 1)
        if s.nsp_acc:
            fig.add_trace(go.Scatter(x=x_eval, y=s.nsp_acc, name=f"{run.label}: NSP accuracy", legend=panels[2, 1],
                                     line=dict(color=colour, dash="dash"), **marked), 2, 1)
        fig.add_trace(go.Scatter(x=x_train, y=s.lr, name=f"{run.label}: learning rate", legend=panels[2, 2],
                                 line=dict(color=colour, width=1), **common), 2, 2)
    fig.add_hline(y=UNIFORM_LOSS, line=dict(color="#9ca3af", dash="dash", width=1), row=1, col=1)
    fig.add_annotation(  # plotly reads an annotation's y on a log axis in log10 units (a shape's in data units)
        text=f"uniform guess = ln {VOCAB_SIZE:,} = {UNIFORM_LOSS:.2f}", font_size=11, showarrow=False,
        x=1, xref="x domain", xanchor="right", y=math.log10(UNIFORM_LOSS) if log_y else UNIFORM_LOSS,
        yanchor="bottom", row=1, col=1)
    fig.update_yaxes(type="log" if log_y else "linear", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    # log axes labelled at 1, 2, 5 × 10^k in plain numbers (plotly's default crowds "2 3 4 5 …" between)
    fig.update_yaxes(dtick="D2", tickformat="~s", selector=dict(type="log"))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(tickformat=".0e", row=2, col=2)
    fig.update_xaxes(title_text=X_AXES[x_axis], row=2, nticks=6)
    fig.update_xaxes(nticks=6, row=1)
    legends = {}
    for (row, col), name in panels.items():  # each panel's legend just under its x axis labels
        x_domain = fig.get_subplot(row, col).xaxis.domain
        y_domain = fig.get_subplot(row, col).yaxis.domain
        below = y_domain[0] - (0.1 if row == 2 else 0.06)
        legends[name] = dict(orientation="v", x=x_domain[0], xanchor="left", y=below, yanchor="top",
                             font=dict(size=10), bgcolor="rgba(255,255,255,0)", entrywidth=0)
    fig.update_layout(height=780, template="plotly_white", **legends,
                      margin=dict(l=10, r=10, t=64, b=10),  # t: the panel titles clear the modebar
                      # the page keeps a zoom across live redraws, but not across a change of axis type:
                      # a linear range read on a log axis would span 10^0 .. 10^11
                      uirevision=f"{x_axis}-{'log' if log_y else 'linear'}")
    return fig


PROBE_HEADERS = ["step", "probe sentence", "mask", "top-5 predictions"]


def probe_rows(snap: RunSnapshot | None) -> list[list]:
    """The probe's top-5 at every evaluation, newest first; a sentence is named on the first row it
    answers for (and again only when the probe changed), so the predictions stay readable."""
    if snap is None:
        return []
    rows, shown = [], None
    for entry in reversed(snap.probe):
        step, masks = entry[0], entry[1]
        sentence = entry[2] if len(entry) > 2 else snap.probe_text
        for i, preds in enumerate(masks):
            rows.append([step, sentence if sentence != shown else "", i + 1,
                         " · ".join(f"{tok} {p:.1%}" for tok, p in preds)])
            shown = sentence
    return rows


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


def order_probe_markdown(result, run_id: str) -> str:
    """An order probe's result (``explore.order_probe.order_probe``) as a table of the two top-5s and a verdict."""
    def top(res) -> str:
        return ", ".join(f"{c.text} {c.prob:.1%}" for c in res.masks[0].candidates)
    verdict = ("the same state: this model is **order-blind**" if result.order_blind
               else "different states: this model **uses word order**")
    return (f"| | sentence | top-5 at the mask |\n|---|---|---|\n| original | {result.text} | {top(result.original)} |\n"
            f"| shuffled | {result.shuffled} | {top(result.shuffled_result)} |\n\n"
            f"Largest difference of the [MASK]'s final hidden state: {result.max_state_difference:.2e} — "
            f"{verdict}. Model: run {run_id}.")

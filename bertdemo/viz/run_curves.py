"""Pure drawing for a pretraining run: a snapshot -> live curves, a status line and the probe table."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertdemo.pretrain.metrics import RunSnapshot


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def status_markdown(snap: RunSnapshot | None) -> str:
    """What the run is doing, in one or two lines."""
    if snap is None:
        return "No pretraining run yet on this server. Choose a model size and a corpus, then **Start**."
    head = f"**{snap.status.upper()}** · run `{snap.run_id}` · {snap.preset} ({snap.param_count / 1e6:.2f} M parameters) · {snap.corpus} · {snap.device}"
    if snap.status == "preparing":
        return f"{head}  \n{snap.message or 'Preparing…'} ({snap.prepare_fraction:.0%})"
    body = f"step **{snap.step:,} / {snap.total_steps:,}**"
    if snap.train_loss_smooth:
        body += f" · train loss {snap.train_loss_smooth[-1]:.3f}"
    if snap.eval_loss:
        body += f" · held-out loss {snap.eval_loss[-1]:.3f} (perplexity {snap.eval_ppl[-1]:,.1f})"
    if snap.mlm_acc:
        body += f" · masked accuracy {snap.mlm_acc[-1]:.1%}"
    if snap.nsp_acc:
        body += f" · NSP accuracy {snap.nsp_acc[-1]:.1%}"
    body += f" · {snap.tokens_per_s:,.0f} tokens/s · elapsed {_duration(snap.elapsed_s)}"
    if snap.active and snap.eta_s:
        body += f" · ETA {_duration(snap.eta_s)}"
    text = f"{head}  \n{body}"
    if snap.message:
        text += f"  \n{'⚠️ ' if snap.status == 'failed' else ''}{snap.message}"
    if snap.last_checkpoint:
        text += f"  \nLatest checkpoint: `{snap.last_checkpoint}` (offered in the model list of Fill-Mask and Attention)"
    return text


def training_curves(snap: RunSnapshot | None) -> go.Figure:
    """2x2 live curves: MLM loss (raw, smoothed, held-out), perplexity, accuracies, learning rate."""
    fig = make_subplots(
        rows=2, cols=2, subplot_titles=("Masked-LM loss", "Held-out perplexity", "Accuracy", "Learning rate"),
        vertical_spacing=0.16, horizontal_spacing=0.1,
    )
    if snap is not None:
        line = dict(mode="lines")
        fig.add_trace(go.Scatter(x=snap.steps, y=snap.train_loss, name="train (raw)",
                                 line=dict(color="#c7d2fe", width=1), **line), 1, 1)
        fig.add_trace(go.Scatter(x=snap.steps, y=snap.train_loss_smooth, name="train (smoothed)",
                                 line=dict(color="#4f46e5", width=2), **line), 1, 1)
        fig.add_trace(go.Scatter(x=snap.eval_steps, y=snap.eval_loss, name="held-out",
                                 mode="lines+markers", line=dict(color="#f59e0b", width=2)), 1, 1)
        if snap.nsp_loss:
            fig.add_trace(go.Scatter(x=snap.steps, y=snap.nsp_loss, name="NSP train loss",
                                     line=dict(color="#10b981", width=1), **line), 1, 1)
        ppl = [p if math.isfinite(p) else None for p in snap.eval_ppl]
        fig.add_trace(go.Scatter(x=snap.eval_steps, y=ppl, name="perplexity", mode="lines+markers",
                                 line=dict(color="#f59e0b")), 1, 2)
        fig.add_trace(go.Scatter(x=snap.eval_steps, y=snap.mlm_acc, name="masked-token accuracy",
                                 mode="lines+markers", line=dict(color="#4f46e5")), 2, 1)
        if snap.nsp_acc:
            fig.add_trace(go.Scatter(x=snap.eval_steps, y=snap.nsp_acc, name="NSP accuracy",
                                     mode="lines+markers", line=dict(color="#10b981")), 2, 1)
        fig.add_trace(go.Scatter(x=snap.steps, y=snap.lr, name="learning rate",
                                 line=dict(color="#6b7280"), **line), 2, 2)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_yaxes(tickformat=".0%", range=[0, 1], row=2, col=1)
    fig.update_xaxes(title_text="step", row=2)
    fig.update_layout(height=620, template="plotly_white", margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.12), uirevision="keep-zoom")
    return fig


PROBE_HEADERS = ["step", "mask", "top-5 predictions"]


def probe_rows(snap: RunSnapshot | None) -> list[list]:
    """The probe sentence's top-5 at every evaluation, newest first."""
    if snap is None:
        return []
    rows = []
    for step, masks in reversed(snap.probe):
        for i, preds in enumerate(masks):
            rows.append([step, i + 1, " · ".join(f"{tok} {p:.1%}" for tok, p in preds)])
    return rows

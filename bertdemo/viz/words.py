"""Pure drawing of the Word in context views: similarity across layers (with the baseline and the static
vector), the sense readout, the corpus picture, the neighbour table, and the attribution bars."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bertdemo.explore.attribution import Attribution
from bertdemo.explore.corpus_neighbours import Atlas, Neighbours
from bertdemo.explore.word_in_context import SenseReadout, WordInContext
from bertdemo.viz.style import TEMPLATE
from bertdemo.viz.text import Code, literal, md_table, plotly_text

_SAME, _DIFF, _BASE, _STATIC = "#4f46e5", "#ef553b", "#6b7280", "#00a37a"
_MARGIN = dict(l=50, r=10, t=40, b=40)
_LEGEND = dict(orientation="h", y=-0.2, x=0)


def _layer_axis(n_layers: int) -> dict:
    return dict(title="layer (0 = embeddings)", tickmode="array", tickvals=list(range(n_layers + 1)))


def similarity_figure(result: WordInContext) -> go.Figure:
    """Cosine of the word's vectors per layer: every pair (thin), same / different sense (thick), baseline, static."""
    layers = list(range(result.num_layers + 1))
    fig = go.Figure()
    n = len(result.sentences)
    for i in range(n):
        for j in range(i + 1, n):
            kind = (" (same sense)" if result.senses[i] == result.senses[j] else " (different senses)") if (
                result.senses[i] and result.senses[j]) else ""
            fig.add_trace(go.Scatter(x=layers, y=result.cosines[:, i, j].round(4), mode="lines", showlegend=False,
                                     line=dict(width=1, color="#c7c9d9"), name=f"sentences {i + 1} & {j + 1}{kind}"))
    same, diff = result.pair_curves()
    if same is not None:
        fig.add_trace(go.Scatter(x=layers, y=same.round(4), name="same sense (mean)", line=dict(width=3, color=_SAME)))
    if diff is not None:
        fig.add_trace(go.Scatter(x=layers, y=diff.round(4), name="different senses (mean)",
                                 line=dict(width=3, color=_DIFF)))
    fig.add_trace(go.Scatter(x=layers, y=result.baseline.round(4), name="random words (baseline)",
                             line=dict(width=2, dash="dash", color=_BASE)))
    fig.add_trace(go.Scatter(x=layers, y=[round(result.static_cosine, 4)] * len(layers), name="static vector",
                             line=dict(width=2, dash="dot", color=_STATIC)))
    fig.update_layout(template=TEMPLATE, height=360, margin=_MARGIN, legend=_LEGEND,
                      title=f"'{plotly_text(result.word)}': cosine between sentences, layer by layer",
                      xaxis=_layer_axis(result.num_layers), yaxis=dict(title="cosine", range=[-0.05, 1.05]))
    return fig


def similarity_markdown(result: WordInContext) -> str:
    """What the figure says, in words: where the senses part, read above the baseline."""
    same, diff = result.pair_curves()
    lines = [f"**{literal(result.model_name)}** · {literal(result.piece_note)} The static vector (the row of the "
             f"input embedding table) is the same in every sentence: cosine {result.static_cosine:.2f}, whatever "
             "the sense.",
             "Raw cosines mislead: even random words have a positive cosine that changes with depth (the dashed "
             "line, measured on the embedded corpus). Read a similarity as *how far above the baseline* it is."]
    if same is not None and diff is not None:
        gap = same - diff
        layer = int(np.argmax(gap))
        lines.append(f"The senses part most at **layer {layer}**: same sense {same[layer]:.2f}, different senses "
                     f"{diff[layer]:.2f} (baseline {result.baseline[layer]:.2f}). At layer 0 the gap is "
                     f"{gap[0]:+.2f}: there the vector holds the word and its position, not yet its sense.")
    rows = [[f"{i + 1}", (f"{result.senses[i]} · " if result.senses[i] else "") + s]  # md_table escapes each cell
            for i, s in enumerate(result.sentences)]
    return "\n\n".join(lines) + "\n\n" + md_table(["#", "(sense ·) sentence"], rows)


def readout_figure(readout: SenseReadout) -> go.Figure:
    layers = list(range(len(readout.accuracy)))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=layers, y=(readout.accuracy * 100).round(1), name="nearest sense centroid",
                         marker_color=_SAME))
    fig.add_trace(go.Scatter(x=layers, y=[readout.most_frequent * 100] * len(layers), name="most frequent sense",
                             mode="lines", line=dict(dash="dash", color=_BASE)))
    fig.add_trace(go.Scatter(x=layers, y=[readout.static_accuracy * 100] * len(layers), name="static vector",
                             mode="lines", line=dict(dash="dot", color=_STATIC)))
    fig.update_layout(template=TEMPLATE, height=300, margin=_MARGIN, legend=_LEGEND,
                      title=f"Sense readout on {readout.n_scored} labelled sentences ({', '.join(readout.words)})",
                      xaxis=_layer_axis(len(layers) - 1), yaxis=dict(title="accuracy %", range=[0, 100]))
    return fig


def readout_markdown(readout: SenseReadout) -> str:
    best = readout.best_layer
    return (f"Each sense's centroid from 3 sentences; the other {readout.n_scored} sentences get the nearest "
            f"centroid's sense. Best: **layer {best}, {readout.accuracy[best]:.0%}**, against "
            f"{readout.most_frequent:.0%} for always guessing the most frequent sense. The static vector is the "
            f"same in every sentence, so it can only make that guess: {readout.static_accuracy:.0%}.")


def _wrap(text: str) -> str:
    return "<br>".join(textwrap.wrap(text, 60)[:6])


def atlas_figure(result: Atlas) -> go.Figure:
    fig = go.Figure()
    for c in sorted(set(result.clusters.tolist())):
        keep = result.clusters == c
        fig.add_trace(go.Scatter(
            x=result.corpus_xy[keep, 0].round(3), y=result.corpus_xy[keep, 1].round(3), mode="markers",
            name=f"corpus, cluster {c + 1}", marker=dict(size=8, opacity=0.7),
            text=[_wrap(s) for s, k in zip(result.corpus_sentences, keep) if k], hovertemplate="%{text}<extra></extra>"))
    if len(result.own_sentences):
        fig.add_trace(go.Scatter(
            x=result.own_xy[:, 0].round(3), y=result.own_xy[:, 1].round(3), mode="markers+text", name="your sentences",
            text=[str(i + 1) for i in range(len(result.own_sentences))], textposition="top center",
            marker=dict(size=13, symbol="star", color="black"),
            customdata=[_wrap(s) for s in result.own_sentences], hovertemplate="%{customdata}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, height=420, margin=_MARGIN, legend=_LEGEND,
                      title=f"'{plotly_text(result.word)}' in {len(result.corpus_sentences)} corpus sentences, layer {result.layer} (PCA)",
                      xaxis=dict(title=f"PC 1 ({result.explained[0]:.0%} of the variance)"),
                      yaxis=dict(title=f"PC 2 ({result.explained[1]:.0%})"))
    return fig


def atlas_markdown(result: Atlas) -> str:
    own = ", ".join(f"{i + 1} → cluster {c + 1}" for i, c in enumerate(result.own_clusters.tolist()))
    note = (" At a low layer the picture mostly shows the word's position and its neighbours in the sentence, "
            "not yet its sense; move the layer up to see the uses group by meaning.") if result.layer <= 1 else ""
    return (f"Each dot is one use of **{literal(result.word)}** in the embedded Wikipedia summaries (hover or tap "
            f"for its sentence), coloured by the layer's clusters (k-means).{note}" + (f" Your sentences: {own}." if own else ""))


def neighbours_markdown(result: Neighbours) -> str:
    token = result.tokens[result.position]
    rows = [[f"{i + 1}", Code(n.token), f"{n.cosine:.4f}", n.sentence]  # md_table escapes each cell once
            for i, n in enumerate(result.neighbours)]
    return (f"The {len(result.neighbours)} corpus tokens nearest to **{literal(token)}** (position {result.position}) "
            f"at layer {result.layer}, among {result.index_size:,} tokens of the embedded corpus · "
            f"{literal(result.model_name)}\n\n"
            + md_table(["#", "token", "cosine", "sentence"], rows))


def attribution_figure(result: Attribution) -> go.Figure:
    labels = [f"{i} {t}" for i, t in enumerate(result.tokens)]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.72, 0.28], horizontal_spacing=0.03,
                        subplot_titles=(f"contribution to P({plotly_text(result.target)})", "last-layer attention"))
    colours = {"integrated gradients": "#4f46e5", "gradient x input": "#f59e0b", "occlusion": "#00a37a"}
    for method, scores in result.scores.items():
        fig.add_trace(go.Bar(y=labels, x=scores.round(5), orientation="h", name=method,
                             marker_color=colours.get(method)), row=1, col=1)
    fig.add_trace(go.Bar(y=labels, x=result.attention.round(4), orientation="h", name="attention from [MASK]",
                         marker_color=_BASE), row=1, col=2)
    fig.update_layout(template=TEMPLATE, height=max(300, 22 * len(labels) + 160), margin=dict(l=10, r=10, t=40, b=110),
                      legend=dict(orientation="h", x=0, y=0, yref="container", yanchor="bottom"), barmode="group",
                      yaxis=dict(autorange="reversed", automargin=True))
    return fig


def attribution_markdown(result: Attribution) -> str:
    delta = result.prob - result.baseline_prob
    target = literal(result.target)  # the visitor's word, shown as typed
    lines = [f"**Why '{target}'?** P({target}) at the [MASK] (position {result.mask_position}) is "
             f"{result.prob:.2%} · {literal(result.model_name)}.",
             "Baseline: every token's word embedding replaced by [PAD]'s (positions and segments kept; [CLS], [SEP] "
             f"and this [MASK] kept): P = {result.baseline_prob:.2%}."]
    if "integrated gradients" in result.scores:
        lines.append(f"**Completeness:** the integrated-gradient scores add up to {result.ig_sum:+.4f}; "
                     f"f(input) − f(baseline) = {delta:+.4f}: a gap of **{result.completeness_gap:.1f}%** at "
                     f"{result.steps} steps (more steps, a smaller gap).")
    lines.append("Attention (right) is where the last layer *read from*, not what *changed* the answer: a token can "
                 "draw attention and matter little, or matter through earlier layers. It is not an explanation.")
    return "\n\n".join(lines)

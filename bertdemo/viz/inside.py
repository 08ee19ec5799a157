"""Pure drawing for the Inside BERT tab: results -> plotly figures and markdown tables.

Wide matrices (S x D, S x I) are drawn over their first ``DIMS_SHOWN`` dimensions; every title
gives the full shape, so the picture stays small and the numbers stay honest. Figures of several
panels are made in one call from a :func:`~bertdemo.viz.grid.grid` layout (not ``make_subplots`` and
``update_*`` calls, which cost more than the forward they draw), every figure without plotly's per-property
validation (:func:`~bertdemo.viz.style.unchecked_figure`; the tests validate each again).
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from bertdemo.explore.inside import EmbeddingsResult, OrderTest
from bertdemo.explore.inside_anatomy import ParamBreakdown
from bertdemo.explore.inside_layer import LayerStepResult
from bertdemo.explore.inside_output import LogitLensResult, MlmLossResult
from bertdemo.viz.grid import Grid, grid
from bertdemo.viz.style import COLORBAR_PX, TEMPLATE, colorscale, labels_px, unchecked_figure
from bertdemo.viz.text import Code, html_code, literal, md_table, plotly_text

DIMS_SHOWN = 64  # columns drawn of a (S, D) or (S, I) matrix
_ROW_PX = 18
_BLUE = "#4f46e5"
_AMBER = "#f59e0b"
_WIDE_PX = 1100  # multi-column figures keep this width (a phone scrolls them sideways)
_TICK_PX = 28  # below the last panel: its tick numbers


def _labels(tokens: list[str]) -> list[str]:
    """Repeated tokens stay separate rows: label with the position."""
    return [f"{i}: {t}" for i, t in enumerate(tokens)]


def _shape(shape) -> str:
    return "×".join(str(s) for s in shape)


def _cut(matrix: np.ndarray) -> tuple[np.ndarray, str]:
    """The first DIMS_SHOWN columns, and a note when some were left out."""
    if matrix.shape[-1] <= DIMS_SHOWN:
        return matrix, ""
    return matrix[..., :DIMS_SHOWN], f", first {DIMS_SHOWN} of {matrix.shape[-1]} dims"


def _heatmap(matrix: np.ndarray, y: list[str] | None, x: list[str] | None = None, diverging: bool = True,
             name: str = "value", showscale: bool = False, **where: str) -> dict:
    """A heatmap trace (``where``: its ``xaxis`` / ``yaxis``, from :meth:`Grid.on`)."""
    m = np.round(np.asarray(matrix, dtype=np.float32), 4)
    style = dict(colorscale=colorscale("RdBu"), zmid=0, reversescale=True) if diverging else \
        dict(colorscale=colorscale("Viridis"), zmin=0)
    return dict(
        type="heatmap", z=m, y=y, x=x, showscale=showscale, **style, **where,
        **(dict(colorbar=dict(x=1, xanchor="left", xpad=8)) if showscale else {}),  # at the plot's edge, any width
        hovertemplate="%{y}<br>" + ("%{x}<br>" if x else "dim %{x}<br>") + name + " %{z:.4f}<extra></extra>",
    )


def _figure(panels: Grid, data: list[dict], height: int, title: str = "", row_labels: list[str] | None = None,
            top: int | None = None, **layout) -> go.Figure:
    """The figure of ``data`` on ``panels``, with its size, title and look; ``row_labels`` (the tokens every
    y axis shows): margins set from them, so plotly need not measure every axis's labels and lay the
    figure out again (its ``automargin``); ``top``: the top margin, when panel titles below the
    figure's title need more than the usual. Every y axis lists its rows top down."""
    margin = dict(l=10, r=10, t=top if top is not None else (60 if title else 30), b=10)
    if any(trace.get("showscale") for trace in data):
        margin["r"] = COLORBAR_PX  # the colorbar fits: plotly need not widen the margin and draw again
    if row_labels is not None:
        margin.update(l=_label_px(row_labels), b=_TICK_PX)
        for axis in panels.xaxes() + panels.yaxes():
            axis["automargin"] = False
    for axis in panels.yaxes():
        axis.update(autorange="reversed", type="category")
    return unchecked_figure(data, {**panels.layout, **layout, **({"title": {"text": title}} if title else {}),
                                   "height": height, "margin": margin, "template": TEMPLATE, "autosize": True})


def _label_px(labels: list[str]) -> int:
    """The left margin that holds the longest of ``labels`` in plotly's 12 px tick font (and a gap)."""
    return 16 + labels_px(labels)


# --- 1. embeddings ---------------------------------------------------------------------------


_EMBED_PARTS = [  # (the result's field, the panel's title, the hover's name of a value)
    ("word", "word<br>E_word[input_ids]", "word"),
    ("position", "+ position<br>E_pos[0…S−1]", "position"),
    ("segment", "+ segment<br>E_seg[token_type_ids]", "segment"),
    ("total", "= sum<br> ", "sum"),
    ("normed", "LayerNorm(sum)<br>= hidden_states[0]", "after LayerNorm"),
]
_EMBED_TOP = 110  # the figure's two-line title, then the panels' two-line titles
# no colour bar: it would give one panel's scale for all five (after LayerNorm the values are several times
# the sum's), and drawing it was a third of the figure's drawing time in the page
_OWN_SCALES = "colour: each panel on its own scale, red above 0, blue below; point at a cell for its value"


def embeddings_figure(result: EmbeddingsResult) -> go.Figure:
    """Five heat strips side by side, one row per token, the rows named once at the left: word, position,
    segment, their sum, after LayerNorm (a row reads across: the three parts, their sum, the sum normed),
    each coloured on its own scale. A narrow screen stacks them, each naming its rows again
    (static/plotly_figure.js)."""
    s, d = result.shape
    labels = _labels(result.tokens)
    _, note = _cut(result.word)
    panels = grid(1, len(_EMBED_PARTS), [title for _, title, _ in _EMBED_PARTS], horizontal_spacing=0.02,
                  title_size=12)
    data = [_heatmap(_cut(getattr(result, key))[0], labels, name=name, **panels.on(1, col))
            for col, (key, _, name) in enumerate(_EMBED_PARTS, start=1)]
    # the rows are the same tokens in every panel, named once at the left; every panel spans the same dims,
    # numbered once under the first: the other panels' axes are not drawn at all (plotly lays out and draws
    # each axis it shows, labelled or not: eight of ten axes were a fifth of the figure's drawing in the page)
    xaxes = panels.xaxes()
    xaxes[0].update(dtick=16, tick0=0)
    for axis in xaxes[1:] + panels.yaxes()[1:]:
        axis["visible"] = False
    return _figure(panels, data, max(110, _ROW_PX * s) + _EMBED_TOP + _TICK_PX,
                   f"Embeddings of your sentence — model {result.model_name}: each part {_shape((s, d))}{note}"
                   f"<br><sup>{_OWN_SCALES}</sup>", row_labels=labels, top=_EMBED_TOP)


def embeddings_markdown(result: EmbeddingsResult) -> str:
    """Per-token norms of each part, and the check against the model's own hidden_states[0]."""
    s, d = result.shape
    lines = [
        f"**Model {result.model_name}** · S = {s} tokens × D = {d} dims. "
        f"Recomputed LayerNorm(word + position + segment) vs the model's `hidden_states[0]`: "
        f"max |difference| = {result.max_abs_diff:.1e}.",
        "",
    ]
    norms = {k: np.linalg.norm(getattr(result, k), axis=-1) for k, _, _ in _EMBED_PARTS}
    rows = [[i, Code(token), result.input_ids[i], result.token_type_ids[i],
             *(f"{norms[k][i]:.2f}" for k, _, _ in _EMBED_PARTS)] for i, token in enumerate(result.tokens)]
    headers = ["pos", "token", "id", "segment", "‖word‖", "‖position‖", "‖segment‖", "‖sum‖", "‖after LayerNorm‖"]
    return "\n".join(lines) + "\n" + md_table(headers, rows)


def position_cosine_figure(result: EmbeddingsResult) -> go.Figure:
    """The learned position embeddings as a position x position cosine-similarity map."""
    m = result.position_cosine
    p = m.shape[0]
    return unchecked_figure([dict(
        type="heatmap", z=np.round(m, 3), colorscale=colorscale("RdBu"), reversescale=True, zmid=0, zmin=-1, zmax=1,
        hovertemplate="position %{y} · position %{x}<br>cosine %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="cos")),
    )], dict(
        title=dict(text=f"Cosine between learned position vectors 0–{p - 1} (of {result.max_positions})"),
        xaxis=dict(title=dict(text="position")), yaxis=dict(title=dict(text="position"), autorange="reversed"),
        height=520, margin=dict(l=10, r=10, t=50, b=10), template=TEMPLATE,
    ))


def order_markdown(order: OrderTest, model_name: str) -> str:
    """The order test as a table: each token's final state, original vs shuffled, with and without positions."""
    inverse = {src: dst for dst, src in enumerate(order.permutation)}
    lines = [
        f"**Order test — model {literal(model_name)}.** Original: {html_code(' '.join(order.tokens))}  \n"
        f"Shuffled: {html_code(' '.join(order.shuffled_tokens))}",
        "",
        (f"- **Without position embeddings** the encoder gets the same bag of input vectors "
         f"(sorted, max |difference| = {order.input_bag_diff_without_positions:.1e}), yet this left-to-right "
         f"model's causal mask lets each token see only the tokens before it, so the states still differ: max "
         f"|difference| = {order.max_diff_without_positions:.3f}. A causal mask alone sees order." if order.causal else
         f"- **Without position embeddings** the encoder gets the same bag of input vectors "
         f"(sorted, max |difference| = {order.input_bag_diff_without_positions:.1e}), so every token ends "
         f"with the same final hidden state wherever it stands: max |difference| = "
         f"{order.max_diff_without_positions:.1e}, cosine 1.000. Self-attention alone does not see order."),
        f"- **With position embeddings** (the real model) the states differ: max |difference| = "
        f"{order.max_diff_with_positions:.3f}.",
        "",
    ]
    rows = [[Code(token), f"{i} → {inverse[i]}", f"{order.cosine_with_positions[i]:.3f}",
             f"{order.cosine_without_positions[i]:.3f}"] for i, token in enumerate(order.tokens)]
    headers = ["token", "moved", "cosine, with positions", "cosine, without"]
    return "\n".join(lines) + "\n" + md_table(headers, rows)


# --- 2. one layer, one head --------------------------------------------------------------------


TITLE_LINE_CHARS = 58  # a step panel's second title line up to this long stays one line (the last column's 68 ran past the edge)


def layer_figure(result: LayerStepResult) -> go.Figure:
    """Every step of the layer as a small heatmap with its full shape (per-head steps: the chosen head)."""
    labels = _labels(result.tokens)
    cols = 3
    rows = math.ceil(len(result.steps) / cols)
    titles = []
    for n, step in enumerate(result.steps, start=1):
        _, note = _cut(step.matrix)
        shape = f"({_shape(step.shape)}{note})"
        # a long second line goes on a third (a panel is about 330 px wide at 1280 px)
        joint = " " if len(step.name) + len(shape) < TITLE_LINE_CHARS else "<br>"
        titles.append(f"{n}. {step.formula}<br>{step.name}{joint}{shape}")
    panels = grid(rows, cols, titles, vertical_spacing=0.32 / rows, horizontal_spacing=0.06, title_size=12)
    data = []
    for n, step in enumerate(result.steps):
        shown, _ = _cut(step.matrix)
        square = shown.shape[0] == shown.shape[1] == len(labels)
        probs = step.formula == "softmax"
        data.append(_heatmap(shown, labels, labels if square else None, diverging=not probs, name=step.formula,
                             **panels.on(n // cols + 1, n % cols + 1)))
    for axis in panels.xaxes():
        axis["showticklabels"] = False
    for col in range(2, cols + 1):  # the rows of every panel are the tokens: named once, in the first column
        for axis in panels.yaxes(col):
            axis["showticklabels"] = False
    per = max(150, _ROW_PX * len(labels))
    return _figure(panels, data, rows * (per + 90) + 90,  # the first row's two-line panel titles below the title
                   f"Layer {result.layer}, head {result.head}, step by step — model {result.model_name}",
                   row_labels=labels, top=95, width=_WIDE_PX)


def neuron_figure(result: LayerStepResult) -> go.Figure:
    """bertviz's neuron view for the query token: q, every k, q ⊙ k, q·k, ÷√d_h, softmax."""
    labels = _labels(result.tokens)
    q_label = labels[result.query]
    panels = grid(
        2, 4, [f"query q ({result.head_dim})", "", "keys k (S×d_h)", "q ⊙ k (elementwise)", "q·k and ÷√d_h",
               "softmax"],
        row_heights=[0.1, 0.9], vertical_spacing=0.14, horizontal_spacing=0.05, column_widths=[0.3, 0.3, 0.2, 0.2],
        empty=[(1, 3), (1, 4)], title_size=12,
    )

    def bar(values, name: str, color: str, **more) -> dict:
        return dict(type="bar", x=values, y=labels, orientation="h", name=name, marker=dict(color=color), **more)

    data = [
        _heatmap(result.q[None, :], [q_label], name="q", **panels.on(1, 1)),
        _heatmap(result.keys, labels, name="k", **panels.on(2, 1)),
        _heatmap(result.products, labels, name="q·k term", **panels.on(2, 2)),
        bar(result.scores, "q·k", "#94a3b8", **panels.on(2, 3)),
        bar(result.scaled, "÷√d_h", _BLUE, **panels.on(2, 3)),
        bar(result.probs, "softmax", _AMBER, text=[f"{p:.2f}" for p in result.probs], textposition="auto",
            **panels.on(2, 4)),
    ]
    for col in (2, 3, 4):
        for axis in panels.yaxes(col):
            axis["showticklabels"] = False
    panels.axes_of(1, 1)[0]["showticklabels"] = False  # q's dims are the keys' below it, numbered there
    per = max(220, _ROW_PX * len(labels))
    return _figure(panels, data, per + 200, f"Neuron view: how query token {q_label} scores every key "
                                            f"(layer {result.layer}, head {result.head})",
                   row_labels=labels, barmode="overlay", showlegend=False, width=_WIDE_PX)


def layer_markdown(result: LayerStepResult) -> str:
    """The chosen query token's row in numbers, the shapes, and the checks against the model."""
    s = len(result.tokens)
    q_tok = result.tokens[result.query]
    lines = [
        f"**Model {result.model_name}** · layer {result.layer} of 0–{result.num_layers - 1}, head {result.head} "
        f"of 0–{result.num_heads - 1}, query token {result.query} `{q_tok}`. "
        f"D = {result.hidden_size} = H × d_h = {result.num_heads} × {result.head_dim}; feed-forward "
        f"I = {result.intermediate_size} ({result.activation}). Attention (B, H, S, S) = "
        f"(1, {result.num_heads}, {s}, {s}).",
        "",
        f"Checks against the model's own forward: softmax vs `output_attentions[{result.layer}]` max "
        f"|difference| = {result.max_diff_attention:.1e}; layer output vs `hidden_states[{result.layer + 1}]` "
        f"max |difference| = {result.max_diff_output:.1e}.",
        "",
    ]
    if result.causal:
        lines += [f"**Left-to-right model: the causal mask.** Before the softmax it adds −3.4e38 to the score of "
                  f"every key after the query (keys {result.query + 1}–{s - 1} here), so their weights are exactly 0: "
                  "this token reads only itself and the tokens before it.", ""]
    rows = [[Code(f"{j}: {token}"), f"{result.scores[j]:.3f}", f"{result.scaled[j]:.3f}",
             "0" if result.mask[j] == 0 else f"{result.mask[j]:.1e}", f"{result.probs[j]:.3f}",
             f"{result.value_norms[j]:.2f}"] for j, token in enumerate(result.tokens)]
    lines.append(md_table(["key token", "q·k", f"÷ √{result.head_dim}", "+ mask", "softmax p", "‖v‖"], rows))
    lines.append(
        f"\nThe weights sum to {result.probs.sum():.3f}; the weighted sum Σ p·v of this token is a "
        f"{result.head_dim}-vector of norm {np.linalg.norm(result.context):.3f}, one of the "
        f"{result.num_heads} slices concatenated in step 10."
    )
    return "\n".join(lines)


# --- 3. logit lens -----------------------------------------------------------------------------


LENS_CELL_PX = 64  # a top-k word's cell in the logit lens on a phone: room for a word of about ten letters
LENS_LABELS_PX = 110  # the row labels ("embeddings", "layer 6") and the margins beside the cells


def lens_figure(result: LogitLensResult) -> go.Figure:
    """Top-k words per layer as a table-like heatmap, beside cosine-to-final and p(final word)."""
    rows = [f"layer {l.layer}" if l.layer else "embeddings" for l in result.layers]
    k = len(result.layers[0].top)
    probs = np.array([[p for _, p in l.top] for l in result.layers])
    words = [[t for t, _ in l.top] for l in result.layers]
    panels = grid(1, 2, [f"top {k} if the MLM head read this layer", "how the hidden state moves"],
                  column_widths=[0.62, 0.38], horizontal_spacing=0.08, title_size=12)
    data = [
        dict(type="heatmap", z=np.round(probs, 4), x=[f"#{i + 1}" for i in range(k)], y=rows, text=words,
             texttemplate="%{text}", colorscale=colorscale("Blues"), zmin=0, showscale=False,
             hovertemplate="%{y} · %{x}: %{text}<br>p = %{z:.4f}<extra></extra>", **panels.on(1, 1)),
        dict(type="scatter", x=[l.cosine_to_final for l in result.layers], y=rows, mode="lines+markers",
             name="cosine to the last layer", marker=dict(color=_BLUE), **panels.on(1, 2)),
        dict(type="scatter", x=[l.final_word_prob for l in result.layers], y=rows, mode="lines+markers",
             name=f"p({result.final_word})", marker=dict(color=_AMBER), **panels.on(1, 2)),
    ]
    x_axis, y_axis = panels.axes_of(1, 2)
    x_axis["range"] = [-0.05, 1.05]
    y_axis["showticklabels"] = False
    return _figure(panels, data, 120 + 42 * len(rows),
                   f"Logit lens at [MASK] #{result.mask_number} (position {result.position}) — model {result.model_name}",
                   legend=dict(orientation="h", y=-0.08), width=900,
                   # on a phone the words keep 64 px a cell (at the screen's width they were drawn 5 px high)
                   meta={"narrow_min_width": LENS_LABELS_PX + LENS_CELL_PX * k})


def lens_markdown(result: LogitLensResult) -> str:
    last = result.layers[-1]
    return (
        f"**Model {result.model_name}** · [MASK] #{result.mask_number} at position {result.position}. "
        f"Row *embeddings* reads `hidden_states[0]`; row *layer l* reads the output of encoder layer l. "
        f"The last row is the model's own prediction (`{result.final_word}`, p = {last.top[0][1]:.3f}): "
        f"its logits match the model's `logits` with max |difference| = {result.max_abs_diff_logits:.1e}."
    )


# --- 4. output and loss ------------------------------------------------------------------------


def loss_figure(result: MlmLossResult) -> go.Figure:
    """−log p per mask, with the mean (the MLM loss) and ln(V), the loss of a uniform guess."""
    labels = [plotly_text(f"#{m.number} {m.word}") for m in result.masks]  # words the visitor typed
    values = [m.neg_log_prob for m in result.masks]
    def level(y: float, text: str, dash: str, color: str, at_right: bool) -> tuple[dict, dict]:
        """A dashed line across the chart at ``y`` and its label (at the line's left end, below it, or at its
        right end, above it)."""
        line = dict(type="line", x0=0, x1=1, xref="x domain", y0=y, y1=y, yref="y", line=dict(color=color, dash=dash))
        label = dict(text=text, x=1 if at_right else 0, xanchor="right" if at_right else "left", xref="x domain",
                     y=y, yanchor="bottom" if at_right else "top", yref="y", showarrow=False, bgcolor="white")
        return line, label

    mean = level(result.mean_loss, f"mean = MLM loss {result.mean_loss:.3f}", "dash", _AMBER, False)
    uniform = level(result.uniform_loss, f"uniform guess ln({result.vocab_size:,}) = {result.uniform_loss:.2f}",
                    "dot", "#64748b", True)
    bars = dict(type="bar", x=labels, y=values, marker=dict(color=_BLUE), text=[f"p={m.prob:.3g}" for m in result.masks],
                textposition="outside", hovertemplate="%{x}<br>−log p = %{y:.3f}<extra></extra>", name="−log p")
    return unchecked_figure([bars], dict(
        title=dict(text=f"−log p of the right word at each mask — model {result.model_name}"),
        yaxis=dict(title=dict(text="−log p (nats)"), range=[0, max(values + [result.uniform_loss]) * 1.2]),
        shapes=[mean[0], uniform[0]], annotations=[mean[1], uniform[1]],
        height=380, margin=dict(l=10, r=10, t=50, b=10), template=TEMPLATE,
    ))


def loss_markdown(result: MlmLossResult) -> str:
    d, v = result.hidden_size, result.vocab_size
    how = ("the head recomputed from the weights" if result.from_weights
           else "the model's own logits (this architecture's head is not spelled out step by step)")
    tied = ("tied to the word embeddings (the same tensor)" if result.tied else "its own weight (not tied)")
    lines = [
        f"**Model {literal(result.model_name)}** · input: {literal(result.text)}",
        "",
        f"At each [MASK]: hidden state h ({d}) → transform: dense {d}×{d} + GELU + LayerNorm ({d}) → "
        f"decoder {d}→{v:,}, {tied} → {v:,} logits → softmax → p(right word) → −log p. Computed with {how}.",
        "",
    ]
    rows = [[f"#{m.number}", Code(f"{m.word} ({m.word_id})"), f"{m.hidden_norm:.2f}", f"{m.transformed_norm:.2f}",
             f"{m.logit:.2f}", f"{m.max_logit:.2f}", f"{m.rank:,}", f"{m.prob:.4g}", f"{m.neg_log_prob:.4f}",
             ", ".join(f"{t} {p:.2f}" for t, p in m.top)] for m in result.masks]
    lines.append(md_table(["mask", "right word (id)", "‖h‖", "‖transform(h)‖", "its logit", "top logit", "rank", "p",
                           "−log p", "model's top 5"], rows))
    lines += [
        "",
        f"**Mean over {len(result.masks)} mask(s) = {result.mean_loss:.4f}**; the model's own loss "
        f"(`model(..., labels=...)`, −100 everywhere but the masks) = **{result.model_loss:.4f}** "
        f"(difference {abs(result.mean_loss - result.model_loss):.1e}).",
        f"A uniform guess over the {v:,} words has loss ln({v:,}) = **{result.uniform_loss:.2f}** — where "
        "every run in the Pretrain tab starts.",
    ]
    return "\n".join(lines)


# --- 5. anatomy --------------------------------------------------------------------------------


def anatomy_markdown(result: ParamBreakdown) -> str:
    """Components with their counts; identical encoder layers shown once, × L."""
    lines = [
        f"**Model {result.model_name}** · {result.total:,} parameters "
        f"(= `sum(p.numel() for p in model.parameters())` = {result.numel_total:,}).",
        "",
    ]
    fold = result.layers_identical() and result.num_layers > 1
    rows = []

    def row(group: str, name: str, count: int) -> None:
        rows.append([group, name, f"{count:,}", f"{100 * count / result.total:.2f} %"])

    for c in result.components:
        if fold and c.group.startswith("layer "):
            if c.group == "layer 0":
                row(f"each of the {result.num_layers} layers", c.name, c.count)
            continue
        row(c.group, c.name, c.count)
    lines.append(md_table(["group", "component", "parameters", "share"], rows))
    groups = result.groups()
    lines.append("")
    if fold:
        per_layer = groups["layer 0"]
        lines.append(f"One layer: {per_layer:,}; all {result.num_layers} layers: {per_layer * result.num_layers:,}.")
    lines.append("Per group: " + " · ".join(
        f"{g} {n:,}" for g, n in groups.items() if not (fold and g.startswith("layer "))
    ) + ".")
    if result.tied_decoder:
        lines.append("The MLM decoder's weight *is* the word-embedding matrix (tied): counted once, "
                     "under the word embeddings; only its bias belongs to the head.")
    return "\n".join(lines)

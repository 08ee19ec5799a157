"""Draw the masking lab and NSP pairs: coloured chips, the model's tensors, epoch strips, rate bars.

HTML with inline styles (no JavaScript) and one plotly figure. Colours: [MASK] indigo,
random token orange, kept (chosen but unchanged) green, not chosen white, specials dark.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

from bertdemo.explore.masking_lab import EpochComparison, MaskSample, RateStats
from bertdemo.explore.nsp import NspPairs, NspPrediction
from bertdemo.viz.text import html_code, literal, md_table

COLOURS = {"mask": "#c7d2fe", "random": "#fed7aa", "keep": "#bbf7d0", None: "#ffffff"}
BORDERS = {"mask": "#4338ca", "random": "#c2410c", "keep": "#15803d", None: "#9ca3af"}
SPECIAL_BG, SPECIAL_FG = "#374151", "#f9fafb"
SEGMENT_BG = ("#dbeafe", "#fef3c7")  # sentence A, sentence B
_CHIP = ("display:inline-block;padding:2px 6px;margin:4px 0 0 6px;border-radius:6px;font-family:ui-monospace,"
         "monospace;font-size:14px;line-height:1.4;color:#111827;text-align:center;vertical-align:top;")
_NOTE = "margin-top:8px;font-size:13px;color:#4b5563"


# what a screen reader says after a chosen token (the chip's colour and its "was …" line are not read)
SPOKEN = {"mask": "masked; the answer is {}", "random": "a random token; the answer is {}", "keep": "kept; still predicted"}


def _chip(text: str, bg: str, border: str, title: str, extra: str = "", sub: str = "", attrs: str = "",
          spoken: str = "") -> str:
    style = _CHIP + f"background:{bg};border:1px solid {border};" + extra
    hidden = ' aria-hidden="true"' if spoken else ""
    below = f'<br><span style="font-size:11px;color:#4b5563"{hidden}>{html.escape(sub)}</span>' if sub else ""
    said = f'<span class="bd-sr-only"> ({html.escape(spoken)})</span>' if spoken else ""
    return (f'<span class="mask-chip" title="{html.escape(title)}" {attrs} style="{style}">'
            f"{html.escape(text)}{below}{said}</span>")


def legend() -> str:
    items = [("mask", "[MASK]"), ("random", "random token"), ("keep", "kept (still predicted)"),
             (None, "not chosen")]
    chips = "".join(_chip(label, COLOURS[a], BORDERS[a], label) for a, label in items)
    return chips + _chip("special", SPECIAL_BG, "#111827", "never chosen", f"color:{SPECIAL_FG};")


def render_sample(sample: MaskSample) -> str:
    """Chips of what the model sees; chosen ones show the original token (the label) below."""
    parts = ['<div class="mask-chips" style="line-height:2">']
    for t in sample.tokens:
        title = f"position {t.position} · input_id {t.input_id} · label {t.label}"
        attrs = f'data-action="{t.action or "none"}" data-position="{t.position}"'
        if t.special:
            parts.append(_chip(t.token, SPECIAL_BG, "#111827", title + " · special, never chosen",
                               f"color:{SPECIAL_FG};", attrs=attrs))
            continue
        sub = f"was {t.token}" if t.chosen else ""
        extra = "font-weight:700;border-width:2px;" if t.chosen else ""
        spoken = SPOKEN[t.action].format(t.token) if t.chosen else ""
        parts.append(_chip(t.input_token, COLOURS[t.action], BORDERS[t.action], title, extra, sub, attrs, spoken))
    n = sum(t.chosen for t in sample.tokens)
    counts = {a: sum(t.action == a for t in sample.tokens) for a in ("mask", "random", "keep")}
    parts.append("</div>")
    parts.append(
        f'<div style="{_NOTE}"><b>{n}</b> of {sum(not t.special for t in sample.tokens)} tokens chosen '
        f"({counts['mask']} → [MASK], {counts['random']} → random, {counts['keep']} kept) · "
        f"{html.escape(sample.mode)}. The loss is computed only at the chosen positions.</div>"
        f'<div style="{_NOTE}">{legend()}</div>'
    )
    return "".join(parts)


def render_tensors(sample: MaskSample) -> str:
    """The (1, T) tensors the model gets, one column per position (scrolls sideways)."""
    cell = "padding:2px 6px;border:1px solid #e5e7eb;text-align:center;font-family:ui-monospace,monospace;font-size:13px"
    rows = [("position", [t.position for t in sample.tokens]), ("token", [t.token for t in sample.tokens]),
            ("input_ids", sample.input_ids), ("labels", sample.labels), ("attention_mask", sample.attention_mask)]
    # the box scrolls sideways (the table never does: a page style may make a table its own scroller), and a box
    # that scrolls is a Tab stop with a name, so a keyboard reaches every column (axe: scrollable-region-focusable)
    out = ['<div class="mask-tensors" role="region" tabindex="0" aria-label="The tensors the model gets, one column '
           'per position (scrolls sideways)" style="overflow-x:auto;max-width:100%">'
           '<table style="border-collapse:collapse;display:table;overflow:visible">']
    for name, values in rows:
        tds = "".join(
            f'<td style="{cell};background:{COLOURS[t.action] if t.chosen else "transparent"}">{html.escape(str(v))}</td>'
            for t, v in zip(sample.tokens, values)
        )
        out.append(f'<tr><th style="{cell};text-align:left;background:#f3f4f6">{name}</th>{tds}</tr>')
    out.append("</table></div>")
    out.append(f'<div style="{_NOTE}"><code>labels</code> hold the original id where a token was chosen '
               "and −100 (ignored by the loss) everywhere else; the attention mask is all ones: no padding.</div>")
    return "".join(out)


def _strip(sample: MaskSample, label: str, faded: bool) -> str:
    cells = []
    for t in sample.tokens:
        bg = SPECIAL_BG if t.special else COLOURS[t.action]
        mark = {"mask": "M", "random": "R", "keep": "K"}.get(t.action, "")
        title = f"{t.token} → {t.input_token}" if t.chosen else t.token
        cells.append(f'<span title="{html.escape(title)}" style="display:inline-block;width:15px;height:18px;'
                     f'margin-right:1px;background:{bg};border:1px solid #d1d5db;font-size:10px;line-height:18px;'
                     f'text-align:center;vertical-align:middle">{mark}</span>')
    # a repeat's cells are faded, its label is not: text stays readable (axe: colour contrast 4.5:1)
    opacity = ' style="opacity:0.55"' if faded else ""
    return (f'<div style="white-space:nowrap"><span style="display:inline-block;width:92px;'
            f'font-size:12px;color:#374151">{html.escape(label)}</span><span{opacity}>{"".join(cells)}</span></div>')


def render_epochs(comp: EpochComparison) -> str:
    """One strip per epoch under each scheme; static strips that repeat an earlier epoch are faded."""
    n = comp.static_copies
    static = [_strip(r.static, f"ep {r.epoch} · copy {r.static_copy}", r.epoch > n) for r in comp.rows]
    dynamic = [_strip(r.dynamic, f"epoch {r.epoch}", False) for r in comp.rows]
    head = "font-weight:600;margin:4px 0"

    def column(title: str, body: list[str]) -> str:
        return (f'<div style="flex:1 1 320px;min-width:0;overflow-x:auto"><div style="{head}">{title}</div>'
                f'{"".join(body)}</div>')

    summary = (
        f'<div style="margin-bottom:6px"><b>Static</b> ({n} copies written once, as the original BERT data '
        f"did): <b>{comp.distinct_static}</b> distinct masked inputs in {len(comp.rows)} epochs"
        + (f" — the same {n} again and again (faded: a repeat)" if len(comp.rows) > n else "")
        + f". <b>Dynamic</b> (what this engine does): <b>{comp.distinct_dynamic}</b> distinct.</div>"
    )
    return (summary + '<div class="mask-epochs" style="display:flex;flex-wrap:wrap;gap:16px">'
            + column(f"Static masking (N = {n})", static) + column("Dynamic masking", dynamic) + "</div>"
            + f'<div style="{_NOTE}">M = [MASK], R = random token, K = kept; hover or tap a cell for the token.</div>'
            + f'<div class="mask-arithmetic" style="margin-top:8px">{static_arithmetic_html(n, len(comp.rows))}</div>')


def times_each_mask_seen(copies: int, epochs: int) -> float:
    """Static masking: how often the model sees each of the ``copies`` masks in ``epochs`` epochs."""
    return epochs / copies


def static_arithmetic_html(copies: int = 10, epochs: int = 40) -> str:
    """The original data's arithmetic, and the answer to "is it two for-loops?"."""
    seen = times_each_mask_seen(copies, epochs)
    return (
        f"<b>The arithmetic.</b> {copies} masked copies × {epochs} epochs: each sequence is seen {epochs} times, "
        f"so each of its {copies} masks is seen {epochs} / {copies} = <b>{seen:g} times</b>. (The original BERT: "
        "<code>dupe_factor = 10</code> and about 40 epochs, so each mask 4 times — RoBERTa's count.)<br>"
        "<b>Is it two for-loops?</b> For static masking, yes — at two different times. Once, when the data is "
        "written: <code>for copy in range(10): for sentence in corpus: write(mask(sentence))</code>. Then "
        "training: <code>for epoch in range(40): for batch in data: train(batch)</code> — the masks never change "
        "during training. Dynamic masking is one loop: <code>for epoch: for batch: train(mask(batch))</code>, "
        "a fresh mask every time a sequence comes round."
    )


def rates_figure(stats: RateStats) -> go.Figure:
    """Setting vs measured rate, with ±2 standard errors on the measured bars."""
    names = [r.name for r in stats.rates]
    fig = go.Figure([
        go.Bar(name="expected", x=names, y=[r.setting for r in stats.rates], marker_color="#9ca3af"),
        go.Bar(name="measured", x=names, y=[r.measured for r in stats.rates], marker_color="#4f46e5",
               error_y={"type": "data", "array": [2 * r.std_error for r in stats.rates]},
               text=[f"{r.measured:.3f}" for r in stats.rates], textposition="outside"),
    ])
    fig.update_layout(
        title=f"Setting vs measured, {stats.draws} draws",
        barmode="group", yaxis={"range": [0, 1.05], "title": "rate"}, height=380,
        margin={"l": 50, "r": 10, "t": 50, "b": 90}, legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right",
                                                                 "yanchor": "bottom"},
    )
    return fig


def rates_markdown(stats: RateStats) -> str:
    # "expected": the settings, and for a fixed count the chosen fraction it makes exact (k of the tokens that can be
    # chosen: 0.222 read as a "setting" of 0.15 that did not hold)
    table = md_table(["rate", "expected", "measured", "± s.e."],
                     [[r.name, f"{r.setting:.3f}", f"{r.measured:.3f}", f"{r.std_error:.3f}"] for r in stats.rates])
    return (f"*{stats.mode}.* {stats.draws} draws of {stats.n_tokens} maskable tokens: *chosen* is of the tokens; "
            "*[MASK]*, *random* and *kept* are of the chosen.\n\n" + table)


def render_pairs(pairs: NspPairs) -> str:
    """Each pair as chips: sentence A (segment 0) blue, B (segment 1) yellow, specials dark, its label."""
    out = [f'<div style="{_NOTE};margin-bottom:6px">{len(pairs.pairs)} pairs of at most {pairs.seq_len} tokens, '
           f"whole sentences from {html.escape(pairs.source)} ({pairs.n_documents} documents).</div>"]
    for p in pairs.pairs:
        ok = p.label == 0
        badge = (f'<span class="nsp-label" style="display:inline-block;padding:2px 8px;border-radius:10px;'
                 f'font-weight:600;background:{"#dcfce7" if ok else "#fee2e2"};color:{"#166534" if ok else "#991b1b"}">'
                 f"{p.label_name} (label {p.label})</span>")
        where = "B continues A" if ok else f"B comes from document {p.b_block + 1}"
        chips = []
        for tok, seg in zip(p.tokens, p.token_type_ids):
            title = f"segment {seg}"
            if tok in ("[CLS]", "[SEP]"):
                chips.append(_chip(tok, SPECIAL_BG, "#111827", title, f"color:{SPECIAL_FG};font-size:12px;"))
            else:
                chips.append(_chip(tok, SEGMENT_BG[seg], "#9ca3af", title, "font-size:12px;margin-left:3px;"))
        out.append(f'<div class="nsp-pair" style="margin:10px 0;line-height:1.8">{badge} '
                   f'<span style="font-size:13px;color:#4b5563">document {p.block + 1} · {where}</span><br>'
                   f'{"".join(chips)}</div>')
    out.append(f'<div style="{_NOTE}">Blue: sentence A, segment id 0 (with [CLS] and the first [SEP]); '
               "yellow: sentence B, segment id 1 (with the last [SEP]).</div>")
    return "".join(out)


def nsp_markdown(pred: NspPrediction) -> str:
    if not pred.available:
        return f"> ⚠️ **No NSP head.** {pred.message}"
    verdict = "IsNext" if pred.p_is_next >= 0.5 else "NotNext"
    return (f"**P(IsNext) = {pred.p_is_next:.3f}** · P(NotNext) = {1 - pred.p_is_next:.3f} → the head says "
            f"**{verdict}** ({literal(pred.model_name)}).\n\nWhat it read: {html_code(' '.join(pred.tokens))}")

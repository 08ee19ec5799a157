"""Render a token table as coloured WordPiece chips (HTML with inline styles, no JavaScript).

Pieces of one word share a colour and sit flush against each other, joined by a bar;
special tokens are dark; [UNK] is red; hovering a chip shows its id, position and segment.
"""

from __future__ import annotations

import html

from bertdemo.explore.tokens import TokenTable

# Soft backgrounds, cycled per word; sentence B uses the second palette so segments read apart.
_PALETTE_A = ["#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa"]
_PALETTE_B = ["#ccfbf1", "#e9d5ff", "#fef9c3", "#cffafe", "#fecdd3", "#d9f99d"]
_CHIP = (
    "display:inline-block;padding:3px 7px;margin:6px 0 0 0;font-family:ui-monospace,monospace;"
    "font-size:15px;line-height:1.5;color:#111827;border:1px solid #9ca3af;"
)


def _chip_style(row, word_counter: int) -> str:
    if row.is_special:
        return _CHIP + "background:#374151;color:#f9fafb;border-color:#111827;border-radius:6px;margin-left:8px;"
    if row.is_unknown:
        return _CHIP + "background:#fecaca;border-color:#dc2626;border-radius:6px;margin-left:8px;"
    palette = _PALETTE_B if row.sentence == 1 else _PALETTE_A
    style = _CHIP + f"background:{palette[word_counter % len(palette)]};"
    if row.is_continuation:  # glued to the previous piece of the same word
        return style + "margin-left:0;border-left:3px solid #6b7280;border-radius:0 6px 6px 0;"
    return style + "margin-left:8px;border-radius:6px;"


def render_chips(table: TokenTable) -> str:
    """HTML chips for every shown token, with a legend."""
    parts = ['<div class="token-chips" style="line-height:2.2">']
    word_counter = -1
    for row in table.rows:
        if not row.is_special and not row.is_continuation:
            word_counter += 1
        title = f"id {row.id} · position {row.position} · segment {row.segment}"
        if row.start is not None:
            title += f" · chars {row.start}–{row.end}"
        parts.append(
            f'<span class="token-chip" data-id="{row.id}" title="{html.escape(title)}" '
            f'style="{_chip_style(row, word_counter)}">{html.escape(row.token)}</span>'
        )
    parts.append("</div>")
    parts.append(
        '<div style="margin-top:10px;font-size:13px;color:#4b5563">'
        "Hover a chip for its id. Pieces of one word share a colour and are joined "
        "(<code>##</code> marks a piece that continues a word). Dark chips are special tokens; "
        "red chips are <code>[UNK]</code>.</div>"
    )
    return "".join(parts)


def render_stats(table: TokenTable) -> str:
    """Counts as Markdown, with notices (too long, unknown tokens)."""
    lines = [
        f"**{table.n_tokens}** tokens (specials included) · **{table.n_words}** words · "
        f"**{table.n_split_words}** words split into pieces · **{table.n_unknown}** unknown",
    ]
    lines += [f"> ⚠️ {note}" for note in table.notices]
    return "\n\n".join(lines)


TABLE_HEADERS = ["position", "token", "id", "segment", "attention mask", "word", "chars"]


def table_rows(table: TokenTable) -> list[list]:
    """Rows for the token dataframe (word index and span are blank for special tokens)."""
    return [
        [
            r.position,
            r.token,
            r.id,
            r.segment,
            r.attention_mask,
            "" if r.word_index is None else (f"B{r.word_index}" if r.sentence == 1 else str(r.word_index)),
            "" if r.start is None else f"{r.start}–{r.end}",
        ]
        for r in table.rows
    ]

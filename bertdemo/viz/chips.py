"""Render a token table as coloured WordPiece chips (HTML with inline styles), counts and the notebook view.

Pieces of one word share a colour and sit flush against each other, joined by a bar;
special tokens (added or typed) are dark; [UNK] is red; hovering a chip shows its id,
position and segment. Each chip holds its text and its id; the page's Text / IDs toggle
shows one or the other (a CSS rule keyed on ``data-chip-view`` of the document).
"""

from __future__ import annotations

import html

from bertdemo.english import noun_for
from bertdemo.explore.tokens import MAX_CHANGED_SHOWN, TokenTable
from bertdemo.viz.text import md_code

# Soft backgrounds, cycled per word; sentence B uses the second palette so segments read apart.
_PALETTE_A = ["#dbeafe", "#fde68a", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa"]
_PALETTE_B = ["#ccfbf1", "#e9d5ff", "#fef9c3", "#cffafe", "#fecdd3", "#d9f99d"]
_INK, _SPECIAL_INK = "#111827", "#f9fafb"
_CHIP = (
    "display:inline-block;padding:3px 7px;margin:6px 0 0 0;font-family:ui-monospace,monospace;"
    "font-size:15px;line-height:1.5;color:#111827;border:1px solid #9ca3af;"
)
# Text / IDs toggle: the page sets data-chip-view="ids" on <html>; chips show their id instead.
_VIEW_CSS = (
    "<style>.token-chip .chip-id{display:none}"
    "html[data-chip-view=ids] .token-chip .chip-id{display:inline}"
    "html[data-chip-view=ids] .token-chip .chip-text{display:none}</style>"
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
    parts = [_VIEW_CSS, '<div class="token-chips" style="line-height:2.2">']
    word_counter = -1
    for row in table.rows:
        if not row.is_special and not row.is_continuation:
            word_counter += 1
        ink = f"color:{_SPECIAL_INK if row.is_special else _INK}"  # on the text itself: page styles can't recolour it
        title = f"id {row.id} · position {row.position} · segment {row.segment}"
        if row.start is not None:
            title += f" · chars {row.start}–{row.end}"
        parts.append(
            f'<span class="token-chip" data-id="{row.id}" title="{html.escape(title)}" '
            f'style="{_chip_style(row, word_counter)}"><span class="chip-text" style="{ink}">{html.escape(row.token)}'
            f'</span><span class="chip-id" style="{ink}">{row.id}</span></span>'
        )
    parts.append("</div>")
    parts.append(
        '<div style="margin-top:10px;font-size:13px;color:#4b5563">'
        "Hover or tap a chip for its id. Pieces of one word share a colour and are joined "
        "(<code>##</code> marks a piece that continues a word). Dark chips are special tokens; "
        "red chips are <code>[UNK]</code>.</div>"
    )
    return "".join(parts)


def _count(n: int, noun: str, plural_noun: str | None = None) -> str:
    return f"**{n:,}** {noun_for(n, noun, plural_noun)}"


def render_stats(table: TokenTable) -> str:
    """Counts as Markdown, read as English, with notices (too long, unknown tokens, normalised text)."""
    lines = [
        f"{_count(table.n_tokens, 'token')} (specials included) · {_count(table.n_words, 'word')} · "
        f"{_count(table.n_split_words, 'word')} split into pieces · **{table.n_unknown:,}** unknown",
    ]
    lines += [f"> ⚠️ {note}" for note in table.notices]
    if table.typed_sep:
        lines.append("> ℹ️ The `[SEP]` you typed starts sentence B (segment 1), as in every view of this app.")
    if table.changed:
        shown = table.changed[:MAX_CHANGED_SHOWN]
        more = len(table.changed) - len(shown)
        words = ", ".join(f"{md_code(typed)} → {md_code(read)}" for typed, read in shown)
        lines.append(
            f"> ℹ️ This tokenizer changes the text before splitting it (lowercased, accents stripped; "
            f"{table.n_normalised:,} {noun_for(table.n_normalised, 'word')} changed). It reads {words}"
            + (f", and {more:,} more" if more else "")
        )
    return "\n\n".join(lines)


def notebook_view(table: TokenTable) -> str:
    """The encoding as a notebook prints ``tokenizer(text)``: input_ids, token_type_ids, attention_mask."""
    enc = table.encoding()
    body = ",\n ".join(f"'{key}': {values}" for key, values in enc.items())
    text = "{" + body + "}"
    if table.truncated:
        text += f"\n# only the first {table.max_length:,} of {table.n_tokens:,} tokens"
    return text


TABLE_HEADERS = ["position", "token", "input_ids", "token_type_ids", "attention_mask", "word", "chars"]


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

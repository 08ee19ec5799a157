"""Small text helpers every drawing module shares: Markdown tables with escaped cells, inline code
in Markdown and in HTML, bold. Counts read as English live in :mod:`bertdemo.english`."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Sequence


def md_cell(text: object) -> str:
    """Any value safe inside a Markdown table cell: every character Markdown or HTML reads as markup (pipes,
    backticks, emphasis, links, tags) written as an HTML entity (:func:`literal`)."""
    return literal(text)


class Code(str):
    """A table cell shown as inline code (a token, a name): escaped like any other cell."""


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table whose every cell is escaped with :func:`md_cell` (user text cannot break it);
    :class:`Code` cells are shown as inline code."""
    def cell(value: object) -> str:
        return f"<code>{md_cell(value)}</code>" if isinstance(value, Code) else md_cell(value)

    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(cell(c) for c in cells) + " |"

    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)])


def md_code(text: str) -> str:
    """Inline code in Markdown, shown as typed: fenced by one backtick more than the longest run inside it,
    with a space each side when a backtick or a space would otherwise meet the fence (CommonMark strips
    one space each side)."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# characters Markdown (links, images, emphasis, code, tables) or HTML read as markup inside a line
_LITERAL = {c: f"&#{ord(c)};" for c in "\\`*_{}[]()!|~<>&\"'"}


def literal(text: object) -> str:
    """User-made text for a Markdown component, shown as typed inside a line: every character Markdown
    or HTML reads as markup there (links, emphasis, code, images, tags) written as an HTML entity."""
    return "".join(_LITERAL.get(c, c) for c in str(text))


# the inline tags the page's Markdown carries (html_code's <code>, line breaks, emphasis): dropped for a plain reader
_INLINE_TAG = re.compile(r"</?(?:code|b|strong|em|i|br|span|small|sub|sup|kbd)\b[^<>]*>")


def plain_text(markup: str) -> str:
    """What the page shows as Markdown (:func:`literal`'s entities, :func:`html_code`'s tags), for a reader of plain
    text such as an API caller: the inline tags dropped, the entities back to their characters (so a learner's
    "(30 copies)" reads so, not "&#40;30 copies&#41;"); Markdown's own marks (``**``) stay."""
    return html.unescape(_INLINE_TAG.sub("", markup))


def html_code(text: object) -> str:
    """User-made text (run ids, file names) as inline code in HTML: shown literally, never as markup
    (Markdown still reads links and emphasis between HTML tags, so those characters are entities too)."""
    return f"<code>{literal(text)}</code>"


def plotly_text(text: object) -> str:
    """User-made text for a Plotly label (a trace name, a marker's text, a hover): Plotly reads its own
    pseudo-HTML there (links, <b>, <span style>), so ``&``, ``<`` and ``>`` are written as entities,
    which Plotly shows as the characters."""
    return html.escape(str(text), quote=False)


def md_bold(text: str) -> str:
    """``text`` in bold Markdown; as an HTML tag when it starts or ends with punctuation, where Markdown's ``**``
    is not read as bold against other text with no space between ("首都**,**です" was shown with its asterisks)."""
    if text and {unicodedata.category(text[0])[0], unicodedata.category(text[-1])[0]} & {"P", "S"}:
        return f"<strong>{text}</strong>"
    return f"**{text}**"

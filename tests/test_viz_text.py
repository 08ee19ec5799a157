"""Text helpers of the drawing modules: user text cannot break a Markdown table or turn into markup."""

from __future__ import annotations

import html

from markdown_it import MarkdownIt

from bertdemo.english import plural
from bertdemo.viz.text import Code, html_code, md_code, md_table


def test_md_table_escapes_every_cell_and_keeps_its_shape():
    table = md_table(["token", "note"], [[Code("|"), "**bold** <b>x</b> [a](https://e.example)"], [Code("a`b"), 3]])
    lines = table.splitlines()
    assert lines[:2] == ["| token | note |", "|---|---|"]
    assert all(line.count(" | ") == 1 for line in lines[2:])  # a pipe in a cell is no column border
    assert "<b>" not in table and "**" not in table and "`" not in table and "](" not in table  # no link either
    assert lines[2].startswith("| <code>&#124;</code> |")


def test_code_and_counts():
    read = MarkdownIt().renderInline  # CommonMark, as the page's Markdown reads it
    for typed in ("a`b", "`", "``", "` x", "x ", "it's", "[MASK]", "*a*"):
        assert read(md_code(typed)) == f"<code>{html.escape(typed, quote=False)}</code>", typed  # shown as typed
    assert html_code("<x>") == "<code>&#60;x&#62;</code>" and html_code("run-1.txt") == "<code>run-1.txt</code>"
    assert plural(1, "word") == "1 word" and plural(20002, "token") == "20,002 tokens"


def test_user_text_in_a_status_line_is_shown_as_typed_never_as_markup():
    from dataclasses import replace

    from bertdemo.pretrain.metrics import RunSnapshot
    from bertdemo.viz.run_curves import status_markdown
    from bertdemo.viz.text import html_code, literal

    name = "[click me](../../gradio_api/file=secret) ![x](y) *b* `c` <img src=x onerror=alert(1)>.txt"
    shown = html_code(name)
    for markup in ("[", "](", "*", "`", "<img", "!["):
        assert markup not in shown[len("<code>"):-len("</code>")]
    assert literal("it's <b> & 'c'") == "it&#39;s &#60;b&#62; &#38; &#39;c&#39;"
    snap = replace(RunSnapshot(), run_id="r1", corpus=name, status="running", message="**bold** [l](x)")
    line = status_markdown(snap)
    assert "](" not in line and "<img" not in line and "**bold**" not in line

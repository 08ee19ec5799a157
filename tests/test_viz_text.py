"""Text helpers of the drawing modules: user text cannot break a Markdown table or turn into markup."""

from __future__ import annotations

from bertdemo.viz.text import Code, html_code, md_code, md_table, plural


def test_md_table_escapes_every_cell_and_keeps_its_shape():
    table = md_table(["token", "note"], [[Code("|"), "**bold** <b>x</b>"], [Code("a`b"), 3]])
    lines = table.splitlines()
    assert lines[:2] == ["| token | note |", "|---|---|"]
    assert all(line.count(" | ") == 1 for line in lines[2:])  # a pipe in a cell is no column border
    assert "<b>" not in table and "**" not in table and "`" not in table
    assert lines[2].startswith("| <code>&#124;</code> |")


def test_code_and_counts():
    assert md_code("a`b") == "`a'b`"
    assert html_code("<x>") == "<code>&lt;x&gt;</code>"
    assert plural(1, "word") == "1 word" and plural(20002, "token") == "20,002 tokens"

"""Deep links: what a URL's query opens, every value checked like any input."""

from __future__ import annotations

from bertdemo.ui.deep_links import MAX_LINK_TEXT, parse_link


def test_a_tab_a_sentence_and_a_run():
    link = parse_link({"tab": "attention", "text": " The cat sat. ", "run": "run-20250101-abc"})
    assert (link.tab, link.text, link.model, link.problems) == (
        "attention", "The cat sat.", "run:run-20250101-abc/checkpoint", [])


def test_a_step_opens_the_learning_path():
    link = parse_link({"step": "loss", "text": "Paris is nice."})
    assert (link.tab, link.step) == ("learn", "loss")


def test_bad_values_are_named_and_left_out():
    link = parse_link({"tab": "admin", "text": "x" * (MAX_LINK_TEXT + 1), "step": "zzz", "run": "../../etc"})
    assert (link.tab, link.text, link.step, link.model) == (None, None, None, None)
    assert len(link.problems) == 4 and "unknown tab 'admin'" in link.problems[0]
    assert parse_link({"model": "a" * 5000}).model is None
    assert parse_link({}) == parse_link({"tab": ""})

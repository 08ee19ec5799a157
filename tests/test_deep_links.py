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
    # by the number the page shows ("Step 2 of 22"), as a learner copies it
    from bertdemo.learn.steps import STEP_KEYS

    assert (parse_link({"step": "2"}).step, parse_link({"step": str(len(STEP_KEYS))}).step) == (STEP_KEYS[1], STEP_KEYS[-1])
    for outside in ("0", str(len(STEP_KEYS) + 1)):
        assert parse_link({"step": outside}).step is None
        assert f"a number from 1 to {len(STEP_KEYS)}" in parse_link({"step": outside}).problems[0]


def test_bad_values_are_named_and_left_out():
    link = parse_link({"tab": "admin", "text": "x" * (MAX_LINK_TEXT + 1), "step": "zzz", "run": "../../etc"})
    assert (link.tab, link.text, link.step, link.model) == (None, None, None, None)
    assert len(link.problems) == 4 and "unknown tab 'admin'" in link.problems[0]
    assert parse_link({"model": "a" * 5000}).model is None
    assert parse_link({}) == parse_link({"tab": ""})


def test_a_class_link_opens_the_class_tab_where_its_user_acts():
    """D16: the join link opens on the Class tab with the nickname box ready beside Join, the teacher link on the
    teacher's view (not on the Learn tab, which then computes no first answer)."""
    from bertdemo.ui.deep_links import CLASS_FOCUS, opens_on_learn

    join, teacher = parse_link({"class": "ABC234"}), parse_link({"teacher": "k" * 32})
    assert (join.tab, join.focus, teacher.tab, teacher.focus) == ("class", "class-join", "class", "class-teacher")
    assert CLASS_FOCUS["class-join"]["type"] == "class-nickname"
    assert not opens_on_learn(join) and not opens_on_learn(teacher)
    assert parse_link({"class": "ABC234", "tab": "attention"}).tab == "attention"  # a tab named: that tab
    assert parse_link({"tab": "class"}).tab == "class"

"""The Share button's link: the view on screen (tab, sentence, model or run, Learn step) as a query that
the deep-link parser reads back exactly; and a link's model checked once, before the page uses it."""

from __future__ import annotations

from urllib.parse import parse_qsl

from bertdemo.context import AppContext
from bertdemo.ui.deep_links import checked_model, link_query, parse_link


def _read_back(query: str):
    assert query.startswith("?")
    return parse_link(dict(parse_qsl(query[1:])))


def test_the_link_of_a_view_opens_that_view():
    query = link_query("attention", "  The cat sat & purred = 100% ?  ", "run:run-20260101-abc/checkpoint")
    assert query == "?tab=attention&text=The+cat+sat+%26+purred+%3D+100%25+%3F&run=run-20260101-abc"
    link = _read_back(query)
    assert (link.tab, link.text, link.model, link.problems) == (
        "attention", "The cat sat & purred = 100% ?", "run:run-20260101-abc/checkpoint", [])
    link = _read_back(link_query("learn", "Paris is nice.", "bert-base-uncased", "loss"))
    assert (link.tab, link.step, link.text, link.model) == ("learn", "loss", "Paris is nice.", "bert-base-uncased")
    link = _read_back(link_query("pretrain", None, "run:run-1/steps/step-20"))  # an earlier step: by its name
    assert (link.tab, link.text, link.model) == ("pretrain", None, "run:run-1/steps/step-20")


def test_a_step_is_only_kept_on_learn_and_an_unknown_tab_is_left_out():
    assert link_query("fill-mask", "Hi [MASK].", None, "loss") == "?tab=fill-mask&text=Hi+%5BMASK%5D."
    assert link_query("admin", "", None) == "?"


def test_an_unknown_run_is_named_once_and_the_box_keeps_its_model(tmp_path):
    ctx = AppContext.for_tests(tmp_path, public=True)
    named, problems = checked_model(ctx.models, "run:run-gone/checkpoint", set())
    assert named is None
    assert problems == ["the model 'run:run-gone/checkpoint' cannot be used here (There is no run 'run-gone/checkpoint'"
                        " on this server (deleted?): pick one from the list); the page uses the model in the Model "
                        "box instead"]
    assert checked_model(ctx.models, "bert-base-uncased", {"bert-base-uncased"}) == ("bert-base-uncased", [])
    assert checked_model(ctx.models, None, set()) == (None, [])

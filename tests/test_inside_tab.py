"""What a click asks for, in order, as the page gets it: Inside BERT's Look inside (bertdemo/ui/inside_tab.py), and every
view whose code panel refreshes on its button.

The page sends the events of one click one after the other, each once the one before has answered and
its outputs are drawn: the sections' answer goes first, the "Show the code" panel's refresh after it.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def page_config(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("app"))).get_config_file()


def test_look_inside_asks_for_the_sections_before_the_code_panel(page_config):
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    on_click = [dep for dep in page_config["dependencies"]
                if (ids["in-run"], "click") in [tuple(target) for target in dep["targets"]]]
    assert [dep["outputs"][:2] for dep in on_click] == [[ids["in-emb-info"], ids["in-emb-plot"]], [ids["in-code"]]]
    # the code panel still closes the tab, under the five sections
    layout = {c["id"]: c for c in page_config["components"]}

    def find(node):
        if layout.get(node["id"], {}).get("props", {}).get("id") == "inside":
            return node
        return next((hit for child in node.get("children") or [] if (hit := find(child))), None)

    shown = [layout[child["id"]]["props"] for child in find(page_config["layout"])["children"]
             if layout[child["id"]]["type"] != "state"]
    assert [p.get("elem_id") or p.get("label") for p in shown[-2:]] == ["in-section-anatomy", "Show the code"]


@pytest.mark.parametrize("button, first_output, code", [
    ("in-run", "in-emb-info", "in-code"), ("att-run", "att-heatmap", "att-code"),
    ("fm-run", "fm-plot", "fm-code"), ("tok-run", "tok-chips", "tok-code")])
def test_every_views_button_asks_for_its_picture_before_its_code_panel(page_config, button, first_output, code):
    """The page waits for each of a click's events to be answered and drawn before it sends the next: a code
    panel's refresh registered first kept the picture waiting (about 45 ms a click)."""
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    on_click = [dep["outputs"] for dep in page_config["dependencies"]
                if (ids[button], "click") in [tuple(target) for target in dep["targets"]]]
    assert ids[first_output] in on_click[0] and on_click[-1] == [ids[code]]

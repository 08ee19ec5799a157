"""The Inside BERT tab as the page gets it (bertdemo/ui/inside_tab.py): what a click on Look inside asks for.

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

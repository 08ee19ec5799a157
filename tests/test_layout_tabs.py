"""The page's gr.Tabs holds only tabs.

Anything else directly under gr.Tabs (even an invisible gr.State) shifts the index Gradio's frontend
gives every later tab, and such a tab registered itself a second time when first opened: the tab bar
showed "Pretrain" twice. The browser check is in tests/e2e/test_pretrain_browser.py.
"""

from __future__ import annotations


def test_every_child_of_the_tabs_is_a_tab(tmp_path):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    cfg = build_app(AppContext.for_tests(tmp_path)).get_config_file()
    types = {c["id"]: c["type"] for c in cfg["components"]}

    def under_tabs(node):
        for child in node.get("children") or []:
            if types.get(node["id"]) == "tabs":
                yield types[child["id"]]
            yield from under_tabs(child)

    children = list(under_tabs(cfg["layout"]))
    assert children == ["tabitem"] * 6, children

"""Opening the page sends no event of the Pretrain or Fine-tune tab: those tabs read their runs when shown.

Every event a page open sends is a queue round trip the server pays for each visitor (30 phones opening a
teacher's link at once). The page's configuration says which events run when the page opens: the page-load
events, what they chain to (``then`` / ``success``), and the ``change`` events of the components they write.
None of them may have a server handler that reads or writes a component of the Pretrain or Fine-tune tab, and
those tabs' timers start inactive (a timer ticks from the moment its tab is first drawn when it is active).
The browser's count of requests is in tests/e2e/test_run_tab_polls.py.
"""

from __future__ import annotations

import pytest

RUN_TABS = ("pretrain", "finetune")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("page-open"))).get_config_file()


def _inside(layout: dict, wanted: set[int]) -> set[int]:
    """The ids of every component under the layout nodes whose id is in ``wanted``."""
    found: set[int] = set()

    def walk(node: dict, under: bool) -> None:
        under = under or node["id"] in wanted
        if under:
            found.add(node["id"])
        for child in node.get("children") or []:
            walk(child, under)

    walk(layout, False)
    return found


def _page_open_events(config: dict, inside: set[int]) -> list[dict]:
    """The events a page open runs; the ``change`` of a component in the run tabs is not followed: the deep
    link's handler writes two of their boxes only for a link that opens the Pretrain tab (a Learn step's focus)."""
    deps = config["dependencies"]
    opened = {d["id"] for d in deps if any(event == "load" for _, event in d["targets"])}
    while True:
        written = {o for d in deps if d["id"] in opened for o in d["outputs"]} - inside
        more = {d["id"] for d in deps if d["id"] not in opened and (
            d.get("trigger_after") in opened or any(t in written and e == "change" for t, e in d["targets"]))}
        if not more:
            return [d for d in deps if d["id"] in opened]
        opened |= more


def test_opening_the_page_sends_no_event_of_the_run_tabs(config):
    tabs = {c["id"] for c in config["components"] if c["type"] == "tabitem" and c["props"].get("id") in RUN_TABS}
    assert len(tabs) == 2
    inside = _inside(config["layout"], tabs)
    types = {c["id"]: c["type"] for c in config["components"]}
    assert sum(types[i] == "timer" for i in inside) == 2  # each tab's one timer
    events = _page_open_events(config, inside)
    assert len(events) >= 5  # the deep link, the model box, the Learn path's first answer…: the walk finds them
    sent = [d for d in events if d.get("backend_fn")]
    touching = [(d.get("api_name"), sorted((set(d["inputs"]) | set(d["outputs"])) & inside)) for d in sent
                if (set(d["inputs"]) | set(d["outputs"])) & inside]
    link = [(name, ids) for name, ids in touching if name == "open_link"]  # the link's Pretrain boxes (focus "set")
    assert len(link) == 1 and {types[i] for i in link[0][1]} <= {"textbox", "checkbox"}
    assert [t for t in touching if t[0] != "open_link"] == []
    # the one page-open event inside them runs in the page alone: the owner token read from localStorage
    in_page = [d for d in events if not d.get("backend_fn") and set(d["outputs"]) & inside]
    assert len(in_page) == 1 and in_page[0]["js"]
    timers = [c for c in config["components"] if c["id"] in inside and c["type"] == "timer"]
    assert [t["props"]["active"] for t in timers] == [False, False]


def test_each_run_tab_polls_through_one_timer_started_by_its_select(config):
    tabs = {c["props"]["id"]: c["id"] for c in config["components"]
            if c["type"] == "tabitem" and c["props"].get("id") in RUN_TABS}
    deps = config["dependencies"]
    for name, tab in tabs.items():
        inside = _inside(config["layout"], {tab})
        timers = [c["id"] for c in config["components"] if c["id"] in inside and c["type"] == "timer"]
        assert len(timers) == 1, name
        on_select = [d for d in deps if [tab, "select"] in [list(t) for t in d["targets"]]]
        assert len(on_select) == 1 and timers[0] in on_select[0]["outputs"]  # one request draws the tab, sets the timer
        ticks = [d for d in deps if [timers[0], "tick"] in [list(t) for t in d["targets"]]]
        assert len(ticks) == 1 and timers[0] in ticks[0]["outputs"]  # the tick stops it when nothing is live

"""Opening the page sends no event of a tab it does not show: the run tabs read their runs when shown, the Learn
and Attention tabs draw when shown, the Class tab reads a class only for a class link or a member.

Every event a page open sends is a queue round trip the server pays for each visitor (30 phones opening a
teacher's link at once). The page's configuration says which events run when the page opens: the page-load
events, what they chain to (``then`` / ``success``), and the ``change`` events of the components they write.
None of them may have a server handler that reads or writes a component of the Pretrain or Fine-tune tab, and
those tabs' timers start inactive (a timer ticks from the moment its tab is first drawn when it is active).
The browser's count of requests is in tests/e2e/test_run_tab_polls.py.

The Learn tab's first answer, the Attention sliders fitted to the model and the class link's check are sent only
when needed (bertdemo/ui/first_show.py): each hangs on a hidden box's change that the page writes when the tab is
shown (or the page opens on it, or the URL has a class to read). The browser's count: tests/e2e/test_tab_first_show.py.
"""

from __future__ import annotations

import pytest

RUN_TABS = ("pretrain", "finetune")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("page-open")))


@pytest.fixture(scope="module")
def config(demo):
    return demo.get_config_file()


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
        assert len(on_select) == 1
        chain = on_select + [d for d in deps if d.get("trigger_after") == on_select[0]["id"]]
        setting = [d for d in chain if timers[0] in d["outputs"]]
        assert len(setting) == 1  # one request draws the tab's parts and sets the timer
        assert len(chain) == (2 if name == "pretrain" else 1)  # the Pretrain tab's status line first (test below)
        ticks = [d for d in deps if [timers[0], "tick"] in [list(t) for t in d["targets"]]]
        assert len(ticks) == 1 and timers[0] in ticks[0]["outputs"]  # the tick sets its pace to what is live


def _by_elem_id(config: dict) -> dict[str, int]:
    return {c["props"]["elem_id"]: c["id"] for c in config["components"] if c["props"].get("elem_id")}


def _tab_inside(config: dict, tab_id: str) -> set[int]:
    tab = [c["id"] for c in config["components"] if c["type"] == "tabitem" and c["props"].get("id") == tab_id]
    assert len(tab) == 1, tab_id
    return _inside(config["layout"], set(tab))


# per tab: the hidden box whose change sends the tab's first work, and that work (ui/first_show.py, class_tab.py)
DEFERRED = {"learn": ("learn-shown", "answer_shown"), "attention": ("attention-shown", "shape_sliders"),
            "class": ("class-to-read", "read_link")}


@pytest.mark.parametrize("tab", sorted(DEFERRED))
def test_a_tabs_page_open_work_hangs_on_one_box_the_page_writes_only_when_needed(config, tab):
    """The Learn tab's first answer, the Attention sliders fitted to the model and the class link's check: a page
    open reaches each only through its box's change, and the only server event that writes the box at page open is
    the deep link (for Learn: only when the page opens on Learn, test below); the rest are the page's own JS —
    the tab's select and the Model box's change while the tab is on screen, or the class link's check of the URL."""
    box_id, work = DEFERRED[tab]
    box = _by_elem_id(config)[box_id]
    inside = _tab_inside(config, tab)
    events = _page_open_events(config, set())  # every page-open event and what it sets off, none left out
    sent = [d for d in events if d.get("backend_fn")]
    assert [[list(t) for t in d["targets"]] for d in sent if d.get("api_name") == work] == [[[box, "change"]]]
    # the box left alone, a page open sends nothing that draws the tab (the deep link sets its sentence and step
    # boxes only): neither the work nor what its drawing sets off (the sliders' redraw)
    types = {c["id"]: c["type"] for c in config["components"]}
    unshown = [d for d in _page_open_events(config, {box}) if d.get("backend_fn")]
    assert len(unshown) >= 2 and work not in {d.get("api_name") for d in unshown}
    drawing = [d.get("api_name") for d in unshown if d.get("api_name") != "open_link"
               and any(o in inside and types[o] != "state" for o in d["outputs"])]
    assert drawing == []
    writers = [d for d in events if box in d["outputs"]]
    assert [d.get("api_name") for d in writers if d.get("backend_fn")] == (["open_link"] if tab == "learn" else [])
    assert all(d["js"] for d in writers if not d.get("backend_fn"))
    assert [t for d in config["dependencies"] if box in d["outputs"] and not d.get("backend_fn")
            for t in d["targets"]]  # written in the page: by a select, the Model box's change, or the page's load


@pytest.mark.parametrize("query, opens_learn", [
    ({}, True), ({"tab": "learn"}, True), ({"step": "loss"}, True), ({"tab": "nowhere"}, True),
    ({"tab": "fill-mask", "text": "Hi [MASK]."}, False), ({"tab": "attention"}, False), ({"tab": "pretrain"}, False),
    ({"class": "ABC123"}, False), ({"teacher": "k" * 32}, False),  # a class's links open the Class tab (D16)
])
def test_the_learn_tabs_first_answer_is_asked_only_when_the_page_opens_on_it(query, opens_learn):
    from bertdemo.ui.deep_links import opens_on_learn, parse_link

    assert opens_on_learn(parse_link(query)) is opens_learn


def test_the_pretrain_tab_answers_its_status_line_before_its_curves(config):
    """The tab's first request when shown draws its status line alone (from memory: the placeholder "Reading this
    server's pretraining runs…" gives way at once); the request chained after it draws the curves and run lists."""
    tab = [c["id"] for c in config["components"] if c["type"] == "tabitem" and c["props"].get("id") == "pretrain"]
    status = _by_elem_id(config)["pt-status"]
    types = {c["id"]: c["type"] for c in config["components"]}
    deps = config["dependencies"]
    on_select = [d for d in deps if [tab[0], "select"] in [list(t) for t in d["targets"]]]
    assert len(on_select) == 1
    assert [types[o] for o in on_select[0]["outputs"]] == ["markdown", "state"]  # the line and what was sent
    assert on_select[0]["outputs"][0] == status
    after = [d for d in deps if d.get("trigger_after") == on_select[0]["id"]]
    assert len(after) == 1 and after[0]["backend_fn"]
    assert status in after[0]["outputs"] and len(after[0]["outputs"]) > 5  # the line again if it moved on, the rest


# the lines that say where a run is, drawn by their tab's poll (ui/tab_poll.py)
RUN_LINES = ("pt-status", "ft-status", "pt-table5-cell", "pt-queue", "ft-queue")


def test_every_event_that_answers_in_a_run_line_is_followed_by_a_draw_that_sends_the_line_again(demo, config):
    """A control's answer in a run's status line (Pause: "Pausing after this step…") can reach the page after a tick
    that already showed the run paused; the poll, believing the page shows the tick's line, then sent nothing while
    the run stood still (CI: the page said "Pausing…" for three minutes). Every event outside the poll that writes
    a run line (the status, a Table 5 cell's line, the queue line under Start) is followed by the poll's draw
    that sends that line whatever it sent before."""
    lines = {_by_elem_id(config)[elem_id] for elem_id in RUN_LINES}
    fns = list(demo.fns.values())
    polled = [f for f in fns if getattr(f.fn, "__name__", "") in ("tab_first", "tab_shown", "tab_tick")]
    assert lines <= {c._id for f in polled for c in f.outputs}  # each line is the poll's
    writers = [f for f in fns if f not in polled and f.fn is not None and {c._id for c in f.outputs} & lines]
    assert len(writers) >= 14  # start, pause, resume, stop, GPU burst, delete, a Table 5 cell's start and stop…
    uncovered = []
    for f in writers:
        written = {c._id for c in f.outputs} & lines
        drawn_again = {i for g in fns if g._id is not None and g.trigger_after == f._id
                       for i in getattr(g.fn, "drawn_again", ())}
        if not written <= drawn_again:
            uncovered.append(f.api_name)
    assert uncovered == []

"""What a click asks for, as the page gets it: Inside BERT's Look inside (bertdemo/ui/inside_tab.py), and every
view with a "Show the code" panel.

The page sends the events of one click one after the other, each once the one before has answered and
its outputs are drawn, and every event's status changes cost the page a pass over every progress target
it has seen: a view's click is one event, whose answer carries the open code panel's refresh (a closed
panel gets nothing; bertdemo/ui/code_panel.py, ``CodePanel.fold``).
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def page_config(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("app"))).get_config_file()


def test_look_inside_is_one_event_that_answers_the_sections_and_the_code_panel(page_config):
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    on_click = [dep for dep in page_config["dependencies"]
                if (ids["in-run"], "click") in [tuple(target) for target in dep["targets"]]]
    assert len(on_click) == 1
    assert on_click[0]["outputs"][:2] == [ids["in-emb-info"], ids["in-emb-plot"]]
    assert on_click[0]["outputs"][-1] == ids["in-code"]
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
def test_every_views_button_is_one_round_trip_with_its_code_panel_in_it(page_config, button, first_output, code):
    """One event per click: the code panel's refresh, an event of its own after the picture, kept the page
    unsettled about 100 ms longer per click (bench/bench_settle.py)."""
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    on_click = [dep for dep in page_config["dependencies"]
                if (ids[button], "click") in [tuple(target) for target in dep["targets"]]]
    assert len(on_click) == 1
    assert ids[first_output] in on_click[0]["outputs"] and on_click[0]["outputs"][-1] == ids[code]
    # the code box shows no progress of its own (the view's text does)
    assert ids[code] not in (on_click[0]["show_progress_on"] or [])


def test_a_code_panel_is_refreshed_only_by_events_that_read_whether_it_is_open(page_config):
    """Every event that writes a code box reads its panel's open state (or opens the panel): a closed panel is
    never refreshed by a click."""
    by_id = {c["id"]: c for c in page_config["components"]}

    def panels_boxes(node, in_panel=False):
        props = by_id.get(node["id"], {}).get("props", {})
        in_panel = in_panel or "code-panel" in (props.get("elem_classes") or [])
        own = {node["id"]} if in_panel and by_id.get(node["id"], {}).get("type") == "code" else set()
        return own.union(*(panels_boxes(child, in_panel) for child in node.get("children") or []))

    boxes = panels_boxes(page_config["layout"])
    assert len(boxes) >= 8  # every view's panel, the Words tab's three and the training tabs' included
    for dep in page_config["dependencies"]:
        written = boxes.intersection(dep["outputs"])
        if not written:
            continue
        states = [i for i in dep["inputs"] if by_id[i]["type"] == "state"]
        opens = any(event == "expand" for _, event in dep["targets"])
        assert opens or states, dep["targets"]


def test_a_folded_event_answers_the_code_only_while_its_panel_is_open(tmp_path):
    """``CodePanel.fold`` on a real panel: closed, the view's answer alone (nothing for the panel); open, the
    view's answer and the panel's code for the same inputs. An input the view already reads is listed once (the
    page gathers, and the server processes, each listed input at every click); one it does not is added."""
    import gradio as gr

    from bertdemo.context import AppContext
    from bertdemo.ui.code_panel import code_panel

    with gr.Blocks():
        text, model = gr.Textbox(), gr.Textbox()
        shown = gr.Markdown()
        panel = code_panel(AppContext.for_tests(tmp_path), lambda words: f"print({words!r})", [text],
                           uses_model=False)
        both = code_panel(AppContext.for_tests(tmp_path), lambda name, words: f"print({name!r}, {words!r})",
                          [model, text], uses_model=False)
    handler, inputs, outputs = panel.fold(lambda words: words.upper(), [text], [shown])
    assert inputs == [text, panel.opened] and outputs == [shown, panel.box]
    closed = handler("hello", False)
    assert closed[0] == "HELLO" and closed[1] == gr.skip()
    assert handler("hello", True) == ("HELLO", "print('hello')")
    as_dict, _, _ = panel.fold(lambda words: {shown: words}, [text], [shown])
    assert as_dict("hi", False) == {shown: "hi"}
    assert as_dict("hi", True) == {shown: "hi", panel.box: "print('hi')"}
    mixed, inputs, _ = both.fold(lambda words: words.upper(), [text], [shown])
    assert inputs == [text, both.opened, model]  # the view's text is read once, the panel's model added
    assert mixed("hi", True, "bert") == ("HI", "print('bert', 'hi')")


def test_an_attention_click_shows_progress_on_its_text_alone_and_its_lower_figures_wait_for_a_scroll(page_config):
    """The page refreshes the loading status of every component any event has shown progress on, at each status
    message of every event (~120 ms of page CPU per Attention click with thirteen targets); the rollout and the
    token figure, below the first screen, are drawn when the learner scrolls towards them (bench/bench_settle.py)."""
    from bertdemo.ui.attention_tab import LAZY_SCREENS
    from bertdemo.ui.plotly_figure import LAZY_CLASS

    by_elem = {c["props"].get("elem_id"): c for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    on_click = [dep for dep in page_config["dependencies"]
                if (by_elem["att-run"]["id"], "click") in [tuple(target) for target in dep["targets"]]]
    assert len(on_click) == 1
    assert on_click[0]["show_progress_on"] == [by_elem["att-info"]["id"]]
    # the lower figures are still written by the click (their picture follows the new sentence) ...
    assert {by_elem["att-rollout"]["id"], by_elem["att-token-plot"]["id"]} <= set(on_click[0]["outputs"])
    # ... and drawn within half a screen of the viewport; the heatmap at once
    assert LAZY_SCREENS == 0.5
    for elem_id in ("att-rollout", "att-token-plot"):
        assert by_elem[elem_id]["props"]["elem_classes"] == [LAZY_CLASS, f"{LAZY_CLASS}-50"]
    assert by_elem["att-heatmap"]["props"]["elem_classes"] == []


def test_the_deep_link_load_shows_progress_on_the_model_box_alone(page_config):
    """It writes a text box on every tab: each would stay in the page's loading-status pass of every later event."""
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    on_load = [dep for dep in page_config["dependencies"]
               if "load" in [event for _, event in dep["targets"]] and ids["att-text"] in dep["outputs"]]
    assert len(on_load) == 1 and ids["tok-text"] in on_load[0]["outputs"]
    assert on_load[0]["show_progress_on"] == [ids["model-box"]]


@pytest.fixture(scope="module")
def look_inside(tmp_path_factory):
    """Look inside's handler as the page calls it: ``click(text, shown)`` -> ``{elem_id or kind: value}`` and the
    page's shown state after it (the sentence's other inputs as the page starts with them)."""
    from bertdemo import compat
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path_factory.mktemp("look")))
    run = next(c for c in demo.blocks.values() if getattr(c, "elem_id", None) == "in-run")
    [handler] = [f for f in compat.event_handlers(demo) if (run._id, "click") in [tuple(t) for t in f.targets]]
    start = [getattr(c, "value", None) for c in handler.inputs]
    shown_box = [c for c in handler.inputs if type(c).__name__ == "State"][1]  # opened, shown, the code panel's
    text_at = [i for i, c in enumerate(handler.inputs) if getattr(c, "elem_id", None) == "in-text"]

    def click(text: str, shown: dict) -> tuple[dict, dict]:
        args = list(start)
        for i in text_at:
            args[i] = text
        args[handler.inputs.index(shown_box)] = shown
        answer = handler.fn(*args)
        return {getattr(c, "elem_id", None): v for c, v in answer.items()}, answer[shown_box]

    return click


def is_update(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


def test_a_figure_on_screen_gets_its_value_alone_and_a_slider_only_a_change(look_inside):
    """Each property update makes the server build the component and its page configuration again (a figure's
    cost ~5 ms): the first answer shows the figures and sets the sliders' ranges, the next sends what changed."""
    first, shown = look_inside("The capital of France is [MASK].", {})
    assert is_update(first["in-emb-plot"]) and first["in-emb-plot"]["visible"] is True
    assert is_update(first["in-neuron-plot"]) and first["in-neuron-plot"]["visible"] is True
    assert {"in-layer", "in-head", "in-query"} <= set(first)
    tokens = first["in-query"]["maximum"] + 1

    same_length, shown = look_inside("The capital of Spain is [MASK].", shown)  # as many tokens: the same ranges
    assert not is_update(same_length["in-emb-plot"]) and not is_update(same_length["in-neuron-plot"])
    assert same_length["in-emb-plot"].data and same_length["in-neuron-plot"].data  # the figures themselves
    assert not {"in-layer", "in-head", "in-query"} & set(same_length)

    longer, shown = look_inside("The capital of the old kingdom of Spain is [MASK].", shown)
    assert longer["in-query"]["maximum"] == tokens + 4 - 1 and not {"in-layer", "in-head"} & set(longer)

    failed, shown = look_inside(" ".join(["word"] * 80), shown)  # too long: each section says why, its figure hidden
    assert failed["in-emb-plot"] == {"__type__": "update", "visible": False}
    again, _ = look_inside("The capital of France is [MASK].", shown)  # shown again
    assert is_update(again["in-emb-plot"]) and again["in-emb-plot"]["visible"] is True


def test_the_examples_right_word_is_used_for_the_example_alone():
    """Prefilled with "paris", the right-words box scored the learner's own sentence against it (a loss worse than a
    uniform guess, shown as theirs): the example's word is used for the example sentence while the box is empty."""
    from bertdemo.ui.inside_tab import EXAMPLE, right_words

    assert right_words(EXAMPLE, "") == right_words(f"  {EXAMPLE} ", " ") == "paris"
    assert right_words("The cat sat on the [MASK].", "") == ""
    assert right_words(EXAMPLE, "london") == "london"
    from bertdemo.ui.inside_tab import _inside_code

    assert "paris" in _inside_code("m", EXAMPLE, "") and "paris" not in _inside_code("m", "A [MASK] sat.", "")

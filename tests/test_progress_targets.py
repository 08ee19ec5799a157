"""No event of the page shows its progress on a figure, a table, JSON or a container.

Gradio 6's page refreshes the loading status of every progress target of every event that has run
in it, at each status change of any event, finding each in the component tree and copying its
value (and, for a container, every component inside it). So a figure that is a progress target is
copied again at every click in every tab from then on; events name their text as progress targets
instead (``common.progress_on_text``, applied to the built page). Measured in docs/lab/benchmarks.md, "Progress on text".
"""

from __future__ import annotations

import pytest

LIGHT = {"markdown", "html", "textbox", "number", "slider", "dropdown", "checkbox", "radio", "button", "code",
         "file", "downloadbutton", "state", "browserstate"}


@pytest.fixture(scope="module")
def page_config(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("app"))).get_config_file()


def test_every_event_the_page_runs_shows_progress_on_text_only(page_config):
    # a PlotlyFigure is a gr.HTML to gradio ("html"): its props name the class
    types = {c["id"]: "plotlyfigure" if c.get("props", {}).get("component_class_name") == "PlotlyFigure" else c["type"]
             for c in page_config["components"]}
    assert "plotlyfigure" in types.values()
    heavy = []
    for dep in page_config["dependencies"]:
        if not dep["targets"]:  # an API-only endpoint (gr.api): the page never runs it
            continue
        targets = dep["show_progress_on"] if dep["show_progress_on"] is not None else dep["outputs"]
        heavy += [(dep["api_name"], types[i]) for i in targets if types[i] not in LIGHT]
    assert heavy == []


def test_text_outputs_keeps_the_text_and_drops_figures_tables_and_json():
    import gradio as gr

    from bertdemo.ui.common import text_outputs
    from bertdemo.ui.plotly_figure import PlotlyFigure

    with gr.Blocks():
        md, html, plot, table, raw = gr.Markdown(), gr.HTML(), gr.Plot(), gr.Dataframe(), gr.JSON()
        figure = PlotlyFigure(label="A figure")
    assert text_outputs([plot, md, table, html, raw, figure]) == [md, html]
    assert text_outputs([plot, raw, figure]) == []


def test_look_inside_shows_no_loading_status_and_its_sliders_do(page_config):
    # the page's status machinery was a fifth of the page's CPU per "Look inside" (docs/lab/benchmarks.md)
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    by_trigger = {}  # (component, event) -> the first event it triggers (a click also refreshes the code panel)
    for dep in page_config["dependencies"]:
        for target, event in dep["targets"]:
            by_trigger.setdefault((target, event), dep)
    look = by_trigger[(ids["in-run"], "click")]
    assert look["outputs"][:2] == [ids["in-emb-info"], ids["in-emb-plot"]]
    assert look["show_progress"] == "hidden" and look["show_progress_on"] == []
    assert by_trigger[(ids["in-text"], "submit")] is look
    layer = by_trigger[(ids["in-layer"], "release")]
    assert layer["show_progress"] == "full" and layer["show_progress_on"] == [ids["in-layer-info"]]


def _tab_of(page_config) -> dict[int, str]:
    """Each component's top-level tab (its label); "" above the tabs."""
    types = {c["id"]: c["type"] for c in page_config["components"]}
    labels = {c["id"]: c.get("props", {}).get("label") for c in page_config["components"]}
    tab_of = {}

    def walk(node, tab):
        if types.get(node["id"]) == "tabitem" and not tab:
            tab = labels[node["id"]]
        tab_of[node["id"]] = tab
        for child in node.get("children", []):
            walk(child, tab)

    walk(page_config["layout"], "")
    return tab_of


def test_an_event_that_shows_no_progress_and_a_page_load_track_no_status_out_of_sight(page_config):
    # the page keeps, for its life, the status of every target of every event that ran, and at each status message
    # of any event finds each in the tree: a target that shows nothing is pure cost on every later click
    tab_of = _tab_of(page_config)
    assert tab_of[next(c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id") == "pt-status")] \
        == "Pretrain"
    hidden, loads = [], []
    for dep in page_config["dependencies"]:
        targets = dep["show_progress_on"] if dep["show_progress_on"] is not None else dep["outputs"]
        if dep["show_progress"] == "hidden":
            hidden += [(dep["api_name"], t) for t in targets]
        if any(event == "load" for _, event in dep["targets"]):
            loads += [(dep["api_name"], tab_of[t]) for t in targets if tab_of[t] not in ("", "Learn")]
    assert hidden == [] and loads == []


def test_track_less_keeps_what_a_learner_sees():
    import gradio as gr

    from bertdemo.ui.status_targets import track_less

    with gr.Blocks() as demo:
        top = gr.Markdown()
        with gr.Tabs():
            with gr.Tab("First"):
                first = gr.Markdown()
            with gr.Tab("Second"), gr.Row():
                second = gr.Markdown()
        button = gr.Button()
        demo.load(lambda: ("a", "b", "c"), None, [top, first, second])
        demo.load(lambda: "a", None, second, show_progress_on=[top, second])
        button.click(lambda: "b", None, second)  # a learner's click keeps its status, in any tab
        button.click(lambda: "c", None, [first, second], show_progress="hidden")
    assert track_less(demo) == 3
    fns = list(demo.fns.values())
    assert fns[0].show_progress_on == [top, first] and fns[1].show_progress_on == [top]
    assert fns[2].show_progress_on is None and fns[3].show_progress_on == []


def test_opening_inside_bert_shows_its_status_on_the_open_sections_alone(page_config):
    # it computes the sections open at start; a closed section's text would be tracked at every later click for nothing
    ids = {c["props"].get("elem_id"): c["id"] for c in page_config["components"] if c.get("props", {}).get("elem_id")}
    tab = next(c["id"] for c in page_config["components"]
               if c["type"] == "tabitem" and c.get("props", {}).get("label") == "Inside BERT")
    [opening] = [dep for dep in page_config["dependencies"] if [tab, "select"] in [list(t) for t in dep["targets"]]]
    assert opening["show_progress_on"] == [ids["in-emb-info"], ids["in-layer-info"]]
    assert ids["in-lens-info"] in opening["outputs"]  # it still answers the lens when open

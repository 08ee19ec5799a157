"""PlotlyFigure's server side (bertdemo/ui/plotly_figure.py): the values it sends and takes, its page
script and CSS read from the static files, and plotly.js served by the app itself (offline)."""

from __future__ import annotations

import json

import gradio as gr
import numpy as np
import plotly.graph_objects as go
import pytest

from bertdemo.ui import static
from bertdemo.ui.plotly_figure import LAZY_CLASS, NARROW_PX, PlotlyFigure, file_aliases, plotly_js


def test_a_figure_is_sent_as_gr_plot_sends_it_with_its_exact_values():
    with gr.Blocks():
        figure = PlotlyFigure(label="Bars")
    sent = figure.postprocess(go.Figure(go.Bar(x=["a", "b"], y=[0.25, 0.75]), layout={"title": "Two bars"}))
    assert sent["type"] == "plotly"
    drawn = json.loads(sent["plot"])
    assert drawn["data"][0]["type"] == "bar" and drawn["data"][0]["x"] == ["a", "b"]
    assert drawn["layout"]["title"]["text"] == "Two bars"
    spec = {"data": [{"type": "heatmap", "z": np.array([[1, 2], [3, 4]])}], "layout": {"height": np.int64(300)}}
    assert json.loads(figure.postprocess(spec)["plot"]) == {"data": [{"type": "heatmap", "z": [[1, 2], [3, 4]]}],
                                                            "layout": {"height": 300}}
    assert figure.postprocess('{"data":[],"layout":{}}') == {"type": "plotly", "plot": '{"data":[],"layout":{}}'}
    assert figure.postprocess(None) is None
    assert figure.preprocess(sent) == drawn


def test_a_value_that_is_no_figure_is_refused_by_name():
    with gr.Blocks():
        figure = PlotlyFigure()
    with pytest.raises(ValueError, match="not list"):
        figure.postprocess([1, 2])


def test_the_page_gets_the_static_script_and_css_and_plotly_from_this_app():
    with gr.Blocks() as demo:
        PlotlyFigure(label="A figure", elem_id="fig")
    config = next(c for c in demo.get_config_file()["components"] if c["props"].get("elem_id") == "fig")["props"]
    assert config["js_on_load"] == static.read("plotly_figure.js")
    assert config["css_template"] == static.read("plotly_figure.css")
    assert config["component_class_name"] == "PlotlyFigure"
    # from a fixed address: the page names none of the server's folders (it named the install folder, 33 times)
    assert config["head"] == '<script src="bertdemo/plotly.min.js"></script>'
    assert str(plotly_js().parent) not in json.dumps(demo.get_config_file())

    from fastapi.testclient import TestClient

    with TestClient(gr.routes.App.create_app(demo, app_kwargs={"middleware": [file_aliases()]})) as client:
        served = client.get("/bertdemo/plotly.min.js")
        assert served.status_code == 200 and served.content == plotly_js().read_bytes()
        assert client.get("/bertdemo/plotly.js").status_code == 404
        elsewhere = next(p for p in plotly_js().parent.iterdir() if p.is_file() and p.name != "plotly.min.js")
        assert client.get(f"/gradio_api/file={elsewhere}").status_code == 403


def test_a_lazy_figure_is_marked_on_its_block_where_the_page_script_looks_and_an_update_keeps_it():
    with gr.Blocks() as demo:
        PlotlyFigure(elem_id="far", elem_classes="wide", lazy=True, visible=False)
        PlotlyFigure(elem_id="near")
    props = {c["props"].get("elem_id"): c["props"] for c in demo.get_config_file()["components"]}
    assert props["far"]["elem_classes"] == ["wide", LAZY_CLASS] and props["near"]["elem_classes"] == []
    assert f'closest(".{LAZY_CLASS}")' in static.read("plotly_figure.js")
    far = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "far")
    shown = PlotlyFigure(**{**far.constructor_args, "visible": True, "render": False})  # what gr.update builds
    assert shown.elem_classes == ["wide", LAZY_CLASS]


def test_a_static_file_outside_the_folder_is_refused():
    with pytest.raises(ValueError, match="no static file"):
        static.read("../layout.py")


def test_the_page_css_goes_to_one_column_where_the_figures_do():
    assert f"@media (max-width: {NARROW_PX}px)" in static.read("page.css")


def test_the_phone_width_is_one_number_in_the_component_its_script_and_the_page_css():
    """A figure updated through ``gr.update`` is mounted without its ``narrow`` prop, so the script falls back
    to its own number: it must be NARROW_PX, as the page's phone breakpoint is."""
    import re

    from bertdemo.ui import static
    from bertdemo.ui.plotly_figure import NARROW_PX

    fallback = re.search(r"var NARROW = Number\(props\.narrow\) \|\| (\d+);", static.read("plotly_figure.js"))
    breakpoint_ = re.search(r"@media \(max-width: (\d+)px\)", static.read("page.css"))
    assert (int(fallback.group(1)), int(breakpoint_.group(1))) == (NARROW_PX, NARROW_PX)


def test_a_lazy_figure_names_how_near_the_viewport_it_is_drawn_in_hundredths_of_a_screen():
    from bertdemo.ui.plotly_figure import lazy_classes

    assert lazy_classes(False) == [] and lazy_classes(True) == [LAZY_CLASS] and lazy_classes(1) == [LAZY_CLASS]
    assert lazy_classes(0.5) == [LAZY_CLASS, f"{LAZY_CLASS}-50"] and lazy_classes(0) == [LAZY_CLASS, f"{LAZY_CLASS}-0"]
    assert PlotlyFigure(lazy=0.25, render=False).elem_classes == [LAZY_CLASS, f"{LAZY_CLASS}-25"]
    assert f"/(?:^|\\s){LAZY_CLASS}-(\\d+)(?:\\s|$)/" in static.read("plotly_figure.js")  # where the page reads it
    with pytest.raises(ValueError, match="number of screens"):
        lazy_classes(-1)

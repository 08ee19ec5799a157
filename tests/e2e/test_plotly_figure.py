"""The PlotlyFigure component (bertdemo/ui/plotly_figure.py) in headless Chromium, on a small page of
its own: a new figure drawn in place and laid out once, a click on a point sent as a select event, a
grid of subplots stacked into one column on a phone and back in two when the window widens, and a
figure in a closed accordion drawn when the accordion opens, and a row's legend under the lowest panel there.
"""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go
import pytest
from playwright.sync_api import expect
from plotly.subplots import make_subplots

from bertdemo.ui.plotly_figure import NARROW_PX, PlotlyFigure, file_aliases

TIMEOUT_MS = 60_000
GD = "document.querySelector('#grid .js-plotly-plot')"


def grid(n: int) -> go.Figure:
    """Figure n: a heatmap beside a bar chart (one row, two columns), the bars' heights n and 1."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["heat", "bars"])
    fig.add_trace(go.Heatmap(z=[[n, 2], [3, 4]]), 1, 1)
    fig.add_trace(go.Bar(x=["a", "b"], y=[n + 1, 1]), 1, 2)
    return fig.update_layout(title=f"Figure {n}", height=360, margin=dict(l=40, r=40, t=80, b=40))


def legend_row() -> go.Figure:
    """Two line panels side by side with one horizontal legend under the row, no x of its own (as the Fine-tune
    tab's loss and accuracy curves)."""
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Scatter(x=[0, 1], y=[2, 1], name="loss of a run"), 1, 1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0.1, 0.6], name="accuracy of a run"), 1, 2)
    return fig.update_layout(height=360, legend=dict(orientation="h", y=-0.2))


def attention_like() -> go.Figure:
    """The Attention tab's heatmap (bertdemo.viz.heatmaps.attention_heatmap) of a 16-token sentence."""
    import numpy as np

    from bertdemo.explore.attention import AttentionView
    from bertdemo.viz.heatmaps import attention_heatmap

    tokens = ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it", "was", "too",
              "tired", ".", "[SEP]"]
    weights = np.random.default_rng(0).dirichlet(np.ones(16), size=16)
    view = AttentionView(tokens, list(range(16)), tokens, list(range(16)), weights, "Layer 0, head 0", False)
    return attention_heatmap(view)


def runs_like() -> go.Figure:
    """Two titled panels, the second with two lines of one name (as the Fine-tune tab's stored reference: a line a
    seed, one legend entry)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["loss", "accuracy"])
    fig.add_trace(go.Scatter(x=[0, 1], y=[2, 1], name="a run"), 1, 1)
    for seed in (0, 1):
        fig.add_trace(go.Scatter(x=[0, 1], y=[0.1, 0.5 + seed / 10], name="reference", showlegend=seed == 0), 1, 2)
    return fig.update_layout(title="Runs", height=360)


def twin_curve_like() -> dict:
    """The Pretrain tab's held-out loss of the shipped twins along training (bertdemo.viz.twin_curve.curve_spec):
    a legend of three long names under the plot, ``legend.y`` -0.3."""
    from bertdemo.models.twin_curve import read_curve
    from bertdemo.viz.twin_curve import curve_spec

    return curve_spec(read_curve())


def long_axis_title() -> go.Figure:
    """The twins' held-out loss by position (bertdemo.viz.twins.heldout_spec): a long x-axis title above a legend
    under the plot."""
    fig = go.Figure([go.Scatter(x=["1", "2", "3", "4–5"], y=[3.5, 6.3, 5.1, 3.6], name="embedded/twin-mlm (masked LM)"),
                     go.Scatter(x=["1", "2", "3", "4–5"], y=[5.6, 6.7, 5.9, 4.1], name="embedded/twin-ltr")])
    return fig.update_layout(title="Held-out loss by position", height=420, margin=dict(l=60, r=20, t=60, b=60),
                             xaxis=dict(title="position of the word in its sentence (1 = first word)", type="category"),
                             legend=dict(orientation="h", y=-0.25))


@pytest.fixture(scope="module")
def figure_page_url():
    with gr.Blocks() as demo:
        step = gr.Number(0, elem_id="step")
        next_button = gr.Button("Next", elem_id="next")
        figure = PlotlyFigure(grid(0), label="A grid", elem_id="grid")
        picked = gr.Textbox(label="Picked", elem_id="picked")
        PlotlyFigure(legend_row(), elem_id="legend-row")
        PlotlyFigure(attention_like(), elem_id="heatmap")
        PlotlyFigure(twin_curve_like(), elem_id="curve")
        PlotlyFigure(runs_like(), elem_id="runs")
        PlotlyFigure(long_axis_title(), elem_id="axis-title")
        with gr.Accordion("Later", open=False, elem_id="later-box"):
            later = PlotlyFigure(go.Figure(go.Bar(x=["x"], y=[7])), elem_id="later")
        next_button.click(lambda n: (n + 1, grid(int(n) + 1)), step, [step, figure])

        def pick(evt: gr.SelectData) -> str:
            return f"{evt.index} {evt.value['x']} {evt.value['y']} {evt.value['curve']}"

        figure.select(pick, None, picked)
    assert later.value is not None
    demo.launch(prevent_thread_lock=True, quiet=True, app_kwargs={"middleware": [file_aliases()]})
    try:
        yield demo.local_url
    finally:
        demo.close()


@pytest.fixture
def page(_browser, figure_page_url):
    context = _browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    try:
        page.goto(figure_page_url)
        page.wait_for_function(f"() => {GD} && {GD}._fullLayout", timeout=TIMEOUT_MS)
        yield page
    finally:
        context.close()


def test_a_new_figure_is_drawn_in_the_same_element_and_laid_out_once(page):
    page.evaluate(f"""() => {{
      window.__gd = {GD}; window.__first = null;
      new MutationObserver(() => {{
        const full = window.__gd._fullLayout;
        if (full && !window.__first && full.title.text === 'Figure 1') window.__first = full;
      }}).observe(document.querySelector('#grid'), {{childList: true, subtree: true, attributes: true}});
    }}""")
    page.click("#next")
    page.wait_for_function(f"() => {GD}._fullLayout.title.text === 'Figure 1'", timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)  # longer than the component's 100 ms wait before a resize
    drawn = page.evaluate(f"""() => ({{same: {GD} === window.__gd, once: {GD}._fullLayout === window.__first,
        drawings: document.querySelectorAll('#grid .js-plotly-plot').length, bars: {GD}.data[1].y}})""")
    assert drawn == {"same": True, "once": True, "drawings": 1, "bars": [2, 1]}


def test_a_click_on_a_bar_or_a_heatmap_cell_is_a_select_event_with_its_point(page):
    bar = page.locator("#grid g.point path").first  # the heatmap draws no points: the first bar ("a", height 1)
    box = bar.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] - 4)
    expect(page.locator("#picked textarea")).to_have_value("0 a 1 1", timeout=TIMEOUT_MS)
    cells = page.locator("#grid .draglayer .xy .nsewdrag").bounding_box()  # the heatmap's plot area
    page.mouse.click(cells["x"] + cells["width"] * 0.25, cells["y"] + cells["height"] * 0.75)  # row 0, column 0
    expect(page.locator("#picked textarea")).to_have_value("[0, 0] 0 0 0", timeout=TIMEOUT_MS)


def test_on_a_phone_the_grid_is_one_column_and_two_again_when_wider(page):
    domains = f"() => ['xaxis', 'xaxis2'].map(k => {GD}._fullLayout[k].domain)"
    assert page.evaluate(domains) == [[0, 0.45], [0.55, 1]]
    page.set_viewport_size({"width": 390, "height": 900})
    assert 390 < NARROW_PX
    page.wait_for_function(f"() => {GD}._fullLayout.xaxis2.domain[0] === 0", timeout=TIMEOUT_MS)
    full = page.evaluate(f"() => {{ const f = {GD}._fullLayout; return [f.xaxis.domain, f.xaxis2.domain, "
                         "f.yaxis.domain[0] > f.yaxis2.domain[1], f.width, f.height]; }")
    assert full[:3] == [[0, 1], [0, 1], True]  # one column, the heatmap above the bars
    assert full[3] <= 390 and full[4] > 360  # the screen's width, taller than drawn for a desktop
    assert page.evaluate(f"() => {GD}.data[1].y") == [1, 1]  # the data are the server's
    page.set_viewport_size({"width": 1000, "height": 900})
    page.wait_for_function(f"() => {GD}._fullLayout.xaxis2.domain[0] > 0.5", timeout=TIMEOUT_MS)
    assert page.evaluate(domains) == [[0, 0.45], [0.55, 1]]


def test_a_figure_in_a_closed_accordion_is_drawn_when_it_opens(page):
    assert page.locator("#later .js-plotly-plot").count() == 0  # nobody sees it: not drawn yet
    page.locator("#later-box button.label-wrap").click()
    page.wait_for_function("() => { const gd = document.querySelector('#later .js-plotly-plot'); "
                           "return gd && gd._fullLayout && gd._fullLayout.width > 100; }", timeout=TIMEOUT_MS)
    assert page.evaluate("() => document.querySelector('#later .js-plotly-plot').data[0].y") == [7]


def test_on_a_phone_a_rows_legend_hangs_under_the_panel_stacked_lowest(page):
    """Drawn wide, then narrowed (plotly has written the legend's x into the layout it drew by then): the legend
    went with the row's first panel, between the two stacked panels, over the lower one's top tick."""
    gd = "document.querySelector('#legend-row .js-plotly-plot')"
    page.wait_for_function(f"() => {gd} && {gd}._fullLayout && {gd}._fullLayout.xaxis2.domain[0] > 0.5",
                           timeout=TIMEOUT_MS)
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_function(f"() => {gd}._fullLayout.xaxis2.domain[0] === 0", timeout=TIMEOUT_MS)
    legend_y, upper_bottom, (lower_bottom, lower_top) = page.evaluate(
        f"() => {{ const f = {gd}._fullLayout; return [f.legend.y, f.yaxis.domain[0], f.yaxis2.domain]; }}")
    assert lower_top < upper_bottom  # the accuracy panel stacked under the loss panel
    assert legend_y < lower_bottom  # the legend under both, not between them


def test_on_a_phone_a_heatmaps_colour_bar_lies_above_it_and_the_cells_take_the_width(page):
    """The bar at the plot's right edge took a third of the attention heatmap's width at 390 px (its columns 7 px
    wide); on a phone it lies above the plot, across it. Wide again, it is back at the edge."""
    gd = "document.querySelector('#heatmap .js-plotly-plot')"
    drawn = (f"() => {{ const p = {gd}; return p && p._fullLayout ? [p._fullData[0].colorbar.orientation, "
             "p._fullLayout._size.w / p._fullLayout.width] : null; }")
    page.locator("#heatmap").scroll_into_view_if_needed()
    page.wait_for_function(f"() => ({drawn})() !== null", timeout=TIMEOUT_MS)
    assert page.evaluate(drawn)[0] == "v"
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_function(f"() => ({drawn})()[0] === 'h'", timeout=TIMEOUT_MS)
    share = page.evaluate(drawn)[1]
    assert share > 0.5  # the cells take most of the width (0.38 with the bar beside them)
    bar, plot = page.evaluate(f"() => {{ const p = {gd}; return [p.querySelector('.colorbar').getBoundingClientRect()"
                              ".bottom, p.querySelector('.nsewdrag').getBoundingClientRect().top]; }")
    assert bar <= plot + 1  # above the cells, not over them
    assert page.evaluate(f"() => {gd}._fullData[0].z.length") == 16  # all 16 rows drawn
    page.set_viewport_size({"width": 1000, "height": 900})
    page.wait_for_function(f"() => ({drawn})()[0] === 'v'", timeout=TIMEOUT_MS)


def test_on_a_phone_a_legend_under_the_plot_clears_the_x_axis_labels_and_title(page):
    """At a phone's width the twins' legend (y -0.3 of a plot about 110 px high) lay over "tokens read (log scale)"
    and the tick labels; it is moved down until it clears them. The toolbar has no "Share chart" (an upload to
    Plotly Cloud) and no box or lasso select (nothing reads a selection)."""
    gd = "document.querySelector('#curve .js-plotly-plot')"
    page.set_viewport_size({"width": 340, "height": 900})  # the figure as wide as inside the Pretrain tab's accordion
    page.locator("#curve").scroll_into_view_if_needed()
    page.wait_for_function(f"() => {gd} && {gd}._fullLayout && {gd}._fullLayout.width <= 340", timeout=TIMEOUT_MS)
    clear = f"""() => {{ const p = {gd};
        const texts = [...p.querySelectorAll("g[class$='tick'] > text, g[class^='g-x'][class$='title'] > text")];
        return p.querySelector('g.legend').getBoundingClientRect().top
               - Math.max(...texts.map(t => t.getBoundingClientRect().bottom)); }}"""
    page.wait_for_function(f"() => ({clear})() >= 4", timeout=10_000)  # a gap between the title and the legend
    # and the plot keeps room to read (its title and legend had squeezed it to 66 px of the figure's 480)
    page.wait_for_function(f"() => {gd}._fullLayout._size.h >= 160", timeout=10_000)
    titles = page.evaluate(f"() => [...{gd}.querySelectorAll('.modebar-btn')].map(b => b.getAttribute('data-title'))")
    assert "Download plot as a PNG" in titles[0] and not any("Share" in t or "select" in t.lower() for t in titles)


def test_a_charts_text_twin_names_each_table_by_its_panel_and_tells_lines_of_one_name_apart(_browser, figure_page_url):
    """The page's text twin of a chart (bertdemo/ui/static/access.js, read by a screen reader in place of the
    picture): a table a line, named by the figure's title, its panel's title and its own name, numbered where one
    name has several lines (they were read as tables of one name)."""
    from bertdemo.ui import access

    context = _browser.new_context(viewport={"width": 1000, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(access.script())
        page.goto(figure_page_url)
        captions = page.locator("#runs .pf-twin caption")
        expect(captions).to_have_count(3, timeout=TIMEOUT_MS)
        assert captions.all_text_contents() == ["Runs — loss — a run", "Runs — accuracy — reference (1 of 2)",
                                                "Runs — accuracy — reference (2 of 2)"]
    finally:
        context.close()


def test_on_a_phone_a_long_x_axis_title_wraps_inside_the_figure_above_its_legend(page):
    """The held-out-by-position chart's axis title ran off a 390 px screen at "(1 = first": it wraps between words
    inside the figure, and the legend under the plot still clears it."""
    gd = "document.querySelector('#axis-title .js-plotly-plot')"
    page.set_viewport_size({"width": 340, "height": 900})
    page.locator("#axis-title").scroll_into_view_if_needed()
    page.wait_for_function(f"() => {gd} && {gd}._fullLayout && {gd}._fullLayout.width <= 340", timeout=TIMEOUT_MS)
    inside = f"""() => {{ const p = {gd}, box = p.getBoundingClientRect();
        const title = p.querySelector("g[class^='g-x'][class$='title'] > text").getBoundingClientRect();
        return title.left >= box.left && title.right <= box.right
               && p.querySelectorAll("g[class^='g-x'][class$='title'] tspan.line").length >= 2; }}"""
    page.wait_for_function(inside, timeout=10_000)
    clear = f"""() => {{ const p = {gd};
        const title = p.querySelector("g[class^='g-x'][class$='title'] > text").getBoundingClientRect();
        return p.querySelector('g.legend').getBoundingClientRect().top - title.bottom; }}"""
    page.wait_for_function(f"() => ({clear})() >= 4", timeout=10_000)

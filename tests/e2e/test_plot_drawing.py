"""A figure is drawn once per answer, in place, and still follows its panel when the window changes
size (bertdemo/ui/plotly_figure.py), in the real page: the Attention heatmap in headless Chromium.

The PlotlyFigure keeps one drawing element for its life and draws each new figure into it with
``Plotly.react``. The page keeps the drawing element shown before the answer, and the layout
plotly computes when it first draws the new figure (``_fullLayout``: plotly replaces it whenever it
lays the figure out again).
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .pages import RUN_TIMEOUT_MS, open_app, open_tab, slider

SETTLE_MS = 800  # longer than the component's 100 ms wait before a resize, with room for a slow machine
WATCH_JS = """() => {
  const box = document.querySelector('#att-heatmap');
  window.__old = box.querySelector('.js-plotly-plot');
  window.__first = null;
  new MutationObserver(() => {
    const gd = box.querySelector('.js-plotly-plot'), full = gd && gd._fullLayout;
    if (full && !window.__first && String(full.title.text).startsWith('Layer 1')) window.__first = full;
  }).observe(box, {childList: true, subtree: true, attributes: true});
}"""
CHECK_JS = """() => {
  const box = document.querySelector('#att-heatmap'), gd = box.querySelector('.js-plotly-plot');
  const full = gd._fullLayout;
  return {now: full.title.text, inPlace: gd === window.__old,
          drawings: box.querySelectorAll('.js-plotly-plot').length, laidOutOnce: full === window.__first,
          margins: ['l', 'r', 't', 'b'].map(side => [full.margin[side], full._size[side]])};
}"""
WIDTHS_JS = """() => {
  const gd = document.querySelector('#att-heatmap .js-plotly-plot');
  return [gd.getBoundingClientRect().width, gd._fullLayout.width];
}"""


def test_a_new_answer_is_drawn_once_in_place_and_a_resize_redraws_to_the_new_width(browser_page: Page, app_url: str):
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 1000})
    open_app(page, app_url)
    open_tab(page, "Attention")
    page.click("#att-run")
    expect(page.locator("#att-heatmap .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-heatmap")).to_contain_text("Layer 0", timeout=RUN_TIMEOUT_MS)
    page.wait_for_timeout(SETTLE_MS)
    page.evaluate(WATCH_JS)

    layer = slider(page, "Layer")
    layer.fill("1")
    layer.dispatch_event("pointerup")
    expect(page.locator("#att-heatmap")).to_contain_text("Layer 1", timeout=RUN_TIMEOUT_MS)
    page.wait_for_timeout(SETTLE_MS)
    drawn = page.evaluate(CHECK_JS)
    assert drawn["now"].startswith("Layer 1")
    assert drawn["inPlace"] and drawn["drawings"] == 1, f"the new figure is not drawn in the plot's element: {drawn}"
    # the figure's own margins hold its labels and colorbar: plotly did not widen them (and draw again)
    assert [figure for figure, plotted in drawn["margins"]] == [plotted for figure, plotted in drawn["margins"]]
    assert drawn["laidOutOnce"], "no second layout of the new figure at the size it was drawn at"

    page.set_viewport_size({"width": 900, "height": 1000})  # the panel narrows: plotly lays the figure out again
    page.wait_for_function(f"() => {{ const [panel, fig] = ({WIDTHS_JS})(); return Math.abs(panel - fig) <= 1; }}",
                           timeout=RUN_TIMEOUT_MS)
    panel, figure = page.evaluate(WIDTHS_JS)
    assert panel < 900 and abs(panel - figure) <= 1

"""The Attention tab end to end: /attention (sentence filter, hidden specials), /attention_rollout,
/head_ablation through gradio_client, and one Chromium walk with screenshots (attention_overview.png and
attention.png at 1280 px, attention_phone.png at 390 px): the first answer, a new one drawn once in place and a
resize redrawn to the new width (bertdemo/ui/plotly_figure.py), the overview's cells as buttons, the figures below
the fold drawn as the learner scrolls to them, the CSVs, mean over heads, hidden specials and head ablation.

The PlotlyFigure keeps one drawing element for its life and draws each new figure into it with ``Plotly.react``:
the walk keeps the drawing element shown before an answer, and the layout plotly computes when it first draws the
new figure (``_fullLayout``: plotly replaces it whenever it lays the figure out again)."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
from playwright.sync_api import Page, expect

from bertdemo.viz.heatmaps import OverviewGeometry

from .api import as_array, expect_error, plotly_figure
from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, open_app, open_tab, press, resize, slider, wait_idle


def test_api_surface(client):
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    params = {name: [p["parameter_name"] for p in named[name]["parameters"]] for name in
              ("/attention", "/attention_rollout", "/head_ablation")}
    assert params["/attention"] == ["text", "text_pair", "model", "layer", "head", "mean", "hide", "renorm", "direction"]
    assert params["/attention_rollout"][:3] == ["text", "text_pair", "model"]
    assert params["/head_ablation"] == ["text", "text_pair", "model", "heads", "top_k", "answers"]


def test_attention_a_to_b_and_hidden_specials(client, model):
    plot, _, info = client.predict("The cat sat.", "It slept.", model, 1, 0, False, True, True, "A->B",
                                   api_name="/attention")
    fig = plotly_figure(plot)
    heat = fig["data"][0]
    # [CLS] the cat sat . [SEP] | it slept . [SEP]: specials hidden, original positions kept
    assert heat["y"] == ["1: the", "2: cat", "3: sat", "4: ."]
    assert heat["x"] == ["6: it", "7: slept", "8: ."]
    z = as_array(heat["z"])
    assert z.shape == (4, 3) and (z.sum(axis=1) < 1.0 + 1e-6).all()
    assert "A->B" in json.dumps(fig["layout"]["title"])
    assert "removed" in info and "%" in info and "sentence A" in info
    assert fig["layout"].get("width") is None  # the figure fills its panel
    expect_error(lambda: client.predict("Alone.", "", model, 0, 0, False, False, True, "B->A",
                                        api_name="/attention"), "needs a sentence B")


def test_attention_rollout(client, model):
    plot, numbers = client.predict("The cat sat.", "", model, -1, False, True, "all", api_name="/attention_rollout")
    heat = plotly_figure(plot)["data"][0]
    z = as_array(heat["z"])
    assert z.shape == (6, 6)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)
    assert "through layer 1" in json.dumps(plotly_figure(plot)["layout"]["title"])
    rows = list(csv.reader(io.StringIO(numbers)))
    assert rows[0][1:] == heat["x"] and len(rows) == 7
    np.testing.assert_allclose([[float(v) for v in r[1:]] for r in rows[1:]], z, atol=1e-5)


def test_head_ablation(client, model):
    summary, table = client.predict("The [MASK] sat on the [MASK].", "", model, "0:*, 1:1", 3, "",
                                    api_name="/head_ablation")
    assert "Switched off 3 head(s): 0:0, 0:1, 1:1" in summary
    assert "→" in summary and "nats" in summary and "top choices" in summary
    assert len(table["data"]) == 2 * 3 and table["data"][0][:2] == [1, 1]
    summary, _ = client.predict("The [MASK] sat.", "", model, "1:0", 2, "cat", api_name="/head_ablation")
    assert "your words (cat)" in summary
    expect_error(lambda: client.predict("The [MASK] sat.", "", model, "9:0", 2, "", api_name="/head_ablation"),
                 "Layer 9 does not exist")
    expect_error(lambda: client.predict("No mask here.", "", model, "0:0", 2, "", api_name="/head_ablation"),
                 "No mask")


SETTLE_MS = 800  # longer than the figure's 100 ms wait before a resize, with room for a slow machine
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
TITLE_JS = "p => (p.layout.title && (p.layout.title.text ?? p.layout.title)) || ''"


def _click_overview_cell(page: Page, layer: int, head: int, geo: OverviewGeometry) -> None:
    """Click the centre of one overview cell, mapping image pixels to the displayed image."""
    img = page.locator("#att-overview img").first
    natural_w, natural_h = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    assert (natural_w, natural_h) == geo.size
    box = img.bounding_box()
    # object-fit keeps the aspect ratio: the picture may be scaled and centred in its box.
    scale = min(box["width"] / natural_w, box["height"] / natural_h)
    off_x = (box["width"] - natural_w * scale) / 2
    off_y = (box["height"] - natural_h * scale) / 2
    x = geo.left + head * (geo.cell + geo.gap) + geo.cell / 2
    y = geo.top + layer * (geo.cell + geo.gap) + geo.cell / 2
    assert geo.cell_at(int(x), int(y)) == (layer, head)
    img.click(position={"x": off_x + x * scale, "y": off_y + y * scale})


def _drawn_once_in_place_and_follows_a_resize(page: Page) -> None:
    """The Layer slider's new answer is drawn once, into the drawing element already shown, at its own margins;
    the panel narrowed, plotly lays the figure out again at the new width."""
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

    resize(page, 900, 1000)  # the panel narrows: plotly lays the figure out again
    page.wait_for_function(f"() => {{ const [panel, fig] = ({WIDTHS_JS})(); return Math.abs(panel - fig) <= 1; }}",
                           timeout=RUN_TIMEOUT_MS)
    panel, figure = page.evaluate(WIDTHS_JS)
    assert panel < 900 and abs(panel - figure) <= 1
    resize(page, 1280, 1000)


def test_browser_walk(browser_page: Page, app_url: str):
    page = browser_page
    open_app(page, app_url)
    open_tab(page, "Attention")
    page.locator("#att-text textarea").fill("The animal didn't cross the street because it was too tired.")
    page.locator("#att-pair textarea").fill("It was very tired.")
    page.click("#att-run")

    heatmap = page.locator("#att-heatmap .js-plotly-plot")
    expect(heatmap).to_be_visible(timeout=RUN_TIMEOUT_MS)
    trace = heatmap.evaluate("p => ({type: p.data[0].type, n: p.data[0].x.length})")
    assert trace["type"] == "heatmap" and trace["n"] > 10, trace
    expect(page.locator("#att-overview img")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # the picture's download is one control, the link (gradio put a "Download" button inside it), and the chart's
    # toolbar says which chart it acts on
    overview_download = page.locator("#att-overview a[download]")
    expect(overview_download).to_have_accessible_name("Download", timeout=RUN_TIMEOUT_MS)
    expect(overview_download.locator("button")).to_have_attribute("aria-hidden", "true")
    expect(overview_download.locator("button")).to_have_attribute("tabindex", "-1")
    info = page.locator("#att-info")
    expect(info).to_contain_text(re.compile(r"\d+ layers × \d+ heads"))
    n_layers, n_heads = map(int, re.search(r"(\d+) layers × (\d+) heads", info.inner_text()).groups())
    expect(slider(page, "Layer")).to_have_value("0")
    expect(slider(page, "Head")).to_have_value("0")
    expect(page.locator("#att-heatmap")).to_contain_text("Layer 0, head 0")
    # the rollout and the token figure, below the first screen, are drawn as the learner scrolls to them
    wait_idle(page)
    assert page.locator("#att-rollout").evaluate("e => e.getBoundingClientRect().top") > 1.5 * page.viewport_size["height"]
    expect(page.locator("#att-rollout .js-plotly-plot")).to_have_count(0)

    _drawn_once_in_place_and_follows_a_resize(page)  # Layer 1, head 0 now

    # a cell of the overview is a button: both sliders move to it and its head is drawn
    _click_overview_cell(page, 0, 1, OverviewGeometry(n_layers=n_layers, n_heads=n_heads))
    expect(slider(page, "Layer")).to_have_value("0", timeout=RUN_TIMEOUT_MS)
    expect(slider(page, "Head")).to_have_value("1")
    expect(page.locator("#att-heatmap")).to_contain_text("Layer 0, head 1", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    assert heatmap.evaluate(TITLE_JS) == "Layer 0, head 1"
    screenshot(page, "attention_overview")

    # the CSV box, empty until asked, says which box is empty (gradio's words for it: "Empty value")
    expect(page.locator("#att-csv .empty")).to_have_accessible_name(
        "CSV: attention shown · rollout · token across layers: empty", timeout=RUN_TIMEOUT_MS)
    page.locator("#att-rollout").scroll_into_view_if_needed()
    expect(page.locator("#att-rollout .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-token-plot .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    page.click("#att-csv-run")  # the CSVs are written when asked for
    expect(page.locator("#att-csv")).to_contain_text("token_across_layers", timeout=RUN_TIMEOUT_MS)
    # each download link names its file (gradio's words: its size, "2.5 KB ⇣")
    expect(page.locator("#att-csv").get_by_role("link", name=re.compile(r"^Download rollout\.csv \(\d"))).to_have_count(
        1, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-heatmap").get_by_role("toolbar")).to_have_accessible_name(
        re.compile(r"^Chart tools: .*Layer 0, head 1"))

    # Mean over heads disables the head slider; hiding specials reports the weight removed.
    head = slider(page, "Head")
    expect(head).to_be_enabled()
    page.locator("#att-mean input").check()
    expect(head).to_be_disabled(timeout=RUN_TIMEOUT_MS)
    page.locator("#att-hide input").check()
    expect(page.locator("#att-info")).to_contain_text("removed", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-heatmap")).to_contain_text("mean over heads")
    expect(page.locator("#att-csv")).not_to_contain_text("token_across_layers", timeout=RUN_TIMEOUT_MS)  # not left stale

    # The plot fills its panel: no fixed width narrower than the block.
    widths = page.locator("#att-heatmap").evaluate(
        "b => [b.getBoundingClientRect().width, b.querySelector('.main-svg').getBoundingClientRect().width]")
    assert widths[1] >= 0.9 * widths[0] - 40, widths

    page.click("#abl-run")
    expect(page.locator("#abl-summary")).to_contain_text("Masked-LM loss", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    page.locator("#att-info").scroll_into_view_if_needed()
    screenshot(page, "attention")
    resize(page, 390, 844)
    screenshot(page, "attention_phone")
    # on a phone the overview scrolls sideways when it is wider than the screen, and then its right edge fades out
    # until the box is scrolled to its end; the test model's few heads fit, so no fade, then a box too narrow for them
    box = "document.querySelector('#att-overview .image-container')"
    fade = f"getComputedStyle({box}).getPropertyValue('--bd-fade-right')"
    # (no scroll, no timeline: the fade's length is unset, so the mask is invalid and none)
    assert page.evaluate(f"() => [{box}.scrollWidth > {box}.clientWidth, getComputedStyle({box}).maskImage]") == [
        False, "none"]
    page.evaluate(f"() => {{ {box}.style.width = '120px'; {box}.scrollLeft = 0; }}")
    page.wait_for_function(f"() => {fade} === '64px'", timeout=5_000)  # more to the right: the edge fades
    page.evaluate(f"() => {{ {box}.scrollLeft = {box}.scrollWidth; }}")
    page.wait_for_function(f"() => {fade} === '0px'", timeout=5_000)  # scrolled to the end: no fade
    page.evaluate(f"() => {{ {box}.style.width = ''; {box}.scrollLeft = 0; }}")

    # a refused sentence leaves no heatmap or overview of the sentence before under the "Error" badges: the text above
    # the heatmap says it was refused, the toast why
    # (Run pressed from the keyboard: the refusal empties the views below and the page may move under a pointer)
    page.locator("#att-text textarea").fill("")
    press(page.locator("#att-run"))
    expect(page.locator(".toast-body").filter(has_text="Enter a sentence")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-info")).to_contain_text("Refused", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-heatmap .js-plotly-plot:not(.pf-empty)")).to_have_count(0)  # purged, none drawn
    expect(page.locator("#att-overview img")).to_have_count(0)
    expect(page.locator("#att-info")).not_to_contain_text("layers ×")
    # and the next sentence draws every view again (nothing of what was shown is remembered as drawn)
    page.locator("#att-text textarea").fill("The cat sat on the mat.")
    press(page.locator("#att-run"))
    expect(page.locator("#att-heatmap .js-plotly-plot:not(.pf-empty)")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-overview img")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-info")).to_contain_text("layers ×")

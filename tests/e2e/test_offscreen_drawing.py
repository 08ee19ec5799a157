"""End-to-end: a figure just below the fold is drawn once the page is idle, after the text a click shows.

Inside BERT's Look inside answers the sections' text and the embeddings figure in one event; at 1280 x 1000 the
figure lies below the first screen. Drawn in the same task as the answer, it (and its text twin's thousands of
table cells) held back the frame that shows the text; PlotlyFigure now draws a new figure that is near the screen but off it
when the page is idle (bertdemo/ui/static/plotly_figure.js), without waiting for a scroll.
"""

from __future__ import annotations

from .pages import RUN_TIMEOUT_MS, open_app, open_tab, wait_idle

SENTENCE = "The cat sat on the [MASK] near the [MASK]."
TOKENS = 12  # [CLS] the cat sat on the [MASK] near the [MASK] . [SEP]

# when the embeddings text first names the new sentence's word, when the page next renders a frame (the text on
# screen), and when the figure is next drawn (and with how many rows): recorded in the page, in the order they happen
RECORD_JS = """() => {
  const order = window.__order = {step: 0};
  const info = document.querySelector('#in-emb-info');
  new MutationObserver(() => {
    if (order.text !== undefined || !info.textContent.includes('near')) return;
    order.text = ++order.step;
    requestAnimationFrame(() => { order.frame = ++order.step; });  // the text on screen: the page's next frame
  }).observe(info, {childList: true, subtree: true, characterData: true});
  const gd = document.querySelector('#in-emb-plot .js-plotly-plot');
  gd.on('plotly_afterplot', () => {
    if (order.drawn === undefined && gd.data[0].y.length === %d) { order.drawn = ++order.step; order.rows = gd.data[0].y.length; }
  });
}""" % TOKENS


def test_a_figure_below_the_fold_is_drawn_after_the_text_and_without_a_scroll(browser_page, app_url):
    page = browser_page
    open_app(page, app_url)
    open_tab(page, "Inside BERT")  # the example's answer, the figure drawn for it
    page.wait_for_selector("#in-emb-plot .js-plotly-plot", state="attached", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    height = page.viewport_size["height"]
    top = page.locator("#in-emb-plot").evaluate("e => e.getBoundingClientRect().top")
    assert height < top < 2 * height, top  # below the fold, within a screen's height of it (no scroll needed)
    page.evaluate(RECORD_JS)
    page.locator("#in-text textarea").fill(SENTENCE)
    page.locator("#in-words textarea").fill("mat, door")
    page.click("#in-run")
    page.wait_for_function("() => window.__order.drawn !== undefined", timeout=RUN_TIMEOUT_MS)
    order = page.evaluate("() => window.__order")
    # the text is on screen (a frame rendered) before the figure below it is drawn: drawn in the same task, the
    # figure and its text twin held the frame, and the text, back
    assert (order["text"], order["frame"], order["drawn"], order["rows"]) == (1, 2, 3, TOKENS), order
    assert page.evaluate("() => window.scrollY") == 0  # drawn where it lies, nobody scrolled to it
    # drawn, it is shown (not left hidden as the old sentence's picture) and has its text twin
    drawing = page.locator("#in-emb-plot .pf-drawing")
    assert drawing.evaluate("d => getComputedStyle(d).visibility") == "visible"
    assert page.locator("#in-emb-plot .pf-twin td").count() > 0

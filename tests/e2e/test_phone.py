"""Every tab on a phone (390 px wide), in one page of headless Chromium: each tab opened by its name,
its main action run, and its main result found inside the screen, no element of it wider than the
screen (a wide table may scroll inside its own box). The Pretrain tab's live run on a phone is checked where a run
is started anyway (tests/e2e/test_pretrain_browser.py), with its Delete.

Saves <tab>_phone.png for the README's gallery (see test_browser.py for regenerating it).
"""

from __future__ import annotations

from playwright.sync_api import expect

from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, WIDTH, assert_fits, open_app, open_tab_by_name, plot_ready, wait_idle


def test_every_tab_fits_a_phone(_browser, app_url: str):
    context = _browser.new_context(viewport={"width": WIDTH, "height": 844}, has_touch=True)
    page = context.new_page()
    try:
        open_app(page, app_url)

        open_tab_by_name(page, "Tokenizer")
        page.click("#tok-run")
        expect(page.locator("#tok-chips .token-chip").first).to_be_visible(timeout=RUN_TIMEOUT_MS)
        wait_idle(page)
        assert_fits(page, "#tok-chips")
        # a tap shows what a hover shows
        page.locator("#tok-chips .token-chip").nth(1).click()
        expect(page.locator("#tap-tip")).to_contain_text("id")
        screenshot(page, "tokenizer_phone")

        open_tab_by_name(page, "Fill-Mask")
        # the inputs are one column: Sentence B under the text box, not squeezed beside it
        text, pair = page.locator("#fm-text").bounding_box(), page.get_by_label("Sentence B (optional, segment 1)")
        assert pair.bounding_box()["y"] > text["y"] + text["height"] - 1
        page.click("#fm-run")
        plot_ready(page, "#fm-plot")
        wait_idle(page)
        assert_fits(page, "#fm-plot")
        screenshot(page, "fill_mask_phone")

        open_tab_by_name(page, "Attention")
        page.click("#att-run")
        plot_ready(page, "#att-heatmap")
        expect(page.locator("#att-overview img")).to_be_visible(timeout=RUN_TIMEOUT_MS)
        wait_idle(page)
        assert_fits(page, "#att-heatmap")
        assert_fits(page, "#att-overview")  # the grid scrolls inside its own box ...
        cells = page.locator("#att-overview img").evaluate("i => i.getBoundingClientRect().width / i.naturalWidth")
        assert cells >= 0.75  # ... with cells of at least 42 px (56 px drawn): big enough for a finger
        screenshot(page, "attention_phone")

        open_tab_by_name(page, "Inside BERT")
        page.click("#in-run")
        # sections 1 and 2 answer "Look inside"; the others are computed when opened
        for label in ("Every step of this layer", "3 · Through the layers", "4 · The output and the loss"):
            page.locator("button.label-wrap", has_text=label).click()
        for plot in ("#in-emb-plot", "#in-neuron-plot", "#in-steps-plot", "#in-lens-plot", "#in-loss-plot"):
            plot_ready(page, plot)
        wait_idle(page)
        for plot in ("#in-emb-plot", "#in-neuron-plot", "#in-steps-plot", "#in-lens-plot", "#in-loss-plot"):
            assert_fits(page, plot)
        # the 3-column step-by-step grid is one column on a phone: every step's panel as wide as the figure
        domains = page.locator("#in-steps-plot .js-plotly-plot").evaluate(
            "p => Object.keys(p._fullLayout).filter(k => /^xaxis\\d*$/.test(k)).map(k => p._fullLayout[k].domain)")
        assert len(domains) >= 8 and all(d == [0, 1] for d in domains), domains
        screenshot(page, "inside_bert_phone")

        open_tab_by_name(page, "Masking & NSP")
        page.click("#ml-run")
        expect(page.locator("#ml-chips")).to_contain_text("[MASK]", timeout=RUN_TIMEOUT_MS)
        page.click("#ml-compare")
        expect(page.locator("#ml-epochs-view")).to_contain_text("distinct", timeout=RUN_TIMEOUT_MS)
        wait_idle(page)
        assert_fits(page, "#ml-chips")
        assert_fits(page, "#ml-epochs-view")
        cell = page.locator("#ml-epochs-view span[title]").first
        cell.click()
        expect(page.locator("#tap-tip")).to_have_text(cell.get_attribute("title"))
        screenshot(page, "masking_lab_phone")
    finally:
        context.close()

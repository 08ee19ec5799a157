"""End-to-end: the Word in context tab's endpoints through gradio_client, and the tab in Chromium at desktop
and phone width (words.png, words_phone.png), reached from Fill-Mask's "Why this word?" and by a deep link."""

from __future__ import annotations

import urllib.parse

from playwright.sync_api import expect

from .api import expect_error
from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, assert_fits, open_app, open_tab_by_name, plot_ready, set_open, wait_idle

LINES = "river | We sat on the bank of the river.\nmoney | The bank raised its rates.\nriver | The bank was muddy."


def test_word_in_context_endpoint(client, model):
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/word_in_context", "/corpus_neighbours", "/attribution"} <= set(named)
    out = client.predict("bank", LINES, model, api_name="/word_in_context")
    assert out["pieces"] == ["bank"] and out["positions"] == [5, 2, 2] and out["static_cosine"] == 1.0
    assert [p["sentences"] for p in out["pairs"]] == [[1, 2], [1, 3], [2, 3]]
    assert len(out["baseline_by_layer"]) == 3 and out["same_sense_by_layer"] == out["pairs"][1]["cosine_by_layer"]
    expect_error(lambda: client.predict("bank", "Only one.", model, api_name="/word_in_context"), "2 to 12 sentences")


def test_corpus_neighbours_endpoint(client, model):
    out = client.predict("We sat on the bank of the river.", 5, 1, 5, model, api_name="/corpus_neighbours")
    assert out["token"] == "bank" and len(out["neighbours"]) == 5 and out["index_tokens"] == 8_000
    cosines = [n["cosine"] for n in out["neighbours"]]
    assert cosines == sorted(cosines, reverse=True) and all(n["sentence"] for n in out["neighbours"])
    expect_error(lambda: client.predict("A cat.", 1, 1, 500, model, api_name="/corpus_neighbours"), "k is 1 to 50")


def test_attribution_endpoint(client, model):
    out = client.predict("The cat sat on the [MASK].", 1, "mat", "occlusion", 8, model, api_name="/attribution")
    assert out["target"] == "mat" and out["tokens"][out["mask_position"]] == "[MASK]"
    assert list(out["scores"]) == ["occlusion"] and out["completeness"]["gap_percent"] is None
    out = client.predict("The cat sat on the [MASK].", 1, "", "integrated gradients", 8, model, api_name="/attribution")
    assert abs(out["completeness"]["sum_of_ig"] - out["completeness"]["f_input_minus_f_baseline"]) < 1e-3
    expect_error(lambda: client.predict("No mask.", 1, "", "occlusion", 8, model, api_name="/attribution"), "[MASK]")


def show_tab(page, phone: bool) -> None:
    open_tab_by_name(page, "Word in context")
    plot_ready(page, "#wic-sim-plot")  # the tab answers its example when opened
    expect(page.locator("#wic-sim-info")).to_contain_text("baseline", timeout=RUN_TIMEOUT_MS)
    page.click("#wic-attr-run")
    plot_ready(page, "#wic-attr-plot")
    expect(page.locator("#wic-attr-info")).to_contain_text("Completeness", timeout=RUN_TIMEOUT_MS)
    set_open(page.locator("button.label-wrap", has_text="2 · The word across the corpus"))
    plot_ready(page, "#wic-atlas-plot")
    wait_idle(page)
    if phone:
        for plot in ("#wic-sim-plot", "#wic-attr-plot", "#wic-atlas-plot"):
            assert_fits(page, plot)
        # a section's title that wraps reads from the left: each line starts where the first does (gradio centred
        # it, "vector?" alone in the middle of its line under "1 · One word, many meanings: the same ▾")
        title = page.locator("button.label-wrap", has_text="1 · One word, many meanings").locator("span").first
        starts = title.evaluate("s => { const r = document.createRange(); r.selectNodeContents(s);"
                                " return [...r.getClientRects()].map(line => Math.round(line.left)); }")
        assert len(starts) >= 2 and max(starts) - min(starts) <= 1, starts


def _tab_drawn(_browser, app_url: str, name: str, viewport: dict, phone: bool):
    """A new visitor's page at ``viewport`` with the tab shown and its similarity figure drawn (screenshot ``name``):
    (its context, the page)."""
    context = _browser.new_context(viewport=viewport, has_touch=phone)
    try:
        page = context.new_page()
        open_app(page, app_url)
        show_tab(page, phone)
        figure = page.locator("#wic-sim-plot .js-plotly-plot").evaluate("p => p.data.map(d => d.name)")
        assert "random words (baseline)" in figure and "static vector" in figure and "same sense (mean)" in figure
        screenshot(page, name)
    except BaseException:
        context.close()
        raise
    return context, page


def test_the_tab_at_desktop_and_phone_width(_browser, app_url):
    """The tab at a phone's width, then at a desktop's, where Fill-Mask's "Why this word?" opens the attribution of
    the sentence it holds."""
    context, page = _tab_drawn(_browser, app_url, "words_phone", {"width": 390, "height": 844}, True)
    try:  # a touch screen: every tab, accordion title, small button and slider box at least 40 px high (gradio's: 20-26)
        small = page.evaluate("""() => [...document.querySelectorAll(
                '[role=tablist] button, button.label-wrap, button.sm, .head > .tab-like-container')]
            .filter(b => b.offsetParent).map(b => [b.textContent.trim().slice(0, 20), b.getBoundingClientRect().height])
            .filter(([, h]) => h < 40)""")
        assert small == [], small
    finally:
        context.close()
    context, page = _tab_drawn(_browser, app_url, "words", {"width": 1280, "height": 1000}, False)
    try:
        open_tab_by_name(page, "Fill-Mask")
        page.locator("#fm-text textarea").fill("The dog chased the [MASK].")
        page.click("#fm-why")
        expect(page.locator("#wic-attr-text textarea")).to_have_value("The dog chased the [MASK].",
                                                                       timeout=RUN_TIMEOUT_MS)
        expect(page.locator("#wic-attr-info")).to_contain_text("Completeness", timeout=RUN_TIMEOUT_MS)
        # this sentence's explanation, not the tab's example's: its tokens label the figure's bars
        page.locator("#wic-attr-plot").scroll_into_view_if_needed(timeout=RUN_TIMEOUT_MS)
        page.wait_for_function("() => { const p = document.querySelector('#wic-attr-plot .js-plotly-plot');"
                               " return !!p && !!p.data && p.data[0].y.includes('3 chased'); }", timeout=RUN_TIMEOUT_MS)
    finally:
        context.close()


def test_a_deep_link_opens_the_tab_and_explains(browser_page, app_url):
    page = browser_page
    page.goto(app_url + "?" + urllib.parse.urlencode({"tab": "words", "text": "A cup of [MASK], please."}))
    expect(page.locator("#wic-attr-text textarea")).to_have_value("A cup of [MASK], please.", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#wic-attr-info")).to_contain_text("Completeness", timeout=RUN_TIMEOUT_MS)

"""End-to-end: the Inside BERT tab's endpoints through gradio_client, and the tab in Chromium.

The launched app serves the tiny random masked-LM (see conftest.py). The browser test saves
inside_bert.png (desktop) and inside_bert_phone.png (390 px) into $BERTDEMO_SCREENSHOTS;
with BERTDEMO_E2E_MODEL=embedded/bert-explorer-mlm and BERTDEMO_SCREENSHOTS=docs/screenshots
it regenerates the README screenshot.
"""

from __future__ import annotations

import math
import re

import pytest

from .api import expect_error, plotly_figure
from .conftest import screenshot

SENTENCE = "The cat sat on the [MASK]."
ENDPOINTS = {"/inside_embeddings", "/inside_layer", "/logit_lens", "/mlm_loss", "/param_breakdown"}
RUN_TIMEOUT_MS = 60_000


def test_inside_endpoints_are_named_text_first(client):
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert ENDPOINTS <= set(named), sorted(named)
    params = {name: [p["parameter_name"] for p in named[name]["parameters"]] for name in ENDPOINTS}
    assert params["/mlm_loss"] == ["text", "words", "model"]
    assert params["/param_breakdown"] == ["model"]
    assert params["/inside_layer"] == ["text", "model", "layer", "head", "query"]
    assert params["/logit_lens"][:2] == params["/inside_embeddings"] == ["text", "model"]


def test_mlm_loss_endpoint_equals_the_models_loss(client, model):
    md, plot, numbers = client.predict("The cat sat on the [MASK] near the [MASK].", "mat, door", model,
                                       api_name="/mlm_loss")
    masks = numbers["masks"]
    assert [m["word"] for m in masks] == ["mat", "door"] and numbers["model"] == model
    for m in masks:
        assert m["neg_log_prob"] == pytest.approx(-math.log(m["prob"]), rel=1e-4)
    assert numbers["mean_loss"] == pytest.approx(sum(m["neg_log_prob"] for m in masks) / 2, rel=1e-6)
    assert numbers["mean_loss"] == pytest.approx(numbers["model_loss"], abs=1e-4)
    assert numbers["vocab_size"] == 30522 and round(numbers["uniform_loss"], 3) == 10.326
    assert "10.33" in md and plotly_figure(plot)["data"][0]["type"] == "bar"
    # a plain sentence and the words to mask
    _, _, plain = client.predict("The dog chased the cat.", "cat", model, api_name="/mlm_loss")
    assert plain["text"] == "The dog chased the [MASK]." and plain["masks"][0]["word"] == "cat"
    expect_error(lambda: client.predict(SENTENCE, "mat, rug", model, api_name="/mlm_loss"),
                 "1 mask(s) but 2 right word(s)")


def test_param_breakdown_endpoint_sums_to_the_model(client, model, app_model_dir):
    from transformers import BertForMaskedLM

    md, architecture, numbers = client.predict(model, api_name="/param_breakdown")
    total = sum(p.numel() for p in BertForMaskedLM.from_pretrained(app_model_dir).parameters())
    assert numbers["total"] == numbers["numel_total"] == total
    assert sum(c["count"] for c in numbers["components"]) == total
    assert f"{total:,}" in md and "BertForMaskedLM" in architecture and numbers["tied_decoder"]


def test_step_views_check_out_against_the_model(client, model):
    emb_md, _emb_plot, _pos_plot, order_md = client.predict(SENTENCE, model, api_name="/inside_embeddings")
    assert model in emb_md and "cosine 1.000" in order_md
    assert float(re.search(r"max \|difference\| = (\d\.\de[+-]\d+)", emb_md).group(1)) < 1e-5
    layer_md, _neuron, steps = client.predict(SENTENCE, model, 1, 1, 2, api_name="/inside_layer")
    diffs = [float(x) for x in re.findall(r"max \|difference\| = (\d\.\de[+-]\d+)", layer_md)]
    assert len(diffs) == 2 and max(diffs) < 1e-4, layer_md
    assert len(plotly_figure(steps)["data"]) == 15
    _, _, lens = client.predict(SENTENCE, model, 1, 5, api_name="/logit_lens")
    assert len(lens["layers"]) == 3 and lens["max_abs_diff_logits"] < 1e-4
    expect_error(lambda: client.predict(SENTENCE, model, 7, 0, 0, api_name="/inside_layer"), "Layer must be 0 to 1")


def _calls(cdp, names: tuple[str, ...]) -> int:
    result = cdp.send("Profiler.takePreciseCoverage")["result"]
    return sum(f["ranges"][0]["count"] for script in result if "/assets/core-" in script["url"]
               for f in script["functions"] if f["functionName"] in names)


def _clicks_look_their_components_up_without_walking_the_tree(page) -> None:
    """Three Inside BERT clicks, counted with V8's call counts: a lookup is one call of Z, and each node a search
    visits one more call (the search is recursive); unpatched, a click made about 11,500 calls
    (bertdemo/frontend_patch.py NODE_LOOKUP; its answers checked in tests/e2e/test_node_lookup.py)."""
    from playwright.sync_api import expect

    from .pages import wait_idle

    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.startPreciseCoverage", {"callCount": True, "detailed": False})
    try:
        visits = []
        for word in ("river", "street", "bridge"):
            _calls(cdp, ("Z", "__bdSearch"))
            page.locator("#in-text textarea").fill(f"The dog did not cross the {word} because it was too [MASK].")
            page.click("#in-run")
            expect(page.locator("#in-emb-info")).to_contain_text(word, timeout=RUN_TIMEOUT_MS)
            wait_idle(page)
            visits.append(_calls(cdp, ("Z", "__bdSearch")))
    finally:
        cdp.send("Profiler.stopPreciseCoverage")
    assert max(visits) < 1_000, visits


def test_inside_tab_in_the_browser(browser_page, app_url):
    from playwright.sync_api import expect

    from .pages import open_app, open_tab, resize, set_open, slider, wait_idle

    page = browser_page
    open_app(page, app_url)
    open_tab(page, "Inside BERT")
    # the example's right word is the example's alone: the box starts empty (prefilled with "paris", it scored the
    # learner's own sentence against it as soon as they typed one)
    words = page.locator("#in-words textarea")
    expect(words).to_have_attribute("placeholder", "e.g. paris", timeout=RUN_TIMEOUT_MS)
    expect(words).to_have_value("")
    loss_section = page.locator("button.label-wrap", has_text="4 · The output and the loss")
    set_open(loss_section)  # the example's own loss, with its right word
    expect(page.locator("#in-loss-info")).to_contain_text("paris", timeout=RUN_TIMEOUT_MS)
    set_open(loss_section, False)  # closed again: opened below with the learner's sentence
    page.locator("#in-text textarea").fill("The cat sat on the [MASK] near the [MASK].")
    words.fill("mat, door")
    # sections 1 and 2 are open and answer "Look inside"; the others answer when opened
    expect(page.locator("#in-lens-info")).to_be_hidden()
    page.click("#in-run")
    expect(page.locator("#in-emb-info")).to_contain_text("max |difference|", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#in-layer-info")).to_contain_text("Checks against the model's own forward",
                                                           timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#in-steps-plot")).to_be_hidden()  # drawn when its own accordion opens
    # the figure near the screen is drawn; the layer's, screens below the button, when scrolled towards
    expect(page.locator("#in-emb-plot .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    neuron = page.locator("#in-neuron-plot")
    assert neuron.evaluate("e => e.getBoundingClientRect().top") > 2 * page.viewport_size["height"]
    keys_drawn = "e => { const p = e.querySelector('.js-plotly-plot'); return p ? p.data[1].y.length : 0; }"
    page.wait_for_timeout(500)
    assert neuron.evaluate(keys_drawn) != 12  # not this sentence's 12 tokens (the example's, or nothing yet)
    neuron.scroll_into_view_if_needed()
    page.wait_for_function(f"() => ({keys_drawn})(document.querySelector('#in-neuron-plot')) === 12",
                           timeout=RUN_TIMEOUT_MS)
    page.evaluate("() => window.scrollTo(0, 0)")
    for label in ("Order test", "The learned position vectors", "Every step of this layer", "3 · Through the layers",
                  "4 · The output and the loss", "5 · Anatomy"):
        set_open(page.locator("button.label-wrap", has_text=label))
    expect(page.locator("#in-anatomy")).to_contain_text("parameters", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#in-order")).to_contain_text("cosine 1.000", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#in-lens-info")).to_contain_text("[MASK] #1", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#in-loss-info")).to_contain_text("door", timeout=RUN_TIMEOUT_MS)  # this sentence's words
    expect(page.locator("#in-loss-info")).to_contain_text("model's own loss")
    expect(page.locator("#in-loss-info")).to_contain_text("10.33")
    for plot in ("in-emb-plot", "in-pos-plot", "in-neuron-plot", "in-steps-plot", "in-lens-plot", "in-loss-plot"):
        page.locator(f"#{plot}").scroll_into_view_if_needed()  # each is drawn near the screen
        expect(page.locator(f"#{plot} .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    for plot in ("in-emb-plot", "in-neuron-plot", "in-steps-plot"):  # margins that hold their labels and colorbar:
        margins = page.locator(f"#{plot} .js-plotly-plot").evaluate(  # plotly laid them out once, as set
            "gd => ['l', 'r', 't', 'b'].map(side => [gd._fullLayout.margin[side], gd._fullLayout._size[side]])")
        assert [figure for figure, plotted in margins] == [plotted for figure, plotted in margins], (plot, margins)
    # the sliders span the model (2 layers, 2 heads on the tiny one; the page's shape line names them for
    # whichever model is served) and the sentence (12 tokens)
    shape = re.search(r"layer \d+ of 0–(\d+), head \d+ of 0–(\d+)", page.locator("#in-layer-info").inner_text())
    expect(slider(page, "Layer")).to_have_attribute("max", shape.group(1))
    expect(slider(page, "Head")).to_have_attribute("max", shape.group(2))
    expect(slider(page, "Query token (position)")).to_have_attribute("max", "11")
    wait_idle(page)
    screenshot(page, "inside_bert")
    resize(page, 390, 900)
    screenshot(page, "inside_bert_phone")
    # a table cut at the phone's edge says it scrolls: the edge shadows, whose covers scroll with the table
    scrolling = page.evaluate("""() => [...document.querySelectorAll('.in-wide table')]
        .filter(t => t.offsetParent && t.scrollWidth > t.clientWidth)
        .map(t => [getComputedStyle(t).backgroundAttachment, getComputedStyle(t).backgroundImage.split('gradient').length - 1])""")
    assert scrolling and all(s == ["local, local, scroll, scroll", 4] for s in scrolling), scrolling
    # the logit lens keeps its words readable (drawn 5 px high at the screen's width): the figure keeps the width its
    # cells need and its box scrolls sideways; the steps' panel titles stay inside their figure (they ran 4 px past)
    page.locator("#in-lens-plot").scroll_into_view_if_needed()
    lens = "document.querySelector('#in-lens-plot .js-plotly-plot')"
    page.wait_for_function(f"() => {lens}._fullLayout.width > 390", timeout=RUN_TIMEOUT_MS)
    box, sizes = page.locator("#in-lens-plot").evaluate(
        "b => [[b.scrollWidth > b.clientWidth, getComputedStyle(b).overflowX],"
        " [...b.querySelectorAll('.heatmaplayer text')].map(t => parseFloat(t.style.fontSize))]")
    assert box == [True, "auto"] and sizes and min(sizes) >= 9, (box, sizes)  # wider than the box, which scrolls
    page.locator("#in-steps-plot").scroll_into_view_if_needed()
    steps = "document.querySelector('#in-steps-plot .js-plotly-plot')"
    page.wait_for_function(f"() => {steps}._fullLayout.width < 390", timeout=RUN_TIMEOUT_MS)
    past = page.evaluate(f"""() => {{ const p = {steps}, left = p.getBoundingClientRect().left;
        return [...p.querySelectorAll('.annotation-text')].map(t => t.getBoundingClientRect())
            .filter(r => r.right - left > p._fullLayout.width + 1 || r.left < left - 1).length; }}""")
    assert past == 0, past
    page.set_viewport_size({"width": 1280, "height": 900})

    # a slider moved within its range redraws its layer and leaves the sliders as they are
    query = slider(page, "Query token (position)")
    query.fill("3")
    query.dispatch_event("pointerup")
    expect(page.locator("#in-layer-info")).to_contain_text("query token 3 sat.", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    expect(query).to_have_value("3")
    expect(query).to_have_attribute("max", "11")
    # a shorter sentence brings the query slider into its range: [CLS] a [MASK] . [SEP]
    page.locator("#in-text textarea").fill("A [MASK].")
    page.locator("#in-words textarea").fill("cat")
    page.click("#in-run")
    expect(page.locator("#in-layer-info")).to_contain_text("query token 3 ..", timeout=RUN_TIMEOUT_MS)
    expect(query).to_have_attribute("max", "4")
    query.fill("1")
    query.dispatch_event("pointerup")
    expect(page.locator("#in-layer-info")).to_contain_text("query token 1 a.", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    expect(query).to_have_attribute("max", "4")
    _clicks_look_their_components_up_without_walking_the_tree(page)

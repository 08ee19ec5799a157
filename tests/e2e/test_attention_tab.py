"""The Attention tab end to end: /attention (sentence filter, hidden specials), /attention_rollout,
/head_ablation through gradio_client, and a short Chromium walk with screenshots
(attention.png at 1280 px, attention_phone.png at 390 px)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from .api import as_array, expect_error, plotly_figure
from .conftest import screenshot


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


def test_browser_walk(browser_page, app_url):
    from playwright.sync_api import expect

    from . import pages as ui

    page, RUN_TIMEOUT_MS = browser_page, ui.RUN_TIMEOUT_MS
    ui.open_app(page, app_url)
    ui.open_tab(page, "Attention")
    page.locator("#att-pair textarea").fill("It was very tired.")
    page.click("#att-run")
    expect(page.locator("#att-heatmap .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # the rollout and the token figure, below the first screen, are drawn as the learner scrolls to them
    ui.wait_idle(page)
    assert page.locator("#att-rollout").evaluate("e => e.getBoundingClientRect().top") > 1.5 * page.viewport_size["height"]
    expect(page.locator("#att-rollout .js-plotly-plot")).to_have_count(0)
    page.locator("#att-rollout").scroll_into_view_if_needed()
    expect(page.locator("#att-rollout .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#att-token-plot .js-plotly-plot")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    page.click("#att-csv-run")  # the CSVs are written when asked for
    expect(page.locator("#att-csv")).to_contain_text("token_across_layers", timeout=RUN_TIMEOUT_MS)

    # Mean over heads disables the head slider; hiding specials reports the weight removed.
    head = page.get_by_label("range slider for Head", exact=True)
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
    ui.wait_idle(page)
    page.locator("#att-info").scroll_into_view_if_needed()
    screenshot(page, "attention")
    ui.resize(page, 390, 844)
    screenshot(page, "attention_phone")

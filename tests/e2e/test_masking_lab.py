"""End-to-end: the Masking & NSP tab over the API (gradio_client) and in Chromium.

Saves masking_lab.png (desktop) and masking_lab_phone.png (390 px wide) into
$BERTDEMO_SCREENSHOTS when it is set, like test_browser.py.
"""

from __future__ import annotations

import re

import pytest
from gradio_client.exceptions import AppError

from tests.helpers import wait_until

from .axe import axe_violations
from .conftest import screenshot
from .pages import open_tab, resize, set_open, wait_idle

TEXT = "The children were playing football in the park until it started raining heavily."
RUN_TIMEOUT_MS = 60_000


def test_mask_sample_api(client):
    """The wiring: one call through the API comes back in the documented shape (the statistics of the
    masking itself are proven in tests/test_masking_lab.py and tests/test_pretrain_masking.py)."""
    default = client.predict(TEXT, 0.15, 0.8, 0.1, 0, False, True, api_name="/mask_sample")
    tokens = default["tokens"]
    assert tokens[0]["token"] == "[CLS]" and tokens[-1]["token"] == "[SEP]"
    assert all(set(t) >= {"token", "chosen", "action", "input_id", "label"} for t in tokens)
    chosen = [t for t in tokens if t["chosen"]]
    assert len(chosen) == round(0.15 * (len(tokens) - 2))  # the engine's default: a fixed count
    assert all(t["label"] == t["original_id"] and t["action"] in ("mask", "random", "keep") for t in chosen)
    assert all(t["label"] == -100 for t in tokens if not t["chosen"])
    assert "engine's default" in default["mode"]


def test_epochs_and_nsp_api(client):
    data = client.predict(TEXT, 0.4, 0.8, 0.1, 0, True, True, 25, 10, api_name="/mask_epochs")
    assert data["distinct_static"] == 10 and data["distinct_dynamic"] > 10
    pairs = client.predict("", 64, 4, 0, api_name="/nsp_pairs")
    assert len(pairs["pairs"]) == 4 and all(p["tokens"][0] == "[CLS]" for p in pairs["pairs"])
    with pytest.raises(Exception, match="Enter a sentence"):
        client.predict("", 0.15, 0.8, 0.1, 0, False, True, api_name="/mask_sample")
    with pytest.raises(AppError) as refused:  # a refusal reads as written (no "&gt;"): the page escapes its toast
        client.predict(TEXT, 0.15, 0.8, 0.1, None, False, True, api_name="/mask_sample")
    assert str(refused.value) == "Enter a seed (a whole number >= 0)."


def test_masking_tab_in_browser(browser_page, app_url):
    """A short walk of the tab; screenshots at desktop width and at 390 px (a phone)."""
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url)
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)
    open_tab(page, "Masking & NSP")
    page.click("#ml-run")
    chips = page.locator("#ml-chips .mask-chip[data-position]")
    expect(chips.first).to_have_text("[CLS]", timeout=RUN_TIMEOUT_MS)
    chosen = page.locator("#ml-chips .mask-chip[data-action]:not([data-action='none'])")
    assert chosen.count() == round(0.15 * (chips.count() - 2)), "the engine's default: a fixed count"
    # a screen reader hears what became of each chosen token, in words (it heard "[MASK] was playing" before)
    heard = page.locator("#ml-chips .mask-chips").aria_snapshot()
    spoken = {"mask": "(masked; the answer is", "random": "(a random token; the answer is", "keep": "(kept; still predicted)"}
    actions = [chosen.nth(i).get_attribute("data-action") for i in range(chosen.count())]
    assert sum(heard.count(spoken[a]) for a in spoken) == len(actions) and " was " not in heard, heard
    expect(page.locator("#ml-tensors")).to_contain_text("-100")
    page.click("#ml-next")
    expect(page.locator("#ml-epochs-view")).to_contain_text("13 epochs", timeout=RUN_TIMEOUT_MS)
    page.click("#ml-stats")
    expect(page.locator("#ml-stats-table")).to_contain_text("of the chosen", timeout=RUN_TIMEOUT_MS)
    page.click("#nsp-build")
    expect(page.locator("#nsp-pairs .nsp-pair")).to_have_count(4, timeout=RUN_TIMEOUT_MS)
    page.click("#nsp-run")
    expect(page.locator("#nsp-result")).to_contain_text("NSP head", timeout=RUN_TIMEOUT_MS)
    # the repeated static epochs (faded) and a JSON viewer's strings keep readable text: axe's colour contrast
    # (the faded rows' labels at 0.55 opacity and gradio's #ce9178 strings on white failed it)
    set_open(page.locator("button.label-wrap", has_text="As JSON (the /mask_sample answer)"))
    expect(page.locator("#ml-epochs-view")).to_contain_text("ep 13 · copy 3")
    # the viewer is read without its line numbers (they were read inside the data: '{ 4 "mlm_probability" : 0.15 , 5')
    viewer = page.locator(".json-node").first
    expect(viewer).to_contain_text('"mlm_probability"', timeout=RUN_TIMEOUT_MS)
    wait_until(lambda: re.search(r'[,{\[] \d+ \\?"', viewer.aria_snapshot()) is None, timeout=10, interval=0.2,
               what="the JSON viewer's line numbers to be left out of what a screen reader reads")
    wait_idle(page)
    assert axe_violations(page) == []
    screenshot(page, "masking_lab")
    resize(page, 390, 844)
    screenshot(page, "masking_lab_phone")
    # the tensors' box, cut at the phone's edge, says it scrolls: the edge shadows (as Inside BERT's tables)
    tensors = page.locator("#ml-tensors .mask-tensors").evaluate(
        "b => [b.scrollWidth > b.clientWidth, getComputedStyle(b).backgroundAttachment]")
    assert tensors == [True, "local, local, scroll, scroll"], tensors
    # a refused sentence leaves no chips of the sentence before under the "Error" badges: the box says it was refused
    page.locator("#ml-text textarea").fill("")
    page.click("#ml-run")
    expect(page.locator(".toast-body").filter(has_text="Enter a sentence to mask")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#ml-chips")).to_contain_text("Refused", timeout=RUN_TIMEOUT_MS)
    expect(chips).to_have_count(0)
    expect(page.locator("#ml-tensors")).not_to_contain_text("-100")

"""End-to-end: a learner walks the Learn tab's steps in Chromium (the first twelve checked one by one); each step's live answer is checked
against the same model run here, then "keep exploring" and a deep link open a tab set up with a sentence.

Saves learn_path.png (desktop) and learn_path_phone.png (390 px wide) into $BERTDEMO_SCREENSHOTS.
"""

from __future__ import annotations

import os

import pytest
import torch

from .conftest import screenshot

TEXT = "The cat sat on the mat because it was tired."
MASKED = "The cat sat on the mat because it was [MASK]."
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def expected(app_model_dir, tmp_path_factory) -> list[list[str]]:
    """Per step, what its answer must show: numbers from the launched app's own model, computed here."""
    from bertdemo.context import AppContext
    from bertdemo.explore import masking_lab
    from bertdemo.explore.fill_mask import predict
    from bertdemo.models import bert_family

    ctx = AppContext.for_tests(tmp_path_factory.mktemp("learn-e2e"))
    loaded = ctx.models.get(os.environ.get("BERTDEMO_E2E_MODEL") or app_model_dir)
    tok, model, cfg = loaded.tokenizer, loaded.model, loaded.model.config
    enc = tok(MASKED, return_tensors="pt")
    plain = tok(TEXT, return_tensors="pt")
    s = enc["input_ids"].shape[1]
    labels = torch.full_like(enc["input_ids"], -100)
    labels[enc["input_ids"] == tok.mask_token_id] = tok.convert_tokens_to_ids("tired")
    with torch.no_grad():
        out = model(**enc, labels=labels)
        row = model(**plain, output_attentions=True).attentions[0][0, 0, 1]
    h, n_layers, heads = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads
    rates = {r.name: r.measured for r in masking_lab.measure_rates(TEXT, masking_lab.MaskSettings(), 2000).rates}
    unique = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    return [
        [f"{s} tokens", f"H = {h}", f"(1, {s}, {h})"],
        ["cosine 1.000"],
        [f"p = {float(row.max()):.3f}", f"√{h // heads}"],
        [f"(1, {s}, {cfg.vocab_size})", f"{n_layers + 1} × (1, {s}, {h})", f"{n_layers} × (1, {heads}, {s}, {s})"],
        [f"{float(out.loss):.4f}", "tired"],
        [f"{rates['[MASK]']:.1%}", f"{rates['random']:.1%}", f"{rates['kept']:.1%}"],
        ["10 distinct masks", "4 times", "two for-loops"],
        ["whole sentences", "trained with NSP", "NSP run"],
        [f"{bert_family.member('bert-base').masked_lm:,}", "335,174,458", f"{unique:,}"],
        [f"→ {predict(loaded, MASKED).masks[0].candidates[0].token} "],
        ["16×", f"S = {s} tokens"],
        ["4,416,698", "2 heads", "not reachable"],
    ]


def expect_tab(page, name: str) -> None:
    """The tab ``name`` is the one shown."""
    from playwright.sync_api import expect

    expect(page.get_by_role("tab", name=name, exact=True)).to_have_attribute("aria-selected", "true",
                                                                              timeout=TIMEOUT_MS)


def test_a_learner_walks_the_path(browser_page, app_url, expected):
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url)
    expect_tab(page, "Learn")
    text_box = page.locator("#learn-text textarea")
    text_box.fill(TEXT)
    text_box.press("Enter")
    answer, question = page.locator("#learn-answer"), page.locator("#learn-question")
    for number, shown in enumerate(expected, start=1):
        if number > 1:
            page.click("#learn-next")
        expect(question).to_contain_text(f"Step {number} of 14", timeout=TIMEOUT_MS)
        for value in shown:
            expect(answer).to_contain_text(value, timeout=TIMEOUT_MS)
        if number == 3:
            screenshot(page, "learn_path")
            page.set_viewport_size({"width": 390, "height": 844})
            screenshot(page, "learn_path_phone")
            page.set_viewport_size({"width": 1280, "height": 1000})
    page.locator("#learn-code-panel").get_by_text("Show the code").click()
    expect(page.locator("#learn-code")).to_contain_text("BertForMaskedLM(config)", timeout=TIMEOUT_MS)

    page.click("#learn-prev")  # one step back: a pretraining question, answered in the Pretrain tab
    expect(question).to_contain_text("Step 11 of 14", timeout=TIMEOUT_MS)
    page.click("#learn-open")  # keep exploring: the Pretrain tab
    expect_tab(page, "Pretrain")


def test_keep_exploring_and_a_deep_link_set_up_the_tab(browser_page, app_url):
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url + "?tab=learn&step=attention&text=" + TEXT.replace(" ", "+"))
    expect(page.locator("#learn-question")).to_contain_text("Step 3 of 14", timeout=TIMEOUT_MS)
    expect(page.locator("#learn-answer")).to_contain_text("query token the", timeout=TIMEOUT_MS)
    page.click("#learn-open")
    expect_tab(page, "Attention")
    expect(page.locator("#att-text textarea")).to_have_value(TEXT, timeout=TIMEOUT_MS)
    expect(page.locator("#att-info")).to_contain_text("13 tokens", timeout=TIMEOUT_MS)

    page.goto(app_url + "?tab=fill-mask&text=" + MASKED.replace(" ", "+").replace("[", "%5B").replace("]", "%5D"))
    expect_tab(page, "Fill-Mask")
    expect(page.locator("#fm-text textarea")).to_have_value(MASKED, timeout=TIMEOUT_MS)
    expect(page.locator("#fm-filled")).not_to_be_empty(timeout=TIMEOUT_MS)

    page.goto(app_url + "?tab=nowhere")
    expect(page.locator(".toast-body")).to_contain_text("unknown tab 'nowhere'", timeout=TIMEOUT_MS)

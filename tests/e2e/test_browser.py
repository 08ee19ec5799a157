"""End-to-end browser tests: the real app (offline, tiny masked-LM) in headless system Chromium.

Asserts on what a person sees in each inference tab, and saves a full-page screenshot of
each (tokenizer.png, fill_mask.png) into $BERTDEMO_SCREENSHOTS when it is set (e.g.
BERTDEMO_SCREENSHOTS=tests/artifacts, gitignored; unset, none is taken). The other browser tests add attention_overview.png, attention.png, masking_lab.png, inside_bert.png,
pretrain.png and pretrain_compare.png; the phone-width twins (<tab>_phone.png) come from the phone pass of
test_accessibility.py.
Regenerate the screenshots (README.md, docs/screenshots.md), with the embedded masked-LM instead of the tiny random
model, with:

    BERTDEMO_SCREENSHOTS=docs/screenshots BERTDEMO_E2E_MODEL=embedded/bert-explorer-mlm \
        python -m pytest tests/e2e/test_browser.py tests/e2e/test_attention_tab.py \
        tests/e2e/test_masking_lab.py tests/e2e/test_inside.py tests/e2e/test_pretrain_browser.py \
        tests/e2e/test_accessibility.py
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.helpers import wait_until

from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, open_app, open_tab, set_open, slider, wait_idle

EMBEDDED_LABEL = "embedded/minilm-l6-uncased (offline, no MLM head)"


# every text the page's live regions held, in order (a screen reader reads each out)
SAID_JS = """() => { window.__said = []; new MutationObserver(() => {
  document.querySelectorAll('[aria-live]').forEach(e => { const t = e.textContent.trim();
    if (t && window.__said[window.__said.length - 1] !== t) window.__said.push(t); });
}).observe(document, {subtree: true, childList: true, characterData: true}); }"""


def test_tokenizer_tab(browser_page: Page, app_url: str):
    page = browser_page
    page.add_init_script(f"({SAID_JS})()")
    open_app(page, app_url)
    chips = page.locator("#tok-chips .token-chip")
    # A first result on load: the example, not empty panels.
    expect(chips.first).to_have_text("[CLS]", use_inner_text=True, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#tok-encoding")).to_contain_text("'input_ids': [101, 1045, 2293", timeout=RUN_TIMEOUT_MS)
    page.locator("#tok-text textarea").fill("I love tokenization! Unbelievably, BERT splits words.")
    page.locator("#tok-pair textarea").fill("Sentence B gets segment id 1.")
    page.click("#tok-run")

    expect(page.locator("#tok-encoding")).to_contain_text("'token_type_ids': [0, 0", timeout=RUN_TIMEOUT_MS)
    expect(chips.first).to_have_text("[CLS]", use_inner_text=True, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#tok-chips")).to_contain_text("segment", timeout=RUN_TIMEOUT_MS)  # sentence B arrived
    texts = chips.all_inner_texts()
    assert texts[0] == "[CLS]" and texts.count("[SEP]") == 2, texts
    assert "love" in texts and "##ization" in texts, texts
    assert any(t.startswith("##") for t in texts)
    assert chips.nth(texts.index("love")).get_attribute("data-id") == "2293"
    # A chip's tooltip tells its id, position and segment; sentence B chips are segment 1.
    assert "segment 1" in chips.nth(len(texts) - 2).get_attribute("title")
    encoding = page.locator("#tok-encoding").inner_text()
    assert "'attention_mask': [1, 1" in encoding and encoding.count("1, 1") >= 1

    stats = page.locator("#tok-stats")
    expect(stats).to_contain_text(f"{len(texts)} tokens")
    expect(stats).to_contain_text("words split into pieces")
    expect(stats).to_contain_text("0 unknown")

    # The token dataframe: the block holding the header row with an "attention_mask" column.
    table = page.locator("#tok-table")
    expect(table).to_contain_text("token_type_ids")
    expect(table).to_contain_text("2293")
    cells = table.inner_text()
    for value in ("[CLS]", "101", "##ization", "3989", "[SEP]", "102"):
        assert value in cells, f"{value} not in the token table"
    wait_idle(page)
    screenshot(page, "tokenizer")

    # Text / IDs: the chips show their ids instead of their text, and back.
    page.locator("#tok-view").get_by_text("IDs", exact=True).click()
    expect(chips.nth(texts.index("love"))).to_have_text("2293", use_inner_text=True)
    expect(chips.first).to_have_text("101", use_inner_text=True)
    page.locator("#tok-view").get_by_text("Text", exact=True).click()
    expect(chips.nth(texts.index("love"))).to_have_text("love", use_inner_text=True)

    # an emptied box is refused, and the tokens of the text before do not stay on screen under "Error" badges
    page.locator("#tok-text textarea").fill("")
    page.click("#tok-run")
    expect(page.locator(".toast-body").filter(has_text="Enter some text")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(stats).to_contain_text("This text was refused", timeout=RUN_TIMEOUT_MS)
    expect(chips).to_have_count(0)
    expect(table).not_to_contain_text("2293")

    # Enter looks a token up.
    set_open(page.locator("button.label-wrap", has_text="Vocabulary lookup"))
    box = page.locator("#tok-lookup-token textarea, #tok-lookup-token input").first
    expect(box).to_have_value("love", timeout=RUN_TIMEOUT_MS)  # mounted with its example
    wait_idle(page)
    answer = page.locator("#tok-lookup-token-out")

    def looked_up() -> bool:
        """Type "##ing" and press Enter: its id answers. On a loaded machine the tab's first draw can land after an idle
        page and write the example "love" back over what was typed (CI once answered "love → id 2293"): typed again."""
        box.fill("##ing")
        box.press("Enter")
        try:
            expect(answer).to_contain_text("2075", timeout=5_000)
        except AssertionError:
            return False
        return True

    wait_until(looked_up, timeout=RUN_TIMEOUT_MS / 1000, interval=0.1, what="the lookup of ##ing to answer")

    # where the pieces come from: WordPiece split and learnt in the page
    set_open(page.locator("#tok-wordpiece button.label-wrap", has_text="Where do the pieces come from?"))
    page.click("#tok-wp-run")
    split = page.locator("#tok-wp-split")
    expect(split).to_contain_text("tokenization → token + ##ization", timeout=RUN_TIMEOUT_MS)
    expect(split).to_contain_text("30,522 pieces")
    expect(page.locator("#tok-wp-learnt")).to_contain_text("first 500 embedded Wikipedia summaries",
                                                            timeout=RUN_TIMEOUT_MS)
    screenshot(page, "tokenizer_wordpiece")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "tokenizer_wordpiece_phone")
    # every dropdown's text ends in "…" before its arrow, the comparison's pickers too (their text was cut mid-letter
    # under the ▾: "bert-base-uncased (hub unreachal")
    set_open(page.locator("button.label-wrap", has_text="Compare two tokenizers"))
    expect(page.locator("#tok-right input")).to_be_visible()
    endings = page.evaluate("() => [...document.querySelectorAll('.secondary-wrap > input')].filter(i => i.offsetParent)"
                            ".map(i => [i.closest('[id]')?.id, getComputedStyle(i).textOverflow])")
    assert "tok-right" in dict(endings) and {e for _, e in endings} == {"ellipsis"}, endings
    # a screen reader heard each event end in words: the framework announced its missing translation key,
    # "common.complete", after every click (bertdemo/frontend_patch.py DONE_ANNOUNCED). Checked last: the page waits
    # 5 s between two announcements; progress goes first ("Loading", "In queue: 1 of 1", "Loading weights for …")
    page.wait_for_function("() => window.__said.some(t => ['Complete', 'Error'].includes(t) || t.startsWith('common.'))",
                           timeout=RUN_TIMEOUT_MS)
    said = page.evaluate("() => window.__said")
    assert "Complete" in said and [t for t in said if "common." in t] == [], said


def test_fill_mask_tab(browser_page: Page, app_url: str):
    page = browser_page
    open_app(page, app_url)
    open_tab(page, "Fill-Mask")
    page.locator("#fm-text textarea").fill("The capital of France is [MASK].")
    number = page.locator("#fm-top-k input[type=number]")
    number.fill("3")
    number.press("Enter")
    expect(slider(page, "Top-k")).to_have_value("3")
    page.click("#fm-run")

    plot = page.locator("#fm-plot .js-plotly-plot")
    expect(plot).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fm-plot g.point")).to_have_count(3)  # exactly the 3 bars asked for
    labels = page.locator("#fm-plot g.ytick text").all_text_contents()
    assert len(labels) == 3 and all(labels), labels
    texts = page.locator("#fm-plot .bartext").all_text_contents()
    assert texts and all(t.endswith("%") for t in texts), texts
    filled = page.locator("#fm-filled")
    expect(filled).to_contain_text("Answered by")
    expect(filled).to_contain_text("Filled with the top choices")
    expect(filled).to_contain_text(re.compile(r"The capital of France is \S+\."))
    expect(page.locator("#fm-notice")).not_to_contain_text("no trained masked-LM head")
    # what a screen reader hears around the answer: the chart's toolbar names its chart, the examples table is named,
    # and the footer's buttons say their words once (gradio's icons repeated them: "Settings Settings")
    expect(page.locator("#fm-plot").get_by_role("toolbar")).to_have_accessible_name("Chart tools: Predictions")
    expect(page.get_by_role("grid", name="Examples: a row fills the boxes above")).to_be_visible()
    footer = page.locator("footer")
    expect(footer.get_by_role("button", name="Settings", exact=True)).to_be_visible()
    wait_idle(page)
    screenshot(page, "fill_mask")

    # fast mode (int8): the checkbox says what it changes, and the answer names its precision
    fast = page.locator("#fm-fast")
    expect(fast).to_contain_text("probabilities change slightly")
    fast.locator("input[type=checkbox]").check()
    page.click("#fm-run")
    expect(filled).to_contain_text("int8", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fm-plot g.point")).to_have_count(3)
    fast.locator("input[type=checkbox]").uncheck()

    # an empty sentence: an error toast, and the page still works after it
    page.locator("#fm-text textarea").fill("")
    page.click("#fm-run")
    toast = page.locator(".toast-body").filter(has_text="Enter a sentence with [MASK]")
    expect(toast).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(toast).to_contain_text("Error")
    # The page still works after the error, and the chart's text twin reads the new bars (it kept reading the bars
    # of before the error: the emptied chart had dropped its listeners)
    page.locator("#fm-text textarea").fill("Hello [MASK].")
    page.click("#fm-run")
    expect(page.locator("#fm-filled")).to_contain_text("Hello", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fm-plot g.point")).to_have_count(3, timeout=RUN_TIMEOUT_MS)
    bars = page.locator("#fm-plot .js-plotly-plot").evaluate("g => Array.from(g.data[0].y).map(String)")
    first_column = "t => [...t.querySelectorAll('tr')].slice(1).map(r => r.firstElementChild.textContent)"
    page.wait_for_function(f"(bars) => {{ const t = document.querySelector('#fm-plot .pf-twin table');"
                           f" return !!t && JSON.stringify(({first_column})(t)) === JSON.stringify(bars); }}",
                           arg=bars, timeout=RUN_TIMEOUT_MS)


def test_a_failed_model_load_keeps_the_model_that_answers_and_a_headless_one_is_noted(browser_page: Page, app_url: str):
    page = browser_page
    open_app(page, app_url)
    status = page.locator("#model-status")
    before = page.locator("#model-box input").input_value()
    page.locator("#model-box input").click()
    option = page.get_by_role("option", name=re.compile(r"^bert-base-cased \(unavailable"))
    expect(option).to_be_visible()  # marked in the dropdown as unable to load now
    option.click()
    expect(status).to_contain_text("bert-base-cased could not load", timeout=RUN_TIMEOUT_MS)
    expect(status).to_contain_text("Still answering")
    expect(page.locator("#model-box input")).to_have_value(before)
    wait_idle(page)  # the picker's change back to the model that answers has run
    expect(status).to_contain_text("Still answering")  # the reverted choice does not hide the message
    expect(page.locator(".toast-body")).to_have_count(0)  # no toast over the status line

    # an encoder without a masked-LM head loads, and Fill-Mask says so in a notice that stays
    page.locator("#model-box input").click()
    page.get_by_role("option", name=EMBEDDED_LABEL).click()
    notice = page.locator("#fm-notice")
    expect(page.locator("#model-status")).to_contain_text("minilm", timeout=RUN_TIMEOUT_MS)
    open_tab(page, "Fill-Mask")
    expect(notice).to_contain_text("no trained masked-LM head", timeout=RUN_TIMEOUT_MS)
    expect(notice).to_be_visible()
    # Trying anyway gives the error toast, and the notice stays.
    page.locator("#fm-text textarea").fill("Nice to [MASK] you.")
    page.click("#fm-run")
    expect(page.locator(".toast-body").filter(has_text="no trained masked-LM head")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    expect(notice).to_contain_text("no trained masked-LM head")

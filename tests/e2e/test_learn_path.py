"""End-to-end: a learner walks the Learn tab's steps in Chromium (the first twelve checked one by one); each step's live answer is checked
against the same model run here, and "keep exploring" opens the part of a tab that answers the step, set up with the sentence.

Saves learn_path.png (desktop) and learn_path_phone.png (390 px wide) into $BERTDEMO_SCREENSHOTS.
"""

from __future__ import annotations

import os
import re

import pytest
import torch

from bertdemo.learn import steps as learn_steps

from .conftest import screenshot
from .pages import open_tab, set_open, wait_idle

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


def keep_exploring(page, number: int) -> None:
    """Step ``number``'s Keep exploring opens the part of its tab that answers the step, set up and computed (it had
    opened the tab at its top with the answering section closed or empty); then back to the same step."""
    from playwright.sync_api import expect

    expect(page.locator("#learn-open")).to_contain_text("Keep exploring in", timeout=TIMEOUT_MS)
    page.click("#learn-open")
    if number == 3:  # the Attention tab, set up with the step's sentence
        expect_tab(page, "Attention")
        expect(page.locator("#att-text textarea")).to_have_value(TEXT, timeout=TIMEOUT_MS)
        expect(page.locator("#att-info")).to_contain_text("13 tokens", timeout=TIMEOUT_MS)
    elif number == 10:  # the experiment set up: Position embeddings unticked, on screen
        expect(page.locator("#pt-position-embeddings input")).not_to_be_checked(timeout=TIMEOUT_MS)
        expect(page.locator("#pt-position-embeddings")).to_be_in_viewport(timeout=TIMEOUT_MS)
    elif number == 11:  # the length schedule filled in (step 10 had left it empty)
        expect(page.locator("#pt-schedule textarea, #pt-schedule input").first).to_have_value("128:0.9,512:0.1",
                                                                                              timeout=TIMEOUT_MS)
    else:
        part = page.locator(ANSWERING_PART[number])
        expect(part).to_be_visible(timeout=TIMEOUT_MS)
        expect(part).to_contain_text(re.compile(r"\d"), timeout=TIMEOUT_MS)  # computed, not waiting
        expect(part).to_be_in_viewport(timeout=TIMEOUT_MS)
    if number == 9:  # the learner scrolls away at once: the follow-up's second scroll (at 1.2 s) leaves them there
        page.mouse.wheel(0, -50_000)
        page.wait_for_function("() => window.scrollY === 0", timeout=TIMEOUT_MS)
        page.wait_for_timeout(1_500)  # past the follow-up's last scroll
        expect(page.locator(ANSWERING_PART[number])).not_to_be_in_viewport()
    open_tab(page, "Learn")
    expect(page.locator("#learn-question")).to_contain_text(f"Step {number} of {len(learn_steps.STEPS)}",
                                                            timeout=TIMEOUT_MS)


# step -> the part of its tab that answers it, which Keep exploring opens (steps 3, 10 and 11: keep_exploring)
ANSWERING_PART = {
    2: "#in-order",  # the order test, open and computed
    6: "#ml-stats-table",  # the rates over many draws, measured
    7: "#ml-epochs-view",  # static vs dynamic, shown
    8: "#nsp-pairs",  # the NSP pairs, built
    9: "#in-anatomy",  # the anatomy, counted
}
KEPT_EXPLORING = {*ANSWERING_PART, 3, 10, 11}


def test_a_learner_walks_the_path(browser_page, app_url, expected):
    """The first twelve steps one by one, each answer against the model run here, and Keep exploring from each step
    that opens a part of another tab. First, Enter then Next before Enter's answer came: the page ends on step 2
    (Enter's answer, held back here until step 2 is drawn, arrives last and is not drawn over it; the JSON stays
    step 2's)."""
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url)
    expect_tab(page, "Learn")
    answer, question = page.locator("#learn-answer"), page.locator("#learn-question")
    expect(question).to_contain_text(f"Step 1 of {len(learn_steps.STEPS)}", timeout=TIMEOUT_MS)  # the page opens on it
    for value in expected[0]:
        expect(answer).to_contain_text(value, timeout=TIMEOUT_MS)
    held = []  # the first request after Enter (step 1 asked again) waits here until step 2 is on screen
    page.route("**/queue/join*", lambda route: route.continue_() if held else held.append(route))
    text_box = page.locator("#learn-text textarea")
    text_box.fill(TEXT)
    text_box.press("Enter")
    page.click("#learn-next")
    expect(question).to_contain_text(f"Step 2 of {len(learn_steps.STEPS)}", timeout=TIMEOUT_MS)
    assert len(held) == 1
    held[0].continue_()
    page.unroute("**/queue/join*")
    wait_idle(page)  # Enter's answer has come and gone
    expect(question).to_contain_text(f"Step 2 of {len(learn_steps.STEPS)}", timeout=TIMEOUT_MS)
    set_open(page.locator("button.label-wrap", has_text="As JSON (the /learn_step answer)"))
    expect(page.locator("#learn-raw")).to_contain_text(re.compile(rf'"?step"?\s*:\s*"{learn_steps.STEP_KEYS[1]}"'),
                                                       timeout=TIMEOUT_MS)
    for number, shown in enumerate(expected[1:], start=2):  # step 1 checked above
        if number > 2:  # on the Learn tab (the run that once found Next hidden here said no more than that)
            expect(page.get_by_role("tab", name="Learn", exact=True),
                   f"the Learn tab shown for step {number - 1}'s Next").to_have_attribute("aria-selected", "true",
                                                                                      timeout=TIMEOUT_MS)
            page.click("#learn-next")
        expect(question).to_contain_text(f"Step {number} of {len(learn_steps.STEPS)}", timeout=TIMEOUT_MS)
        for value in shown:
            expect(answer).to_contain_text(value, timeout=TIMEOUT_MS)
        if number == 3:
            screenshot(page, "learn_path")
            page.set_viewport_size({"width": 390, "height": 844})
            screenshot(page, "learn_path_phone")
            page.set_viewport_size({"width": 1280, "height": 1000})
        if number in KEPT_EXPLORING:
            keep_exploring(page, number)
    set_open(page.locator("#learn-code-panel button.label-wrap", has_text="Show the code"))
    expect(page.locator("#learn-code")).to_contain_text("BertForMaskedLM(config)", timeout=TIMEOUT_MS)

    page.click("#learn-prev")  # one step back: a pretraining question, answered in the Pretrain tab
    expect(question).to_contain_text(f"Step 11 of {len(learn_steps.STEPS)}", timeout=TIMEOUT_MS)
    page.click("#learn-open")  # keep exploring: the Pretrain tab
    expect_tab(page, "Pretrain")


def test_a_link_opens_the_model_it_names_and_keeps_it_and_an_open_code_panel_follows_the_view(browser_page, app_url):
    """`&model=` was overwritten by the page's other load handler: the box kept its default, and the next
    answer came from the default. The box shows the link's model, and every answer comes from it. An open "Show
    the code" kept the old sentence after a new answer ("Reopen to refresh"): it follows the view."""
    from playwright.sync_api import expect

    page = browser_page
    encoder = "embedded/bert-explorer-mlm"  # not the launched app's default
    page.goto(app_url + "?tab=fill-mask&text=Hello+%5BMASK%5D+world.&model=" + encoder)
    expect_tab(page, "Fill-Mask")
    expect(page.locator("#fm-filled")).to_contain_text(f"Answered by {encoder}", timeout=TIMEOUT_MS)
    expect(page.locator("#model-status")).to_contain_text(encoder, timeout=TIMEOUT_MS)
    expect(page.locator("#model-box input")).to_have_value(__import__("re").compile("^" + encoder), timeout=TIMEOUT_MS)
    set_open(page.locator(".code-panel .label-wrap").locator("visible=true").first)  # the Fill-Mask tab's panel
    code = page.locator("#fm-code")
    expect(code).to_contain_text("Hello [MASK] world.", timeout=TIMEOUT_MS)
    page.locator("#fm-text textarea").fill("Good [MASK] to you.")
    page.click("#fm-run")
    expect(page.locator("#fm-filled")).to_contain_text("Good", timeout=TIMEOUT_MS)
    expect(page.locator("#fm-filled")).to_contain_text(f"Answered by {encoder}")
    expect(code).to_contain_text("Good [MASK] to you.", timeout=TIMEOUT_MS)


def test_a_refused_request_leaves_no_answer_of_another_sentence(browser_page, app_url):
    """A second model that cannot load (Fill-Mask), or a sentence too long (Learn), left the previous answer
    for another sentence on the page under the new one."""
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url + "?tab=fill-mask&text=Hello+%5BMASK%5D.")
    filled = page.locator("#fm-filled")
    expect(filled).to_contain_text("Hello", timeout=TIMEOUT_MS)
    page.locator("#fm-text textarea").fill("Goodbye [MASK].")
    second = page.locator("#fm-second input")
    second.fill("roberta-base")
    second.press("Enter")
    page.locator("#fm-text textarea").click()  # the custom choice is committed when the box loses focus
    expect(second).to_have_value(__import__("re").compile("^roberta-base"), timeout=TIMEOUT_MS)  # or its label
    page.click("#fm-run")
    expect(page.locator(".toast-body").filter(has_text="roberta-base").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(filled).not_to_contain_text("Hello", timeout=TIMEOUT_MS)

    page.goto(app_url + "?step=embeddings&text=" + TEXT.replace(" ", "+"))
    answer = page.locator("#learn-answer")
    expect(answer).to_contain_text("tokens", timeout=TIMEOUT_MS)
    page.locator("#learn-text textarea, #learn-text input").first.fill("word " * 100)
    page.locator("#learn-text textarea, #learn-text input").first.press("Enter")
    expect(page.locator(".toast-body")).to_contain_text("the learning path shows at most", timeout=TIMEOUT_MS)
    expect(answer).not_to_contain_text("Your sentence is", timeout=TIMEOUT_MS)
    # the emptied step says why its question and guess are gone, and how to bring them back (D13)
    expect(page.locator("#learn-question")).to_contain_text("The step could not answer", timeout=TIMEOUT_MS)
    expect(page.locator("#learn-guess-choice")).to_be_hidden()  # no "Your guess" box without choices
    expect(page.locator("#learn-guess-number")).to_be_hidden()
    # nor a way into it: Keep exploring took the learner to the sentence before's view; its JSON is gone too
    expect(page.locator("#learn-open")).to_be_hidden()
    set_open(page.locator("button.label-wrap", has_text="As JSON (the /learn_step answer)"))
    expect(page.locator("#learn-raw")).not_to_contain_text("tokens")
    page.locator("#learn-text textarea, #learn-text input").first.fill(TEXT)
    page.locator("#learn-text textarea, #learn-text input").first.press("Enter")
    expect(page.locator("#learn-open")).to_contain_text("Keep exploring in Inside BERT", timeout=TIMEOUT_MS)
    expect(page.locator("#learn-open")).to_be_visible()
    expect(page.locator("#learn-guess-number")).to_be_visible()  # the step's number question asked again
    # Previous / Next come after the answer: a keyboard user reveals, reads, then tabs forward to Next (D14)
    assert page.evaluate("() => !!(document.querySelector('#learn-answer').compareDocumentPosition("
                         "document.querySelector('#learn-next')) & Node.DOCUMENT_POSITION_FOLLOWING)")


def test_step_9_table_reads_at_phone_width(_browser, app_url):
    """At 390 px the parameter table wrapped one character per line ("c o m p o n e n t"): it keeps whole
    words and scrolls in its own box; the page itself never scrolls sideways."""
    from playwright.sync_api import expect

    context = _browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(app_url + "?step=family&text=" + TEXT.replace(" ", "+"))
        expect(page.locator("#learn-question")).to_contain_text("bert-large have", timeout=TIMEOUT_MS)
        page.click("#learn-skip", timeout=TIMEOUT_MS)  # the step asks first; read without a guess
        table = page.locator("#learn-answer table")
        expect(table).to_be_visible(timeout=TIMEOUT_MS)
        header = table.locator("th").first
        expect(header).to_have_text("component")
        line = header.evaluate("th => parseFloat(getComputedStyle(th).lineHeight) || 24")
        assert header.evaluate("th => th.clientHeight") < 2 * line + 24  # one line of text, with its padding
        assert table.evaluate("t => t.scrollWidth > t.clientWidth")  # wider than the phone: it scrolls in its box
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # the step box's text ends in "…" before its arrow (it ran on under the ▾)
        step = page.locator("#learn-step input")
        text_end = step.evaluate("i => i.getBoundingClientRect().right - parseFloat(getComputedStyle(i).paddingRight)")
        arrow = page.locator("#learn-step .icon-wrap").bounding_box()
        assert text_end <= arrow["x"] + 1 and step.evaluate("i => getComputedStyle(i).textOverflow") == "ellipsis"
        # Keep exploring on a phone: the anatomy it opens stays on screen once the tab has settled (the phone's own
        # "bring the answer into view" for the run button it pressed took the page back to the tab's first section)
        page.click("#learn-open")
        anatomy = page.locator("#in-anatomy")
        expect(anatomy).to_contain_text("parameters", timeout=TIMEOUT_MS)
        wait_idle(page)
        page.wait_for_timeout(3_500)  # past the last look of the phone's bring-into-view (3 s after the page is idle)
        expect(anatomy).to_be_in_viewport()
    finally:
        context.close()


def test_keep_exploring_why_the_b_puts_the_steps_own_pair_side_by_side_in_fill_mask(browser_page, app_url):
    """"Why the B in BERT?" opens Fill-Mask on the step's own blank (a word with words after it that decide it),
    answered by the step's masked twin with its left-to-right twin as the second model."""
    from playwright.sync_api import expect

    from bertdemo.models import twin_curve
    from bertdemo.models.twins import PAIRS, TWIN_NAMES

    mlm, ltr = (TWIN_NAMES[k] for k in PAIRS[twin_curve.showcase_pair(twin_curve.read_curve())])
    page = browser_page
    page.goto(app_url + "?step=why-b&text=The+dog+barked+all+night+and+kept+the+neighbours+awake.")
    expect(page.locator("#learn-open")).to_contain_text("Keep exploring in Fill-Mask", timeout=TIMEOUT_MS)
    page.click("#learn-open")
    expect(page.locator("#fm-text textarea")).to_have_value(
        "The [MASK] barked all night and kept the neighbours awake.", timeout=TIMEOUT_MS)
    expect(page.locator("#fm-second input")).to_have_value(__import__("re").compile(f"^{ltr}"), timeout=TIMEOUT_MS)
    expect(page.locator("#fm-targets textarea")).to_have_value("dog", timeout=TIMEOUT_MS)  # the step's ranks, there
    expect(page.locator("#fm-plot")).to_contain_text(mlm, timeout=TIMEOUT_MS)
    expect(page.locator("#fm-plot")).to_contain_text(ltr, timeout=TIMEOUT_MS)


def test_keep_exploring_the_loss_takes_its_hidden_word_to_inside_bert_opened_for_the_first_time(browser_page, app_url):
    """The loss step's Keep exploring, on a page that had not opened Inside BERT yet: the step's blank and its right
    word reach the tab and its loss section (a script emptying the example's word on the sentence's change emptied
    this one too, when the tab was first drawn)."""
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url + "?step=loss&text=" + TEXT.replace(" ", "+"))
    expect(page.locator("#learn-open")).to_contain_text("Keep exploring in Inside BERT", timeout=TIMEOUT_MS)
    page.click("#learn-open")
    expect_tab(page, "Inside BERT")
    expect(page.locator("#in-text textarea")).to_have_value(TEXT.replace("tired.", "[MASK]."), timeout=TIMEOUT_MS)
    expect(page.locator("#in-words textarea")).to_have_value("tired", timeout=TIMEOUT_MS)
    expect(page.locator("#in-loss-info")).to_contain_text("tired", timeout=TIMEOUT_MS)


def test_a_link_into_inside_bert_keeps_no_default_right_word_and_the_step_list_closes_on_tab(browser_page, app_url):
    """The default right word ("paris") scored an unrelated sentence's mask (p = 3.4e-08): a linked sentence
    gets no right word of the default. On the same page's Learn tab, the Step list stayed open after the focus left
    it, covering the buttons under it (D14): a Tab away closes it and the focus goes on to the next control, never
    to the page's body."""
    from playwright.sync_api import expect

    page = browser_page
    page.goto(app_url + "?tab=inside&text=I+sat+on+the+river+%5BMASK%5D.")
    expect_tab(page, "Inside BERT")
    expect(page.locator("#in-text textarea")).to_have_value("I sat on the river [MASK].", timeout=TIMEOUT_MS)
    expect(page.locator("#in-words textarea")).to_have_value("", timeout=TIMEOUT_MS)

    open_tab(page, "Learn")
    box = page.locator("#learn-step input")
    expect(box).to_be_visible(timeout=TIMEOUT_MS)
    box.focus()
    page.keyboard.press("ArrowDown")  # the list opens
    expect(page.locator("#learn-step [role=option]").first).to_be_visible(timeout=TIMEOUT_MS)
    page.keyboard.press("Tab")
    expect(page.locator("#learn-step [role=listbox]")).to_be_hidden(timeout=TIMEOUT_MS)  # closed
    expect(page.locator("#learn-step input")).to_have_attribute("aria-expanded", "false")
    assert page.evaluate("() => document.activeElement !== document.body && "
                         "!document.querySelector('#learn-step').contains(document.activeElement)")

"""A page open asks the server only for what the tab it opens on shows (bertdemo/ui/first_show.py), in Chromium.

A link to Fill-Mask sends nothing of the Learn tab (its first answer), of the Attention tab (its sliders fitted
to the model) or of the Class tab (a link's class, read only for a ?class= / ?teacher= link or a membership):
each tab's work is sent when the tab is first shown, once. A link to a Learn step answers it in one request.
The page's requests are counted in the browser (``queue/join``, by event id from the config); a marker pushed
into that list before each click orders what was sent before it from what came after, so no fixed wait stands
for "nothing was sent".

Saves attention_first_show(_phone).png and learn_first_show(_phone).png (1280 and 390 px) into $BERTDEMO_SCREENSHOTS.
"""

from __future__ import annotations

import os
import re

import httpx
from playwright.sync_api import expect

from bertdemo.learn import steps as learn_steps

from .conftest import screenshot
from .pages import JOINS, RUN_TIMEOUT_MS, open_tab, resize, slider

NAMES = ("open_link", "answer_shown", "learn_step", "draw_step", "shape_sliders", "read_link")


def _events(app_url: str) -> dict[str, set[int]]:
    """Each event's ids by its handler's name (gradio numbers a repeated name: learn_step, learn_step_1, ...), and
    the Fill-Mask answer's ("run_fill_mask": the event of the tab's button)."""
    config = httpx.get(app_url + "config", timeout=30).json()
    button = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "fm-run")
    ids: dict[str, set[int]] = {}
    for dep in config["dependencies"]:
        name = re.sub(r"_\d+$", "", dep.get("api_name") or "")
        if name in NAMES:
            ids.setdefault(name, set()).add(dep["id"])
        if [button, "click"] in [list(t) for t in dep["targets"]]:
            ids.setdefault("run_fill_mask", set()).add(dep["id"])
    assert set(ids) == {*NAMES, "run_fill_mask"} and len(ids["run_fill_mask"]) == 1
    return ids


def _count(sent: list, events: set[int]) -> int:
    return sum(e in events for e in sent)


def _first(sent: list, events: set[int]) -> int:
    return min(i for i, e in enumerate(sent) if e in events)


def _mark(page, name: str) -> None:
    page.evaluate("(name) => window.__joins.push(name)", name)


def _sent(page) -> list:
    return page.evaluate("() => window.__joins")


def _layers(app_model_dir: str) -> int:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(os.environ.get("BERTDEMO_E2E_MODEL") or app_model_dir).num_hidden_layers


def test_a_link_to_fill_mask_asks_for_the_other_tabs_when_they_are_shown_once(browser_page, app_url, app_model_dir):
    ids = _events(app_url)
    page = browser_page
    page.add_init_script(JOINS)
    page.goto(app_url + "?tab=fill-mask&text=Paris+is+the+%5BMASK%5D+of+France.")
    expect(page.get_by_role("tab", name="Fill-Mask", exact=True)).to_have_attribute("aria-selected", "true",
                                                                                     timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fm-filled")).not_to_be_empty(timeout=RUN_TIMEOUT_MS)  # the view is on screen
    expect(page.locator("#fm-text textarea")).to_have_value("Paris is the [MASK] of France.")  # the link's text

    _mark(page, "learn")
    open_tab(page, "Learn")
    expect(page.locator("#learn-question")).to_contain_text(f"Step 1 of {len(learn_steps.STEPS)}",
                                                            timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#learn-progress-line")).to_contain_text(f"0 of {len(learn_steps.STEPS)} steps done")

    _mark(page, "attention")
    open_tab(page, "Attention")
    last_layer = str(_layers(app_model_dir) - 1)
    expect(slider(page, "Layer")).to_have_attribute("max", last_layer, timeout=RUN_TIMEOUT_MS)  # fitted to the model

    screenshot(page, "attention_first_show")  # the tab as first shown: the example, the sliders fitted
    resize(page, 390, 844)
    screenshot(page, "attention_first_show_phone")
    open_tab(page, "Learn")
    screenshot(page, "learn_first_show_phone")  # the path's first answer, drawn when the tab was first shown
    resize(page, 1280, 1000)
    screenshot(page, "learn_first_show")

    _mark(page, "back")  # both tabs again, then a Fill-Mask answer: their work is not asked for again
    open_tab(page, "Attention")
    open_tab(page, "Learn")
    open_tab(page, "Fill-Mask")
    answers = _count(_sent(page), ids["run_fill_mask"])
    page.click("#fm-run")  # its request is the clock: whatever the tabs' selects sent is in the list before it
    page.wait_for_function("([ids, n]) => window.__joins.filter(j => ids.includes(j)).length > n",
                           arg=[sorted(ids["run_fill_mask"]), answers], timeout=RUN_TIMEOUT_MS)

    sent = _sent(page)
    opening = sent[:sent.index("learn")]
    assert _count(opening, ids["open_link"]) == 1 and _count(opening, ids["run_fill_mask"]) == 1
    assert _count(opening, ids["answer_shown"] | ids["shape_sliders"] | ids["read_link"]) == 0
    assert _count(sent, ids["answer_shown"]) == 1 and _first(sent, ids["answer_shown"]) > sent.index("learn")
    assert _count(sent, ids["shape_sliders"]) == 1 and _first(sent, ids["shape_sliders"]) > sent.index("attention")
    assert _count(sent, ids["read_link"]) == 0


def test_a_link_to_a_learn_step_answers_it_in_one_request(browser_page, app_url):
    ids = _events(app_url)
    page = browser_page
    page.add_init_script(JOINS)
    page.goto(app_url + "?step=loss&text=The+cat+sat+on+the+mat.")
    expect(page.locator("#learn-question")).to_contain_text(f"Step 5 of {len(learn_steps.STEPS)}",
                                                            timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#learn-predict-prompt")).to_contain_text("first", timeout=RUN_TIMEOUT_MS)  # asked, drawn
    sent = _sent(page)
    assert _count(sent, ids["answer_shown"]) == 1
    assert _count(sent, ids["learn_step"] | ids["draw_step"]) == 0  # the step box's write answers nothing more


def test_a_link_to_a_learn_step_with_a_refused_sentence_says_why(browser_page, app_url):
    page = browser_page
    page.goto(app_url + "?step=loss&text=The+%5BMASK%5D+sat+on+the+mat.")  # the steps hide a word themselves
    toast = page.locator(".toast-body").filter(has_text="without [MASK]")
    expect(toast).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#learn-text textarea")).to_have_value("The [MASK] sat on the mat.")
    expect(page.locator("#learn-question")).not_to_contain_text("Step")  # no answer of another sentence drawn


# every queue request held in the page until the test releases them: the deep link is followed only then
HOLD_JOINS = """(() => {
  const orig = window.fetch.bind(window);
  let release;
  const released = new Promise(r => { release = r; });
  window.__releaseJoins = () => release();
  window.fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : (input.url || String(input));
    if (url.includes('/queue/join')) await released;
    return orig(input, init);
  };
})();"""


def test_attention_opened_before_the_link_is_followed_fits_its_sliders_once_it_is(browser_page, app_url,
                                                                                    app_model_dir):
    """A visitor who opens Attention within a second of opening the page, before the page's deep link has been
    followed: its sliders are fitted to the model once the link is followed (before, they never were)."""
    page = browser_page
    page.add_init_script(JOINS)
    page.add_init_script(HOLD_JOINS)
    page.goto(app_url)
    attention = page.get_by_role("tab", name="Attention", exact=True).locator("visible=true").first
    expect(attention).to_be_visible(timeout=RUN_TIMEOUT_MS)
    attention.click()
    expect(attention).to_have_attribute("aria-selected", "true")
    assert _sent(page) == []  # the deep link not yet followed: its request is held
    page.evaluate("() => window.__releaseJoins()")
    last_layer = str(_layers(app_model_dir) - 1)
    expect(slider(page, "Layer")).to_have_attribute("max", last_layer, timeout=RUN_TIMEOUT_MS)
    expect(attention).to_have_attribute("aria-selected", "true")  # the page stayed where the visitor went

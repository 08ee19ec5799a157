"""An answer to an older request never draws over a newer one's (bertdemo/frontend_patch.py LATEST_ANSWER).

The Tokenizer tab's first answer (the example sentence, sent when the tab is shown) is held back in the browser
until the visitor's own Tokenize has been answered and drawn, then let go: the server answers it, and the chips
still show the visitor's sentence. Without the fix the example's tokens were drawn under the visitor's sentence.
"""

from __future__ import annotations

import json

from playwright.sync_api import Page, Route, expect

from bertdemo.ui.tokenizer_tab import EXAMPLE_A
from tests.helpers import wait_until

from .pages import RUN_TIMEOUT_MS, open_tab, set_open

# (window.__bdCompleted, kept by every test's page: the event id of every answer the queue's stream has brought;
# tests/e2e/conftest.py, PAGE_LOG_JS)


def test_the_tabs_first_answer_coming_last_leaves_the_visitors_own_answer_drawn(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(app_url)
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)
    held: list[Route] = []

    def hold_the_example(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        if not held and (body.get("data") or [None])[0] == EXAMPLE_A:
            held.append(route)  # answered below, once the visitor's own answer is drawn
        else:
            route.continue_()

    page.route("**/queue/join*", hold_the_example)
    open_tab(page, "Tokenizer")
    wait_until(lambda: held, timeout=RUN_TIMEOUT_MS / 1000, what="the tab's first request (the example) to be sent")

    page.locator("#tok-text textarea").fill("Zebras gallop quickly.")
    page.click("#tok-run")
    chips = page.locator("#tok-chips .token-chip")
    expect(chips.nth(1)).to_have_text("zebra", use_inner_text=True, timeout=RUN_TIMEOUT_MS)

    with page.expect_response("**/queue/join*") as joined:
        held[0].continue_()
    event_id = joined.value.json()["event_id"]
    wait_until(lambda: event_id in page.evaluate("window.__bdCompleted"), timeout=RUN_TIMEOUT_MS / 1000,
               what="the held request to be answered")
    # a request sent after that answer came: its answer, drawn, comes after it in the page's stream
    set_open(page.locator("button.label-wrap", has_text="Vocabulary lookup"))
    page.click("#tok-lookup")
    expect(page.locator("#tok-lookup-token-out")).to_contain_text("2293", timeout=RUN_TIMEOUT_MS)  # love → 2293

    assert chips.all_inner_texts()[:4] == ["[CLS]", "zebra", "##s", "gallo"]
    assert page.locator("#tok-text textarea").input_value() == "Zebras gallop quickly."


def test_a_newer_requests_skip_leaves_the_older_requests_value_to_be_drawn(browser_page: Page):
    """The page's numbering itself (LATEST_ANSWER's ``__bdNext`` and ``__bdFresh``, as served), run in the browser: a
    newer request's ``gr.skip()`` that came first claimed the component, and the older request's value, the one
    answer that wrote it, was left out (the model status stayed "Loading the model…" in a full run)."""
    from bertdemo.frontend_patch import LATEST_ANSWER

    (methods,) = [new.removesuffix("async handle_data(e,t){") for old, new in LATEST_ANSWER.edits
                  if old == "async handle_data(e,t){"]
    outcome = browser_page.evaluate("""methods => {
      const page = new (eval('(class {' + methods + '})'))();
      const skip = {__type__: 'update'}, older = page.__bdNext(), newer = page.__bdNext();
      const first = page.__bdFresh([7, 8], [skip, 'newer text'], newer);  // the newer answer comes first
      const second = page.__bdFresh([7, 8], ['older status', 'older text'], older);
      return [first, second];
    }""", methods)
    assert outcome == [[{"__type__": "update"}, "newer text"], ["older status", None]]  # None: left out

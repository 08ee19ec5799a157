"""Enter pressed on a new sentence while the answer to the one before is still on its way is answered, never
dropped (``bertdemo/ui/latest_input.py``, and ``bertdemo/frontend_patch.py`` PRESS_KEPT when the one before is
refused).

The first sentence's request is held in the browser until the second Enter has been pressed, then let go: the page
must then answer the second sentence. Gradio's page ignored a press of an event still pending ("once"); with the
event's "always_last" it kept the press but dropped it again when the pending request failed, and showed that
request's refusal over the page as the newer sentence's. Seen on a loaded CI machine, where the Learn tab's
refusal took longer than the next Enter (tests/e2e/test_learn_predict.py).
"""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

from tests.helpers import wait_until

from .pages import ERRORS_SHOWN, RUN_TIMEOUT_MS, errors_shown

FIRST = "The cat sat on the mat because it was tired."
REFUSED = "The [MASK] sat on the mat."  # Learn reads a sentence without [MASK]: refused at once
SECOND = "The dog slept on the rug because it was late."
THIRD = "A bird sang in the tree because it was spring."


def send_while_on_its_way(page: Page, sentence: str, then: str) -> None:
    """Enter on ``sentence``, then Enter on ``then`` while the answer to ``sentence`` is on its way: the page's stream
    of answers (``/queue/data``: it ends once the session's requests are answered) is fetched by the test and
    handed to the page only after the second Enter."""
    box = page.locator("#learn-text textarea, #learn-text input").first
    held: list = []

    def hold(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))  # the first answer, read in full and kept from the page

    page.route("**/queue/data*", hold)
    box.fill(sentence)
    box.press("Enter")
    # the route's handler runs while Playwright is waited on: each poll waits 10 ms in the page
    wait_until(lambda: held or page.wait_for_timeout(10), timeout=RUN_TIMEOUT_MS / 1000,
               what=f"the answer to {sentence!r}")
    box.fill(then)
    box.press("Enter")  # while the answer before is on its way
    route, answer = held[0]
    route.fulfill(response=answer)
    page.unroute("**/queue/data*")


def test_enter_on_a_new_sentence_while_the_one_before_is_on_its_way_is_answered(browser_page: Page, app_url: str):
    page = browser_page
    page.add_init_script(ERRORS_SHOWN)
    page.goto(app_url + "?step=outputs&text=" + FIRST.replace(" ", "+"))
    prompt = page.locator("#learn-predict-prompt")
    expect(prompt).to_contain_text("The cat sat on the mat", timeout=RUN_TIMEOUT_MS)

    send_while_on_its_way(page, SECOND, then=THIRD)  # the one before answered: the newer sentence is asked after it
    expect(prompt).to_contain_text("A bird sang in the tree", timeout=RUN_TIMEOUT_MS)

    send_while_on_its_way(page, REFUSED, then=FIRST)  # the one before refused: the newer sentence is still asked
    expect(prompt).to_contain_text("The cat sat on the mat because it was", timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".toast-body.error")).to_have_count(0)  # the refusal of a sentence already replaced
    assert errors_shown(page) == 0

"""A shared link in the real page: a link naming a run this server does not have says so once, plainly, and
the model box keeps a model that answers (no stacked errors, no error badge on the box); the Share button gives
the link of the view on screen, and that link opens the same view."""

from __future__ import annotations

import re
from urllib.parse import quote

from playwright.sync_api import Page, expect

from .pages import RUN_TIMEOUT_MS, open_tab, wait_idle

SENTENCE = "Nice to [MASK] you."


def test_an_unknown_run_is_named_once_and_the_model_box_stays_usable(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(f"{app_url}?tab=fill-mask&text={quote(SENTENCE)}&run=run-gone")
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)
    # the view, with the box's model: the link's last event has run (the Learn tab's answer waits until it is shown)
    expect(page.locator("#fm-filled")).to_contain_text("Nice to", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    toasts = page.locator(".toast-body")
    expect(toasts).to_have_count(1)
    expect(toasts).to_contain_text("'run:run-gone/checkpoint' cannot be used here")
    expect(toasts).not_to_contain_text("Error")
    box = page.locator("#model-box")
    expect(box.locator("[data-testid='status-tracker']").filter(has_text="Error")).to_have_count(0)
    expect(box.locator("input")).to_be_editable()


def test_the_share_button_gives_the_link_of_the_view_on_screen(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(app_url)
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)
    open_tab(page, "Fill-Mask")
    page.locator("#fm-text textarea").fill("The teacher pinned this [MASK].")
    page.locator("#share-view").click()
    link = page.locator("#share-link textarea, #share-link input").first
    expect(link).to_have_value(re.compile(re.escape(f"{app_url}?tab=fill-mask&text=The+teacher+pinned+this+%5BMASK%5D.")
                                          + "&model=.+"), timeout=RUN_TIMEOUT_MS)
    shared = link.input_value()
    other = page.context.new_page()  # another phone opens it
    other.goto(shared)
    expect(other.locator("#fm-text textarea")).to_have_value("The teacher pinned this [MASK].", timeout=RUN_TIMEOUT_MS)
    expect(other.locator("#fm-filled")).to_contain_text("The teacher pinned this", timeout=RUN_TIMEOUT_MS)
    expect(other.get_by_role("tab", name="Fill-Mask", exact=True).locator("visible=true").first).to_have_attribute(
        "aria-selected", "true")
    expect(other.locator(".toast-body")).to_have_count(0)

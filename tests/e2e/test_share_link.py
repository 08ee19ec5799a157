"""A shared link in the real page: a link naming a run this server does not have says so once, plainly, and
the model box keeps a model that answers (no stacked errors, no error badge on the box); the link's text reaches
Fill-Mask's filled sentence as text, never as markup (tests/e2e/test_deep_link_markup.py has the other places a
link's text is shown); the Share button gives the link of the view on screen, and that link opens the same view."""

from __future__ import annotations

import re
from urllib.parse import quote

from playwright.sync_api import Page, expect

from .pages import RUN_TIMEOUT_MS, open_tab, wait_idle

# an SVG link to ``javascript:`` in the link's text (an audit's link): gradio's Markdown sanitizer keeps it
SVG = '<svg><a href="javascript:alert(1)"><rect width="99" height="99"></rect></a></svg>'
SENTENCE = "Nice to [MASK] you. " + SVG
RENDERED = "span.md"  # a Markdown component's rendered text (gradio's MarkdownCode), apart from its status tracker
MARKUP = "svg, a, rect"


def test_a_link_with_an_unknown_run_and_markup_then_the_share_button(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(f"{app_url}?tab=fill-mask&text={quote(SENTENCE)}&run=run-gone")
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)
    # the view, with the box's model: the link's last event has run (the Learn tab's answer waits until it is shown)
    filled = page.locator("#fm-filled")
    expect(filled).to_contain_text("Nice to", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    toasts = page.locator(".toast-body")
    expect(toasts).to_have_count(1)
    expect(toasts).to_contain_text("'run:run-gone/checkpoint' cannot be used here")
    expect(toasts).not_to_contain_text("Error")
    box = page.locator("#model-box")
    expect(box.locator("[data-testid='status-tracker']").filter(has_text="Error")).to_have_count(0)
    expect(box.locator("input")).to_be_editable()
    # the link's text is shown as typed: no element of it in the rendered sentence (counted in the rendered text
    # only: the status tracker beside it draws its loading logo as an SVG while an answer is pending)
    expect(filled).to_contain_text('<a href="javascript:alert(1)">', timeout=RUN_TIMEOUT_MS)
    assert filled.locator(RENDERED).count() == 1
    assert filled.locator(RENDERED).locator(MARKUP).count() == 0

    # the Share button gives the link of the view on screen, and that link opens the same view
    open_tab(page, "Fill-Mask")
    page.locator("#fm-text textarea").fill("The teacher pinned this [MASK].")
    page.locator("#share-view").click()
    link = page.locator("#share-link textarea, #share-link input").first
    expect(link).to_have_value(re.compile(re.escape(f"{app_url}?tab=fill-mask&text=The+teacher+pinned+this+%5BMASK%5D.")
                                          + "&model=.+"), timeout=RUN_TIMEOUT_MS)
    shared = link.input_value()
    expect(link).to_have_accessible_name("Link to this view (copied to the clipboard)")  # not the copy button's label
    other = page.context.new_page()  # another phone opens it
    other.goto(shared)
    expect(other.locator("#fm-text textarea")).to_have_value("The teacher pinned this [MASK].", timeout=RUN_TIMEOUT_MS)
    expect(other.locator("#fm-filled")).to_contain_text("The teacher pinned this", timeout=RUN_TIMEOUT_MS)
    expect(other.get_by_role("tab", name="Fill-Mask", exact=True).locator("visible=true").first).to_have_attribute(
        "aria-selected", "true")
    expect(other.locator(".toast-body")).to_have_count(0)

"""A deep link's text reaches the page as text: the audit's links put an SVG link to ``javascript:`` into
the Learn step's answer (gradio's Markdown sanitizer keeps it; Fill-Mask's filled sentence is checked in
tests/e2e/test_share_link.py) and an ``<img>`` into the link warning's toast. In the real page, rendered by gradio:
no such element. Counted in the rendered text only: gradio's status tracker beside it draws its loading logo as an
SVG while an answer is pending."""

from __future__ import annotations

from urllib.parse import quote

from playwright.sync_api import Page, expect

from .axe import axe_violations
from .pages import RUN_TIMEOUT_MS

RENDERED = "span.md"  # a Markdown component's rendered text (gradio's MarkdownCode), apart from its status tracker
MARKUP = "svg, a, rect"
SVG = '<svg><a href="javascript:alert(1)"><rect width="99" height="99"></rect></a></svg>'


def test_a_deep_links_text_is_shown_as_typed_never_as_markup(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(f"{app_url}?step=loss&text={quote('The cat sat. ` ' + SVG + ' ` It was tired.')}")
    answer = page.locator("#learn-answer")
    expect(answer).to_contain_text('<a href="javascript:alert(1)">', timeout=RUN_TIMEOUT_MS)
    assert answer.locator(RENDERED).count() == 1
    assert answer.locator(RENDERED).locator(MARKUP).count() == 0

    page.goto(f"{app_url}?tab={quote('<img src=x>')}&text=hi")
    toast = page.locator(".toast-body").filter(has_text="could not be followed")
    expect(toast).to_contain_text("<img src=x>", timeout=RUN_TIMEOUT_MS)
    expect(toast).to_contain_text("unknown tab '<img src=x>'")  # what was wrong with it, named
    assert toast.locator("img").count() == 0
    assert axe_violations(page) == []  # the toast's close button is its one control (no control inside a control)

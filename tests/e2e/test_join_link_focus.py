"""A join link puts the cursor in the nickname box (D16), and never takes it from where the visitor put it: the page
script that follows a link (``bertdemo/ui/deep_links.py``, ``_open_js``), as served, run in the browser on a page of
the parts it reads. The box is laid out up to a poll after it is drawn; in the suite's runs a Join focused and
pressed meanwhile went to the nickname box, and was never sent."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from bertdemo.ui.deep_links import CLASS_FOCUS, _open_js

# the Class tab's join section: its heading and nickname box not yet laid out (the follow-up waits for them), Join
# already in reach of a keyboard
PAGE = """<div id="tab" style="display: none">
  <div id="class-join-heading"><h2>Join a class</h2></div>
  <div id="class-nickname"><textarea aria-label="Your nickname"></textarea></div>
</div>
<button id="class-join">Join</button>"""
# the link's follow-up has scrolled to the join section (its first part) and one task more has run: the cursor's
# try, made at the same poll just after it, is over
REVEALED = """() => { const heading = document.getElementById('class-join-heading');
  heading.scrollIntoView = () => setTimeout(() => { window.__revealed = true; }, 0); }"""


@pytest.mark.parametrize("visitor_focused", [None, "#class-join"])
def test_a_join_link_puts_the_cursor_in_the_nickname_box_unless_the_visitor_put_it_elsewhere(
        browser_page: Page, visitor_focused: str | None):
    page = browser_page
    page.set_content(PAGE)
    page.evaluate(REVEALED)
    page.evaluate("([js, focus]) => eval('(' + js + ')')({tab: 'class', focus: focus}, '')",
                  [_open_js({}, []), CLASS_FOCUS["class-join"]])
    if visitor_focused:
        page.locator(visitor_focused).focus()  # a keyboard's or a screen reader's move to Join, before the box shows
        expect(page.locator(visitor_focused)).to_be_focused()
    page.evaluate("() => { document.getElementById('tab').style.display = 'block'; }")
    page.wait_for_function("() => window.__revealed === true", timeout=10_000)
    expect(page.locator(visitor_focused or "#class-nickname textarea")).to_be_focused()

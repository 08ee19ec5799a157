"""Helpers the browser tests share: open the app and its tabs, wait until the page is idle, check that an
element fits a phone's screen. Import as ``from .pages import ...`` (no test module imports another)."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Locator, Page, expect

from .conftest import screenshot

RUN_TIMEOUT_MS = 60_000  # first requests on 2 slow cores may wait for the model to load
# an init script (page.add_init_script): window.__joins lists the event id (fn_index) of every queue/join sent
JOINS = """(() => {
  window.__joins = [];
  const orig = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = typeof input === 'string' ? input : (input.url || String(input));
    if (url.includes('/queue/join')) { try { window.__joins.push(JSON.parse(init.body).fn_index); } catch (e) {} }
    return orig(input, init);
  };
})();"""

# an init script: window.__errorsShown counts the error messages the page has shown in its toasts (each message
# item added, in a new toast or gathered into one), closed or not
ERRORS_SHOWN = """(() => {
  window.__errorsShown = 0;
  new MutationObserver(records => {
    for (const record of records) for (const node of record.addedNodes) {
      if (node.nodeType !== 1) continue;
      const mine = node.matches('.toast-message-item.error') ? 1 : 0;
      window.__errorsShown += mine + node.querySelectorAll('.toast-message-item.error').length;
    }
  }).observe(document, {childList: true, subtree: true});
})();"""


def errors_shown(page: Page) -> int:
    """How many error messages the page has shown since it opened (:data:`ERRORS_SHOWN` must be its init script)."""
    return page.evaluate("window.__errorsShown")


def open_app(page: Page, url: str) -> None:
    """Load the page (it opens on the Learn tab), wait until the default model is reported in use, and
    go to the Tokenizer tab, where the tests start."""
    page.goto(url)
    expect(page.locator("#learn-step")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)
    open_tab(page, "Tokenizer")
    expect(page.locator("#tok-run")).to_be_visible(timeout=RUN_TIMEOUT_MS)


CLICK_TRIES = 3  # a click the page moved away from is made again, at most this many times in all
TOOK_MS = 5_000  # how long a click's own effect (a tab shown, an accordion opened) may take to show


def click_until(click: Callable[[], None], took: Callable[[int], None]) -> None:
    """``click`` (a target's click) until ``took`` (an ``expect``, given a timeout in ms) holds. Playwright scrolls a target into
    view and then clicks its point; a page that moves between the two (a section above filling in and pushing it
    down, a deep link's late scroll) gets the click elsewhere (seen: the Inside BERT test's click on section 4
    landing on the tab's intro after section 3 opened; the Learn path's return to the Learn tab lost after a Keep
    exploring). ``took`` must hold only once the click took: a toggle is checked by the caller before each click."""
    for _ in range(CLICK_TRIES - 1):
        click()
        try:
            took(TOOK_MS)
            return
        except AssertionError:
            continue
    click()
    took(RUN_TIMEOUT_MS)


def press(button: Locator) -> None:
    """Press ``button`` from the keyboard (focus, Enter), as a keyboard user does. A pointer's click lands at the point
    Playwright measured, and a page whose status line grows above the button meanwhile (a run's poll adding a line)
    took it elsewhere: a Pause and a class's Join were never sent (the server's log of the failed runs has no request
    for them). A press of the focused button cannot be misplaced by layout; a page script that moves the focus can take
    it (a join link's follow-up put the cursor in the nickname box just after a Join was focused, and the Join was never
    sent: it now leaves the focus where the visitor put it, tests/e2e/test_join_link_focus.py)."""
    button.press("Enter")


def open_tab(page: Page, name: str) -> None:
    """Show the tab ``name`` (Gradio may hold a second copy of a tab button, in its overflow menu: the one shown is
    clicked)."""
    tab = page.get_by_role("tab", name=name, exact=True).locator("visible=true").first
    click_until(tab.click, lambda ms: expect(tab).to_have_attribute("aria-selected", "true", timeout=ms))


OPEN = re.compile(r"(^|\s)open(\s|$)")  # the class an accordion's header (button.label-wrap) has while it is open


def set_open(header: Locator, open_: bool = True) -> None:
    """Open (or, ``open_`` False, close) the accordion whose header is ``header``, then wait until the page is idle
    (its section filled in, so that the next click finds the page where it was)."""
    def took(ms: int) -> None:
        (expect(header).to_have_class if open_ else expect(header).not_to_have_class)(OPEN, timeout=ms)

    def toggle() -> None:  # clicked only while not as wanted: a click that did take is never undone
        if bool(OPEN.search(header.get_attribute("class") or "")) != open_:
            header.click()

    click_until(toggle, took)
    wait_idle(header.page)


# every plotly figure on screen has been laid out (plotly sets _fullLayout when it draws); hidden ones wait
PLOTS_DRAWN = ("() => [...document.querySelectorAll('.js-plotly-plot')]"
               ".every(g => g._fullLayout || g.offsetParent === null)")


# no component on screen waits for an answer: gradio marks a block ``pending`` from the moment its event is sent
# until the answer comes, queued or processing (its status line says "processing" only once the work has begun)
NONE_PENDING = "![...document.querySelectorAll('.pending')].some(e => e.offsetParent !== null)"  # an expression
NOTHING_PENDING = "() => " + NONE_PENDING


def wait_idle(page: Page) -> None:
    """Wait until no component on screen waits for an answer (sent, queued or processing) and every figure on
    screen is drawn (e.g. before a screenshot); each bounded by RUN_TIMEOUT_MS."""
    busy = page.locator("[data-testid='status-tracker']:not(.hide)").filter(has_text="processing")
    expect(busy).to_have_count(0, timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(NOTHING_PENDING, timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(PLOTS_DRAWN, timeout=RUN_TIMEOUT_MS)


def slider(page: Page, label: str):
    return page.get_by_label(f"range slider for {label}", exact=True)


WIDTH = 390  # a phone's width in CSS pixels


# What sticks out of the screen inside an element: every descendant drawn outside [0, WIDTH], unless
# an ancestor between it and the element clips it (a box that scrolls sideways) and that box fits.
OUTSIDE_JS = """(el, width) => {
  const out = [];
  const fits = r => r.left >= -1 && r.right <= width + 1;
  for (const node of [el, ...el.querySelectorAll('*')]) {
    const r = node.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || fits(r)) continue;
    let clipped = false;
    for (let a = node.parentElement; a && a !== el.parentElement; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (style.overflowX !== 'visible' && fits(a.getBoundingClientRect())) { clipped = true; break; }
    }
    if (!clipped) out.push(`${node.tagName}.${node.getAttribute('class') || ''} ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
  return out.slice(0, 5);
}"""


def assert_fits(page: Page, selector: str) -> None:
    """The element is inside the viewport's width and nothing in it reaches beyond the screen."""
    element = page.locator(selector).first
    expect(element).to_be_visible(timeout=RUN_TIMEOUT_MS)
    box = element.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (selector, box)
    assert element.evaluate(OUTSIDE_JS, WIDTH) == [], selector
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH  # the page never scrolls sideways


def open_tab_by_name(page: Page, name: str) -> None:
    """Tap the tab's own button, named and on screen (the tab bar wraps at phone width)."""
    button = page.locator("[role=tablist] [role=tab]").filter(has_text=name)
    expect(button).to_be_visible()
    button.click()
    expect(button).to_have_attribute("aria-selected", "true")


def plot_ready(page: Page, selector: str) -> None:
    """The figure ``selector`` drawn, scrolled to first (a long tab's figures are drawn near the screen)."""
    page.locator(selector).scroll_into_view_if_needed(timeout=RUN_TIMEOUT_MS)  # a busy server draws it later
    page.wait_for_function(
        f"() => {{ const p = document.querySelector('{selector} .js-plotly-plot'); return p && p.data && p.data.length; }}",
        timeout=RUN_TIMEOUT_MS,
    )


def resize(page: Page, width: int, height: int) -> None:
    """Set the viewport, then wait until the page is laid out at that width and idle (e.g. before a screenshot)."""
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_function(f"() => window.innerWidth === {int(width)}", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)


def create_class(page: Page, name: str) -> tuple[str, str]:
    """On the open Class tab, create a class named ``name``: its (join link, teacher link)."""
    set_open(page.locator("#class-teach .label-wrap"))
    page.locator("#class-name textarea, #class-name input").first.fill(name)
    page.locator("#class-create").click()
    links = page.locator("#class-links textarea").first
    expect(links).to_have_value(re.compile(r"http\S+\?class=[A-Z2-9]{6}\n.*http\S+\?teacher=\S+"), timeout=RUN_TIMEOUT_MS)
    join_link, teacher_link = [line.split(": ", 1)[1] for line in links.input_value().splitlines()]
    return join_link, teacher_link


def open_teacher_view(page: Page, url: str, name: str) -> str:
    """A new class named ``name`` made on the app at ``url``, its teacher's view open (and drawn) on ``page``: the
    class's join link."""
    page.goto(url)
    open_tab(page, "Class")
    join_link, teacher_link = create_class(page, name)
    page.goto(teacher_link)
    open_tab(page, "Class")
    expect(page.locator("#class-report")).to_contain_text("0 joined", timeout=RUN_TIMEOUT_MS)
    return join_link


def own_result(page: Page, url: str, shows: str) -> str:
    """Open the app at ``url`` on the Fine-tune tab and wait until the own-data section's result shows ``shows``
    (a run just ended): the result's text."""
    page.goto(url)
    open_tab(page, "Fine-tune")
    expect(page.locator("#own-result")).to_contain_text(shows, timeout=120_000)
    return page.inner_text("#own-result")


def own_box_at_both_widths(page: Page, name: str) -> None:
    """Screenshots ``<name>_1280`` and ``<name>_390`` of the own-data section, the page resized between them."""
    for width in (1280, 390):
        resize(page, width, 1000)
        page.locator("#own-box").scroll_into_view_if_needed()
        screenshot(page, f"{name}_{width}")


def join_class(page: Page, join_link: str, nickname: str) -> None:
    """``page`` opens the class's join link, the Class tab shows the link's code filled in, and the learner joins
    as ``nickname``, pressed once. (Three runs of the suite, CI's of 5e76894 among them, had a Join that was never
    sent: the link's follow-up had put the cursor back in the nickname box after the press focused Join. It no longer
    moves the focus once the visitor has: test_join_link_focus.py.)"""
    page.goto(join_link)
    open_tab(page, "Class")  # the link opens it (checked in test_class.py's first test: D16)
    expect(page.locator("#class-code input, #class-code textarea").first).to_have_value(
        join_link.split("=")[1], timeout=RUN_TIMEOUT_MS)  # the link's code, filled in
    box = page.locator("#class-nickname input, #class-nickname textarea").first
    expect(box).to_be_visible(timeout=RUN_TIMEOUT_MS)
    box.fill(nickname)
    press(page.locator("#class-join"))
    expect(page.locator("#class-joined")).to_contain_text("You are in", timeout=RUN_TIMEOUT_MS)

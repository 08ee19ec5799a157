"""Everyone can use it: axe-core finds no critical or serious violation (and headings in order) on any tab, at
1280 and 390 px, after each tab's main action (on the phone, each tab's button on screen and its main result inside
the screen: what a phone shows); every chart on screen has its text twin; on a phone the answer
comes into view when the main button is pressed; the keyboard alone reaches and works every tab and its main
control, the focus always visible, the tab list following the ARIA tabs pattern.

The all-tabs pass checks Pretrain, Fine-tune and Class as drawn. Their main actions are checked with axe where a test
performs them already (tests/e2e/axe.py): a live pretraining run with its curve drawn in test_pretrain_browser.py, a
fine-tuning run's curves in test_finetune.py, a class created and its teacher's view with a student in test_class.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, TimeoutError as PlaywrightTimeout, expect

from bertdemo.ui.access import ANSWERS

from .axe import axe_violations, load_axe
from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, WIDTH, assert_fits, open_app, open_tab_by_name, plot_ready, set_open, wait_idle

# tab -> (its main button, what shows its answer)
MAIN = {
    "Learn": ("learn-next", "#learn-question"),
    "Tokenizer": ("tok-run", "#tok-chips .token-chip"),
    "Fill-Mask": ("fm-run", "#fm-plot .js-plotly-plot"),
    "Attention": ("att-run", "#att-overview img"),
    "Inside BERT": ("in-run", "#in-emb-plot .js-plotly-plot"),
    "Word in context": ("wic-run", "#wic-sim-plot .js-plotly-plot"),
    "Masking & NSP": ("ml-run", "#ml-chips span"),
    "Pretrain": ("pt-start", None),
    "Fine-tune": ("ft-start", None),
    "Class": ("class-join", None),
}

# every figure drawn on screen has its text twin beside it, with at least one number or its "no numbers" line
MISSING_TWINS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(g => g.offsetParent !== null && g._fullLayout)
  .filter(g => { const t = g.parentNode.querySelector(':scope > .pf-twin');
                 return !t || !(t.querySelector('td') || t.querySelector('p')); })
  .map(g => (g.closest('[id]') || {}).id)"""


IN_VIEW_TIMEOUT_MS = 10_000
IN_UPPER_HALF_JS = """(selector) => { const b = document.querySelector(selector).getBoundingClientRect();
  return b.top < window.innerHeight / 2 && b.bottom > 0; }"""


# a box's place on the screen, the page's scroll, its figure's drawing element's classes (pf-stale: left for when it
# comes near the screen) and the page's error messages (a request past its time budget), for a failure's message
WHERE_JS = """(selector) => { const box = document.querySelector(selector);
  const errors = [...document.querySelectorAll('.toast-body')].map((t) => t.textContent.trim().slice(0, 300));
  if (!box) return {missing: selector, errors};
  const r = box.getBoundingClientRect(), drawing = box.querySelector('.pf-drawing');
  return {top: Math.round(r.top), bottom: Math.round(r.bottom), width: Math.round(r.width), scrollY: Math.round(scrollY),
          innerHeight: innerHeight, drawing: drawing ? drawing.className : null, errors}; }"""


def run_main_action(page: Page, tab: str, keyboard: bool) -> None:
    """Press the tab's main button (Enter where the keyboard has put the focus on it, else a tap) and wait for its
    answer: Learn's next question, another tab's result; the tabs without one (Pretrain, Fine-tune, Class) are
    checked as drawn."""
    button, answer = MAIN[tab]
    if answer is None:
        return
    before = page.locator("#learn-question").inner_text() if tab == "Learn" else None
    if keyboard:
        page.keyboard.press("Enter")
    else:
        page.click(f"#{button}")
    if tab == "Learn":
        expect(page.locator("#learn-question")).not_to_have_text(before, timeout=RUN_TIMEOUT_MS)
    else:
        try:
            expect(page.locator(answer).first).to_be_visible(timeout=RUN_TIMEOUT_MS)
        except AssertionError as missed:  # where the answer's box lay, and whether a figure was left for later
            raise AssertionError(f"{tab}: {page.evaluate(WHERE_JS, answer.split()[0])}") from missed
    wait_idle(page)


def phone_at_open(page: Page) -> None:
    """At 390 px on the page as it opens (Tokenizer): the status line wraps under the model box, and the token
    table's headers stay on one line (the table scrolls instead of breaking words letter by letter)."""
    box, status = page.locator("#model-box").bounding_box(), page.locator("#model-status").bounding_box()
    assert status["y"] >= box["y"] + box["height"] - 1, (box, status)  # stacked, not squeezed beside it
    expect(page.locator("#tok-chips .token-chip").first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    header = page.locator("#tok-table th").filter(has_text="token_type_ids").first
    expect(header).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert header.bounding_box()["height"] < 60  # one line, not a letter per line


def phone_tab_button(page: Page, tab: str) -> None:
    """At 390 px the tab bar wraps instead of hiding tabs behind an unlabelled menu: the tab's own button is on
    screen, once, inside the viewport."""
    button = page.locator("[role=tablist] [role=tab]").filter(has_text=tab)
    expect(button).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    expect(button).to_be_visible()
    box = button.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (tab, box)


def phone_tokenizer(page: Page) -> None:
    assert_fits(page, "#tok-chips")
    page.locator("#tok-chips .token-chip").nth(1).click()  # a tap shows what a hover shows
    expect(page.locator("#tap-tip")).to_contain_text("id")
    screenshot(page, "tokenizer_phone")


def phone_fill_mask(page: Page) -> None:
    # the inputs are one column: Sentence B under the text box, not squeezed beside it
    text, pair = page.locator("#fm-text").bounding_box(), page.get_by_label("Sentence B (optional, segment 1)")
    assert pair.bounding_box()["y"] > text["y"] + text["height"] - 1
    plot_ready(page, "#fm-plot")
    assert_fits(page, "#fm-plot")
    # the target words' table (filled in before the run): its headers on one line, the pieces of each target
    cell = page.locator("#fm-targets-table th").filter(has_text="probability")
    expect(cell).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert cell.bounding_box()["height"] < 60
    expect(page.locator("#fm-targets-table")).to_contain_text("token ##ization")
    screenshot(page, "fill_mask_phone")


# a code box's text lines and its copy and download buttons, as rectangles in the page (px)
CODE_LINES_AND_BUTTONS_JS = """(box) => {
  const rect = (r) => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  const buttons = [...box.closest('.block').querySelectorAll('.icon-button-wrapper button')]
    .map((b) => rect(b.getBoundingClientRect())).filter((r) => r.right > r.left);
  const lines = [...box.querySelectorAll('.cm-line')].filter((l) => l.textContent.trim()).map((l) => {
    const range = document.createRange(); range.selectNodeContents(l);
    return {text: l.textContent, rects: [...range.getClientRects()].map(rect)};
  });
  return {buttons, lines};
}"""


def phone_attention(page: Page) -> None:
    plot_ready(page, "#att-heatmap")
    assert_fits(page, "#att-heatmap")
    assert_fits(page, "#att-overview")  # the grid scrolls inside its own box ...
    cells = page.locator("#att-overview img").evaluate("i => i.getBoundingClientRect().width / i.naturalWidth")
    assert cells >= 0.75  # ... with cells of at least 42 px (56 px drawn): big enough for a finger
    screenshot(page, "attention_phone")
    # the code box's copy and download buttons cover no line of its code (its first lines ran under them)
    set_open(page.locator(".code-panel .label-wrap").locator("visible=true").first)
    expect(page.locator("#att-code")).to_contain_text("import torch", timeout=RUN_TIMEOUT_MS)
    found = page.locator("#att-code").evaluate(CODE_LINES_AND_BUTTONS_JS)
    assert len(found["buttons"]) == 2 and len(found["lines"]) > 5, found
    covered = [line["text"] for line in found["lines"] for r in line["rects"] for b in found["buttons"]
               if r["left"] < b["right"] and b["left"] < r["right"] and r["top"] < b["bottom"] and b["top"] < r["bottom"]]
    assert covered == [], covered


INSIDE_PLOTS = ("#in-emb-plot", "#in-neuron-plot", "#in-steps-plot", "#in-lens-plot", "#in-loss-plot")


def phone_inside(page: Page) -> None:
    # sections 1 and 2 answer "Look inside"; the others are computed when opened
    for label in ("Every step of this layer", "3 · Through the layers", "4 · The output and the loss"):
        set_open(page.locator("button.label-wrap", has_text=label))
    for plot in INSIDE_PLOTS:
        plot_ready(page, plot)
    wait_idle(page)
    for plot in INSIDE_PLOTS:
        assert_fits(page, plot)
    # the 3-column step-by-step grid is one column on a phone: every step's panel as wide as the figure
    domains = page.locator("#in-steps-plot .js-plotly-plot").evaluate(
        "p => Object.keys(p._fullLayout).filter(k => /^xaxis\\d*$/.test(k)).map(k => p._fullLayout[k].domain)")
    assert len(domains) >= 8 and all(d == [0, 1] for d in domains), domains
    screenshot(page, "inside_bert_phone")


def phone_masking(page: Page) -> None:
    expect(page.locator("#ml-chips")).to_contain_text("[MASK]", timeout=RUN_TIMEOUT_MS)
    page.click("#ml-compare")
    expect(page.locator("#ml-epochs-view")).to_contain_text("distinct", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    assert_fits(page, "#ml-chips")
    assert_fits(page, "#ml-epochs-view")
    cell = page.locator("#ml-epochs-view span[title]").first
    cell.click()
    expect(page.locator("#tap-tip")).to_have_text(cell.get_attribute("title"))
    screenshot(page, "masking_lab_phone")


def phone_pretrain(page: Page) -> None:
    # Table 5 in miniature: the paper's rows beside the twins' fit the phone whole (it scrolled 20 px sideways: the
    # prose's own padding around a table already laid out to the screen)
    set_open(page.locator("#pt-table5 button.label-wrap").first)
    table = page.locator("#pt-table5-table table")
    expect(table).to_be_visible(timeout=RUN_TIMEOUT_MS)
    table.scroll_into_view_if_needed()
    assert_fits(page, "#pt-table5-table")
    width, shown = table.evaluate("t => [t.scrollWidth, t.clientWidth]")
    assert width <= shown, (width, shown)
    # and so do its tables along training, one a task (their last column scrolled out of the screen)
    along = page.locator("#pt-table5-along table")
    along.last.scroll_into_view_if_needed()
    assert_fits(page, "#pt-table5-along")
    assert along.evaluate_all("ts => ts.map(t => t.scrollWidth <= t.clientWidth)") == [True, True]


# tab -> what a phone shows there once axe has looked: its main result inside the screen, no element of it wider
# than the screen (a wide table may scroll inside its own box), a tap doing what a hover does
PHONE = {"Tokenizer": phone_tokenizer, "Fill-Mask": phone_fill_mask, "Attention": phone_attention,
         "Inside BERT": phone_inside, "Masking & NSP": phone_masking, "Pretrain": phone_pretrain}


def fill_mask_twin_reads_its_bars(page: Page) -> None:
    """The Fill-Mask chart's text twin holds its own bars: each word and its probability, as drawn; not shown."""
    plot_ready(page, "#fm-plot")
    drawn = page.locator("#fm-plot .js-plotly-plot").evaluate(
        "g => { const b = g.data.find(t => t.type === 'bar'); return {y: Array.from(b.y), x: Array.from(b.x)}; }")
    rows = page.locator("#fm-plot .pf-twin table").first.evaluate(
        "t => [...t.querySelectorAll('tr')].slice(1).map(r => [...r.children].map(c => c.textContent))")
    assert [r[0] for r in rows] == [str(y) for y in drawn["y"]] and len(rows) >= 2
    for (_, shown, *_), prob in zip(rows, drawn["x"]):
        assert abs(float(shown) - prob) <= 5e-4 * max(abs(prob), 1e-12) + 1e-12, (shown, prob)
    assert page.locator("#fm-plot .pf-twin").evaluate("t => getComputedStyle(t).position") == "absolute"  # not shown
    # named by the label shown above the chart (the figure has no title of its own): it was "The chart"
    assert page.locator("#fm-plot .pf-twin caption").first.text_content() == "Predictions"
    # its columns by what they hold, its axes having no titles (they were "y | x | label")
    heads = page.locator("#fm-plot .pf-twin table").first.evaluate("t => [...t.rows[0].cells].map(c => c.textContent)")
    assert heads[:2] == ["item", "value"], heads


HEATMAPS_JS = """g => g._fullData.filter(t => t.type === 'heatmap' && t.visible !== false)
  .map(t => Array.from(t.z, row => Array.from(row)))"""
TWIN_TABLES_JS = """t => [...t.querySelectorAll('table')].map(tb => ({caption: tb.caption.textContent,
  rows: [...tb.querySelectorAll('tr')].slice(1).map(r => [...r.children].map(c => c.textContent))}))"""


def inside_twin_reads_each_rows_largest(page: Page) -> None:
    """A large figure (Inside BERT's embeddings) reads out each row's largest value."""
    plot_ready(page, "#in-emb-plot")
    strips = page.locator("#in-emb-plot .js-plotly-plot").evaluate(HEATMAPS_JS)
    assert sum(len(z) * len(z[0]) for z in strips) > 1000 and len(strips) >= 2  # too many numbers to read out
    tables = page.locator("#in-emb-plot .pf-twin").evaluate(TWIN_TABLES_JS)
    assert len(tables) == len(strips)
    # each table is named by its panel's title (make_subplots's annotations), not "series 1" to "series 5"
    panels = page.locator("#in-emb-plot .js-plotly-plot").evaluate(
        "g => (g.layout.annotations || []).map(a => (a.text || '').replace(/<br>/g, ' ').replace(/<[^>]+>/g, '').trim())"
        ".filter(Boolean)")
    for table, z in zip(tables, strips):
        assert "the largest value of each row" in table["caption"]
        assert "series" not in table["caption"] and any(p in table["caption"] for p in panels), (table["caption"], panels)
        assert [float(r[2]) for r in table["rows"]] == [pytest.approx(max(row), rel=5e-4, abs=1e-9) for row in z]


def attention_twin_reads_every_weight(page: Page) -> None:
    """A small figure (one attention head's weights) reads out every number, row by row."""
    plot_ready(page, "#att-heatmap")
    wait_idle(page)
    (weights,) = page.locator("#att-heatmap .js-plotly-plot").evaluate(HEATMAPS_JS)
    (table,) = page.locator("#att-heatmap .pf-twin").evaluate(TWIN_TABLES_JS)
    assert len(table["rows"]) == len(weights) and "largest" not in table["caption"]  # every weight, row by row
    for shown, row in zip(table["rows"], weights):
        assert [float(v) for v in shown[1:]] == [pytest.approx(w, rel=5e-4, abs=1e-9) for w in row]


# tab -> what its chart's text twin must read out, checked once the keyboard has run the tab's main action
TWINS_READ = {"Fill-Mask": fill_mask_twin_reads_its_bars, "Attention": attention_twin_reads_every_weight,
              "Inside BERT": inside_twin_reads_each_rows_largest}


ACTIVE = "() => { const a = document.activeElement; return a ? (a.id || a.closest('[id]')?.id || a.tagName) : null; }"
FOCUS_RING = """() => { const s = getComputedStyle(document.activeElement);
  return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2; }"""


def tab_until(page: Page, element_id: str, most: int = 60) -> None:
    """Press Tab until ``#element_id`` has the focus; the focus never falls to the page's body on the way."""
    path = []
    for _ in range(most):
        page.keyboard.press("Tab")
        path.append(page.evaluate(ACTIVE))
        assert path[-1] not in ("BODY", None), path
        if page.evaluate(f"() => document.activeElement.id === '{element_id}'"):
            return
    raise AssertionError(f"#{element_id} not reached in {most} Tab presses: {path}")


def selected_tab(page: Page) -> str:
    return page.locator("[role=tablist] [role=tab][aria-selected=true]").inner_text().strip()


def keyboard_into_the_tab_list(page: Page) -> None:
    """From the model box, Tab reaches the tab list on the open tab (Learn), the focus visible; the ARIA tabs
    pattern: arrows move and open, they wrap around, Home/End go to the ends; only the open tab is a Tab stop."""
    open_tab_by_name(page, "Learn")
    page.wait_for_function("() => document.querySelector('[role=tab][aria-selected=true]').tabIndex === 0",
                           timeout=RUN_TIMEOUT_MS)  # the open tab is the tab list's one Tab stop
    page.locator("#model-box input").focus()
    page.keyboard.press("Escape")
    for _ in range(10):  # the tab list is reachable with Tab
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.getAttribute('role')") == "tab":
            break
    assert selected_tab(page) == "Learn" and page.evaluate("() => document.activeElement.textContent.trim()") == "Learn"
    assert page.evaluate(FOCUS_RING)
    page.keyboard.press("ArrowRight")
    assert selected_tab(page) == "Tokenizer" and page.evaluate("() => document.activeElement.textContent.trim()") == "Tokenizer"
    page.keyboard.press("End")
    assert selected_tab(page) == "Class"  # the last tab
    page.keyboard.press("ArrowRight")
    assert selected_tab(page) == "Learn"  # wraps around
    page.keyboard.press("ArrowLeft")
    assert selected_tab(page) == "Class"
    page.keyboard.press("Home")
    assert selected_tab(page) == "Learn"
    assert page.locator("[role=tablist] [role=tab][tabindex='0']").count() == 1


def keyboard_to_tab(page: Page, tab: str, button: str) -> None:
    """Arrows from the open tab to ``tab``, then Tab into the page to its main control (never via the page's body),
    the focus visible there."""
    page.locator("[role=tablist] [role=tab][aria-selected=true]").focus()
    while selected_tab(page) != tab:
        page.keyboard.press("ArrowRight")
    tab_until(page, button)
    assert page.evaluate(FOCUS_RING), tab


def test_axe_finds_nothing_serious_and_the_keyboard_alone_works_every_tab_at_either_width(_browser, app_url: str):
    """axe on every tab at 1280 and 390 px, each after its main action. At 1280 px the keyboard alone walks the tabs
    (the tab list's ARIA pattern, Tab to each main control with the focus visible, Enter runs it) and the charts it
    drew read out their numbers in their text twins (TWINS_READ); on the phone, the same walk by taps checks that
    every tab's button is on screen and its main result fits (screenshots <tab>_phone.png, tabs_phone.png)."""
    found, twins, unseen, below_fold = {}, {}, {}, {}
    for width, height in ((1280, 1000), (390, 844)):
        phone = width < 640
        context = _browser.new_context(viewport={"width": width, "height": height}, has_touch=phone)
        page = context.new_page()
        try:
            open_app(page, app_url)
            if phone:
                phone_at_open(page)
            else:
                keyboard_into_the_tab_list(page)
            for tab, (button, answer) in MAIN.items():
                if phone:
                    phone_tab_button(page, tab)
                    open_tab_by_name(page, tab)
                else:
                    keyboard_to_tab(page, tab, button)
                if phone and tab == "Fill-Mask":  # target words too: their table on a phone
                    page.locator("#fm-targets textarea, #fm-targets input").first.fill("tokenization, cutting")
                if phone and answer is not None:  # where the answer is before the button is pressed
                    below_fold[tab] = page.locator(ANSWERS[button]).evaluate(
                        "e => e.getBoundingClientRect().top") > height
                run_main_action(page, tab, keyboard=not phone)
                if phone and answer is not None:  # the answer comes into view when the button is pressed
                    try:  # on screen, in its upper half (the page scrolls at its next frame, then as it settles)
                        page.wait_for_function(IN_UPPER_HALF_JS, arg=ANSWERS[button], timeout=IN_VIEW_TIMEOUT_MS)
                    except PlaywrightTimeout:
                        box = page.locator(ANSWERS[button]).evaluate("e => e.getBoundingClientRect().toJSON()")
                        unseen[f"{tab} @{width}"] = (round(box["top"]), round(box["bottom"]))
                if not phone and tab in TWINS_READ:
                    TWINS_READ[tab](page)
                found[f"{tab} @{width}"] = axe_violations(page)
                try:  # a figure below the fold is drawn when the page is idle, its twin made within a frame or two
                    page.wait_for_function(f"() => ({MISSING_TWINS_JS})().length === 0", timeout=IN_VIEW_TIMEOUT_MS)
                except PlaywrightTimeout:
                    pass  # reported below
                twins[f"{tab} @{width}"] = page.evaluate(MISSING_TWINS_JS)
                if tab == "Attention":
                    screenshot(page, f"accessibility_attention_{width}")
                if phone and tab in PHONE:
                    PHONE[tab](page)
            if phone:
                screenshot(page, "tabs_phone")
        finally:
            context.close()
    assert {k: v for k, v in found.items() if v} == {}
    assert {k: v for k, v in twins.items() if v} == {}
    assert unseen == {}
    assert below_fold["Attention"]  # the heatmap was brought up from below the fold, not found there


# an answer box (a Markdown) its event is filling: gradio lays its progress over the box, which was 0 px high while
# empty, so the box scrolled its 50 px of progress (and cut it off): a scrolling region no keyboard reaches, axe's
# scrollable-region-focusable in Word in context at 1280 px (issue 54)
PENDING_JS = """(id) => { const t = document.querySelector('#' + id + ' > [data-testid=status-tracker]');
  return !!t && !t.classList.contains('hide'); }"""
SCROLLS_JS = "(id) => { const b = document.getElementById(id); return [b.scrollHeight, b.clientHeight]; }"


def test_an_answer_box_being_filled_holds_its_progress_and_does_not_scroll(browser_page: Page, app_url: str):
    page = browser_page
    open_app(page, app_url)
    open_tab_by_name(page, "Word in context")
    wait_idle(page)
    held = []  # the section's request waits here, so the box shows its progress for as long as the test looks
    page.route("**/queue/join*", lambda route: held.append(route))
    try:
        page.get_by_text("2 · The word across the corpus", exact=True).click()  # opening it draws the section
        page.wait_for_function(PENDING_JS, arg="wic-atlas-info", timeout=RUN_TIMEOUT_MS)
        scroll_height, client_height = page.evaluate(SCROLLS_JS, "wic-atlas-info")
        load_axe(page)
        found = page.evaluate("""async () => (await axe.run('#wic-atlas-info',
            {runOnly: ['scrollable-region-focusable']})).violations.map(v => v.id)""")
    finally:
        for route in held:
            route.continue_()
        page.unroute("**/queue/join*")
    assert client_height > 0 and scroll_height <= client_height + 1, (scroll_height, client_height)
    assert found == []
    expect(page.locator("#wic-atlas-info")).to_contain_text("Each dot is one use", timeout=RUN_TIMEOUT_MS)


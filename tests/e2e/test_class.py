"""A class in the real page: the teacher creates it and gets a join link and a teacher link; a student opens
the join link, types a nickname and is in; the teacher link shows the student; the join link shows nothing
of the class's answers. Each link opens where its user acts; the teacher's view keeps up by itself while it is on
screen; a student's nickname is shown as text."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from bertdemo.classroom.db import Database
from bertdemo.classroom.store import ClassStore
from bertdemo.learn import steps as learn_steps
from bertdemo.ui.class_tab import TEACHER_POLL_S

from .axe import axe_at_both_widths
from .conftest import screenshot
from .pages import JOINS, RUN_TIMEOUT_MS, create_class, join_class, open_tab, press, resize


def test_a_teacher_creates_a_class_a_student_joins_and_the_teacher_sees_them(browser_page: Page, app_url: str, open_page):
    page = browser_page
    page.goto(app_url)  # the class needs no model: nothing waits for one
    open_tab(page, "Class")
    # Join with no code: the message in a toast, and under Join the error's badge in a box of its own size (gradio's
    # tracker sat in 88 px of grey there)
    page.click("#class-join")
    expect(page.locator(".toast-body").filter(has_text="A join code is 6 letters and digits")).to_be_visible(
        timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#class-joined [data-testid=status-tracker] .clear-status")).to_be_visible()
    assert page.locator("#class-joined").bounding_box()["height"] <= 48
    # a new press closes the error before it: its own error is the only one shown, not "Error (2)" with the stale one
    page.locator("#class-code input, #class-code textarea").first.fill("ABCD10")
    page.click("#class-join")
    toast = page.locator(".toast-body.error")
    expect(toast).to_contain_text("Join codes never use 0, 1, O or I", timeout=RUN_TIMEOUT_MS)
    expect(toast.locator(".toast-message-item")).to_have_count(1)
    assert "A join code is 6 letters" not in toast.inner_text()
    page.locator(".toast-body button, .toast-close").first.click()
    page.locator("#class-code input, #class-code textarea").first.fill("")
    join_link, teacher_link = create_class(page, "Year 12 · BERT")
    assert join_link.startswith(app_url) and teacher_link.startswith(app_url)
    found = axe_at_both_widths(page, "class_created", back_to=None)  # axe on the page the action made, both widths
    # at 390 px the links box's copy button sits clear of its label (a long label wrapped under it)
    label, copy = (page.locator(f"#class-links {sel}").first.bounding_box()
                   for sel in ("[data-testid=block-info]", "button"))
    assert copy["y"] + copy["height"] <= label["y"] or copy["x"] >= label["x"] + label["width"], (label, copy)
    # a screen reader names the links box by its label (gradio's label held the copy button first, and named it)
    expect(page.locator("#class-links textarea")).to_have_accessible_name("Links")
    resize(page, 1280, 1000)

    # D16: the join link opens the Class tab with the code filled in and the cursor in the nickname box, beside Join
    student = open_page(390, 800)
    student.goto(join_link)
    class_tab = student.locator("[role=tablist] [role=tab]").filter(has_text="Class").locator("visible=true").first
    expect(class_tab).to_have_attribute("aria-selected", "true", timeout=RUN_TIMEOUT_MS)
    expect(student.locator("#class-nickname input, #class-nickname textarea").first).to_be_focused(
        timeout=RUN_TIMEOUT_MS)
    expect(student.locator("#class-code input, #class-code textarea").first).to_have_value(
        join_link.split("=")[1], timeout=RUN_TIMEOUT_MS)
    expect(student.locator("#class-join")).to_be_in_viewport()
    student.keyboard.type("Ada")
    student.keyboard.press("Tab")
    press(student.locator("#class-join"))
    expect(student.locator("#class-joined")).to_contain_text("You are in Year 12 · BERT as Ada", timeout=RUN_TIMEOUT_MS)
    student.wait_for_function("() => (localStorage.getItem('bertdemo-class-member') || '').split('.').length === 2",
                              timeout=RUN_TIMEOUT_MS)  # the member token kept (written beside the message, not before)
    expect(student.locator("#class-updated")).to_be_hidden()  # the join link opens nothing of the class
    screenshot(student, "class-joined-390")
    heading = student.locator("#class-join-heading h2").first  # its text sat on the box's left edge
    gap = heading.evaluate("h => { const r = document.createRange(); r.selectNodeContents(h);"
                           " return r.getClientRects()[0].left - h.closest('.gr-group').getBoundingClientRect().left; }")
    assert gap >= 8, gap

    page.goto(teacher_link)  # the teacher link opens the teacher's view: no tab to look for first (D16)
    report = page.locator("#class-report")
    expect(report).to_contain_text("1 joined, 1 active", timeout=RUN_TIMEOUT_MS)
    expect(report).to_be_in_viewport()
    expect(report.locator("table").first).to_contain_text("Ada")
    # one click downloads (issue 54, walk D7): "Answers as CSV" hands the browser the class's CSV on the first press
    # (it gave nothing for 15 s, until a second press); tests/test_downloads.py checks every such button
    with page.expect_download(timeout=RUN_TIMEOUT_MS) as download:
        page.locator("#class-csv").click()  # once
    assert download.value.suggested_filename == "class-answers.csv"
    rows = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("record,nickname,")
    found |= axe_at_both_widths(page, "class_teacher", back_to=None)  # screenshots at 1280 and 390 px
    assert {k: v for k, v in found.items() if v} == {}


# --- the teacher's view live, each link where its user acts, students' text as text (issues 52 and 54) ---------

NICK_HOST = "http://127.0.0.1:9"  # nothing answers there: a request for it is the teacher's browser fetching it


def _tick_event(app_url: str) -> int:
    """The id of the teacher's view's timer tick, from the page's config."""
    config = httpx.get(app_url + "config", timeout=30).json()
    (tick,) = [d["id"] for d in config["dependencies"] if d.get("api_name") == "teacher_tick"]
    return tick


def _new_class(runs_dir: Path, app_url: str, name: str) -> tuple[str, str]:
    """A class made in the launched app's own class database (its page's Create: the first test): its join link and
    teacher link."""
    store = ClassStore(Database.in_folder(runs_dir))
    try:
        new = store.create_class(name)
    finally:
        store.db.close()
    return f"{app_url}?class={new.join_code}", f"{app_url}?teacher={new.teacher_key}"


def _student_joins(open_page, join_link: str, nickname: str) -> Page:
    """A student's phone (a page of ``open_page``) opens the join link and joins as ``nickname``; their page."""
    student = open_page(390, 800)
    join_class(student, join_link, nickname)
    return student


def test_the_teachers_view_updates_by_itself_and_stops_while_hidden(browser_page: Page, app_url: str, runs_dir,
                                                                  open_page):
    """D6: a student who joins shows in the open teacher's view without Refresh, and the view says when it last read
    the class. While the browser tab is hidden it sends nothing (a second teacher page's ticks are the clock) and
    shows what changed as soon as it is shown again. F2 / D5: the two students' nicknames are Markdown (an image; a
    link and bold): shown as typed in the teacher's view and on the student's own line, no image, no link, and no
    browser asks another host for anything."""
    join_link, teacher_link = _new_class(runs_dir, app_url, "Live")
    tick = _tick_event(app_url)
    image, link = f"![n]({NICK_HOST}/nick.png)", "[pwn](javascript:x) **Bo|b**"
    asked: list[str] = []

    watched, clock = browser_page, open_page()
    for teacher in (watched, clock):
        teacher.on("request", lambda request: asked.append(request.url))
        teacher.add_init_script(JOINS)
        teacher.goto(teacher_link)
        expect(teacher.locator("#class-report")).to_contain_text("0 joined", timeout=RUN_TIMEOUT_MS)
        expect(teacher.locator("#class-updated")).to_contain_text(re.compile(r"Updated at \d\d:\d\d:\d\d UTC"))

    student = _student_joins(open_page, join_link, image)
    student.context.on("request", lambda request: asked.append(request.url))
    expect(student.locator("#class-joined")).to_contain_text(image)
    expect(watched.locator("#class-report")).to_contain_text("1 joined", timeout=3 * TEACHER_POLL_S * 1000)

    watched.evaluate("() => { Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
                     " document.dispatchEvent(new Event('visibilitychange')); }")

    def ticks(teacher: Page) -> int:
        return teacher.evaluate("(i) => window.__joins.filter(j => j === i).length", tick)

    hidden_at, clock_at = ticks(watched), ticks(clock)
    _student_joins(open_page, join_link, link)
    clock.wait_for_function("([i, n]) => window.__joins.filter(j => j === i).length >= n", arg=[tick, clock_at + 3],
                            timeout=6 * TEACHER_POLL_S * 1000)  # three ticks of a shown view's timer
    expect(clock.locator("#class-report")).to_contain_text("2 joined")
    assert ticks(watched) == hidden_at  # none while hidden ...
    expect(watched.locator("#class-report")).to_contain_text("1 joined")
    watched.evaluate("() => { Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
                     " document.dispatchEvent(new Event('visibilitychange')); }")
    expect(watched.locator("#class-report")).to_contain_text("2 joined", timeout=RUN_TIMEOUT_MS)  # ... read at once

    report = clock.locator("#class-report")  # the nicknames as typed, as text
    expect(report).to_contain_text(image)
    expect(report).to_contain_text(link)
    expect(report.locator("table img, table a, table strong, table em")).to_have_count(0)
    expect(student.locator("#class-joined img, #class-joined a")).to_have_count(0)
    assert len(report.locator("table").first.locator("tbody tr").all()) == 2  # no row split or added
    assert [url for url in asked if url.startswith(NICK_HOST)] == []


FORGED_PROGRESS = ('{"answers": {"order": {"question": "order.shuffle-without-positions", "guess": "Yes",'
                   ' "truth": "FORGED TRUTH", "correct": true}}, "concept": {}}')


def test_a_members_guess_reaches_the_teacher_graded_by_the_server(browser_page: Page, app_url: str, runs_dir,
                                                                 open_page):
    """F3 / D17 in the page: a member's Learn guess reaches the teacher's view graded against the model's answer the
    server computes; a step the browser claims was answered right (its localStorage written by hand) is no answer."""
    page = browser_page
    join_link, teacher_link = _new_class(runs_dir, app_url, "Graded")
    student = _student_joins(open_page, join_link, "Ada")
    student.evaluate(f"() => localStorage.setItem('bertdemo-learn-progress', {FORGED_PROGRESS!r})")
    student.reload()  # the join link again: it opens the Class tab, then the student goes to Learn
    class_tab = student.locator("[role=tablist] [role=tab]").filter(has_text="Class").locator("visible=true").first
    expect(class_tab).to_have_attribute("aria-selected", "true", timeout=RUN_TIMEOUT_MS)
    expect(student.locator("#class-joined")).to_contain_text("You are in Graded as Ada", timeout=RUN_TIMEOUT_MS)
    open_tab(student, "Learn")
    expect(student.locator("#learn-predict-prompt")).to_contain_text("How many tokens", timeout=RUN_TIMEOUT_MS)
    student.locator("#learn-guess-number input").fill("999")
    student.click("#learn-check-guess")
    expect(student.locator("#learn-verdict")).to_contain_text("Not this time", timeout=RUN_TIMEOUT_MS)
    truth = re.search(r"(\d+) tokens:", student.locator("#learn-verdict").inner_text()).group(1)

    page.goto(teacher_link)
    answers = page.locator("#class-report table").nth(2)
    step_one = learn_steps.step_label(learn_steps.step("embeddings"))  # as the students read it, not its key
    expect(answers).to_contain_text(step_one, timeout=RUN_TIMEOUT_MS)
    row = answers.locator("tbody tr")
    expect(row).to_have_count(1)  # the forged "order" answer is none
    expect(row.locator("td")).to_have_text([step_one, "0", "1", truth, "999 × 1"])
    expect(page.locator("#class-report")).not_to_contain_text("FORGED")

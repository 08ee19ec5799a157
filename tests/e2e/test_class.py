"""A class in the real page: the teacher creates it and gets a join link and a teacher link; a student opens
the join link, types a nickname and is in; the teacher link shows the student; the join link shows nothing
of the class's answers."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, open_tab, resize


def test_a_teacher_creates_a_class_a_student_joins_and_the_teacher_sees_them(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(app_url)  # the class needs no model: nothing waits for one
    open_tab(page, "Class")
    page.locator("#class-teach .label-wrap").click()
    page.locator("#class-name textarea, #class-name input").first.fill("Year 12 · BERT")
    page.locator("#class-create").click()
    links = page.locator("#class-links textarea").first
    expect(links).to_have_value(re.compile(r"http\S+\?class=[A-Z2-9]{6}\n.*http\S+\?teacher=\S+"), timeout=RUN_TIMEOUT_MS)
    join_link, teacher_link = [line.split(": ", 1)[1] for line in links.input_value().splitlines()]
    assert join_link.startswith(app_url) and teacher_link.startswith(app_url)

    student = page.context.browser.new_context(viewport={"width": 390, "height": 800}).new_page()
    student.goto(join_link)
    open_tab(student, "Class")
    expect(student.locator("#class-code input, #class-code textarea").first).to_have_value(
        join_link.split("=")[1], timeout=RUN_TIMEOUT_MS)
    student.locator("#class-nickname input, #class-nickname textarea").first.fill("Ada")
    student.locator("#class-join").click()
    expect(student.locator("#class-joined")).to_contain_text("You are in Year 12 · BERT as Ada", timeout=RUN_TIMEOUT_MS)
    assert student.evaluate("() => localStorage.getItem('bertdemo-class-member')").count(".") == 1
    expect(student.locator("#class-teacher")).to_be_hidden()  # the join link opens nothing of the class
    screenshot(student, "class-joined-390")

    page.goto(teacher_link)
    open_tab(page, "Class")
    report = page.locator("#class-report")
    expect(report).to_contain_text("1 joined, 1 active", timeout=RUN_TIMEOUT_MS)
    expect(report.locator("table").first).to_contain_text("Ada")
    screenshot(page, "class-teacher-1280")
    resize(page, 390, 800)
    screenshot(page, "class-teacher-390")

"""A class in the real page: the teacher creates it and gets a join link and a teacher link; a student opens
the join link, types a nickname and is in; the teacher link shows the student; the join link shows nothing
of the class's answers."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, create_class, open_tab, resize


def test_a_teacher_creates_a_class_a_student_joins_and_the_teacher_sees_them(browser_page: Page, app_url: str):
    page = browser_page
    page.goto(app_url)  # the class needs no model: nothing waits for one
    open_tab(page, "Class")
    join_link, teacher_link = create_class(page, "Year 12 · BERT")
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

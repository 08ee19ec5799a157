"""A class member's runs reach their class, through the launched app: a student who joined in the browser starts a
pretraining run from the Pretrain tab and the teacher link draws it among the students' runs (the membership goes
with every request of the page as its cookie); on a public server two members behind one school address start
runs through the API with their member token, each recorded under their own nickname, while a stranger who
knows a member's id but not the token starts a run that is recorded in no class."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from bertdemo.classroom.db import Database
from bertdemo.classroom.report import class_report
from bertdemo.classroom.store import ClassStore
from bertdemo.traffic import MEMBER_HEADER

from .api import RUN, wait_ended
from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, open_tab, resize

SCHOOL = "203.0.113.8"
PREPARE_TIMEOUT_MS = 300_000  # the run's first preparation tokenizes the corpus (a busy machine: minutes)


def test_a_students_run_from_the_page_is_drawn_in_the_teachers_view(browser_page: Page, app_url: str, runs_dir, open_page):
    page = browser_page
    store = ClassStore(Database.in_folder(runs_dir))  # the server's own class database (the page's Create: test_class)
    try:
        new = store.create_class("Runs class")
    finally:
        store.db.close()
    join_link, teacher_link = f"{app_url}?class={new.join_code}", f"{app_url}?teacher={new.teacher_key}"
    page.goto(teacher_link)  # the teacher's view, open while the class works
    open_tab(page, "Class")
    report = page.locator("#class-report")
    expect(report).to_contain_text("0 joined", timeout=RUN_TIMEOUT_MS)

    student = open_page(390, 800)
    student.goto(join_link)
    open_tab(student, "Class")
    expect(student.locator("#class-code input, #class-code textarea").first).not_to_have_value("",
                                                                                           timeout=RUN_TIMEOUT_MS)
    student.locator("#class-nickname input, #class-nickname textarea").first.fill("Grace")
    student.locator("#class-join").click()
    expect(student.locator("#class-joined")).to_contain_text("as Grace", timeout=RUN_TIMEOUT_MS)
    cookie = [c for c in student.context.cookies() if c["name"] == "bertdemo-class-member"]
    assert [c["value"] for c in cookie] == [student.evaluate("() => localStorage.getItem('bertdemo-class-member')")]

    open_tab(student, "Pretrain")
    student.click("#pt-start")
    status = student.locator("#pt-status")
    expect(status).to_contain_text("RUNNING", timeout=PREPARE_TIMEOUT_MS)
    run_id = re.search(r"\d{8}-\d{6}-[\w.-]+", status.inner_text()).group(0)
    student.wait_for_function(
        "() => { const p = document.querySelector('#pt-curves .js-plotly-plot');"
        " return p && p.data && p.data.some(d => d.name.endsWith(': train') && d.x.length >= 2); }",
        timeout=120_000)
    try:
        page.locator("#class-refresh").click()
        expect(report).to_contain_text(run_id, timeout=RUN_TIMEOUT_MS)  # the students' runs, as a table
        expect(report.locator("tr", has_text=run_id)).to_contain_text(re.compile(r"Grace\s+\S+\s+pretraining"))
        gallery = page.locator("#class-runs .js-plotly-plot")
        expect(gallery).to_be_visible(timeout=RUN_TIMEOUT_MS)
        # the student's training curve among the gallery's (it is drawn once the page is idle, and the view refreshes
        # itself: an answer read at once found only the landmarks)
        student_curve = f"Grace: {run_id}: train"
        page.wait_for_function(
            "name => { const p = document.querySelector('#class-runs .js-plotly-plot');"
            " return !!(p && p.data && p.data.some(d => d.name === name && d.x && d.x.length)); }",
            arg=student_curve, timeout=RUN_TIMEOUT_MS)
        assert student_curve in gallery.evaluate("p => p.data.filter(d => d.x && d.x.length).map(d => d.name)")
        page.locator("#class-runs").scroll_into_view_if_needed()
        screenshot(page, "class-runs-1280")
        resize(page, 390, 800)
        page.locator("#class-runs").scroll_into_view_if_needed()
        screenshot(page, "class-runs-390")
    finally:
        student.click("#pt-stop")
        expect(status).to_contain_text(re.compile("STOPPED|FINISHED"), timeout=RUN_TIMEOUT_MS)
    student.reload()  # the student, back on the page: their own runs, known by the membership cookie
    open_tab(student, "Class")
    expect(student.locator("#class-joined")).to_contain_text(f"Your runs in this class (your teacher sees their "
                                                             f"curves): {run_id} (pretraining).", timeout=RUN_TIMEOUT_MS)
    screenshot(student, "class-member-runs-390")
    student.set_viewport_size({"width": 1280, "height": 800})
    screenshot(student, "class-member-runs-1280")


def test_members_behind_one_address_start_runs_recorded_as_themselves(public_server):
    from gradio_client import Client

    store = ClassStore(Database.in_folder(public_server.runs))  # the server's own class database
    try:
        new = store.create_class("API class")
        ada, bob = store.join(new.join_code, "Ada"), store.join(new.join_code, "Bob")
        started = {}
        for name, token in (("Ada", ada.token), ("Bob", bob.token), ("stranger", f"{ada.member_id}.{'0' * 64}")):
            client = Client(public_server.url, verbose=False, headers={"x-forwarded-for": SCHOOL, MEMBER_HEADER: token})
            client.predict(RUN, f"owner-{name}", api_name="/start_run")
            started[name] = client.predict(api_name="/run_status")["run_id"]
            client.predict(f"owner-{name}", api_name="/stop_run")
            wait_ended(client)
        listed = sorted(class_report(store, new.teacher_key).runs)
        assert listed == [("Ada", started["Ada"], "pretrain"), ("Bob", started["Bob"], "pretrain")]
        for name, run_id in started.items():  # what the runs leave behind goes: each owner deletes theirs
            client.predict(run_id, f"owner-{name}", api_name="/delete_run")
    finally:
        store.db.close()

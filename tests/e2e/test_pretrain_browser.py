"""The Pretrain tab in headless Chromium, as a class member: join the class from its link -> Start -> a live loss
curve (axe at both widths, and on a phone the curves and the status fit the screen), which the teacher link draws
among the students' runs (the membership goes with every request of the page as its cookie) -> a reloaded page
reattaches to the run and lists the member's runs in the class -> Stop -> query the checkpoint -> a second run
overlaid on the first -> Delete, which asks once more and clears the deleted run's status.

Saves pretrain.png, pretrain_phone.png, pretrain_compare.png, class-runs-1280/390.png and class-member-runs-1280/390.png
(see test_browser.py for regenerating the README screenshots).
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from bertdemo.classroom.db import Database
from bertdemo.classroom.store import ClassStore

from .axe import axe_at_both_widths
from .conftest import screenshot
from .pages import RUN_TIMEOUT_MS, assert_fits, join_class, open_app, open_tab, resize, set_open, wait_idle

PREPARE_TIMEOUT_MS = 300_000  # the run's first preparation tokenizes the corpus (a busy machine: minutes)


def curve_points(page: Page, suffix: str) -> int:
    """How many points the live run's trace named "... <suffix>" holds right now."""
    return page.locator("#pt-curves .js-plotly-plot").evaluate(
        f"p => (p.data.find(t => t.name.startsWith('live run') && t.name.endsWith({suffix!r})) || {{x: []}}).x.length"
    )


def _join(page: Page, join_link: str, nickname: str) -> None:
    """Joins the class from its link (:func:`join_class`); the membership is kept in the browser (its cookie goes
    with every request)."""
    join_class(page, join_link, nickname)
    expect(page.locator("#class-joined")).to_contain_text(f"as {nickname}", timeout=RUN_TIMEOUT_MS)
    cookie = [c for c in page.context.cookies() if c["name"] == "bertdemo-class-member"]
    assert [c["value"] for c in cookie] == [page.evaluate("() => localStorage.getItem('bertdemo-class-member')")]
    expect(page.locator("#model-status")).to_contain_text("Model in use", timeout=RUN_TIMEOUT_MS)


def _teacher_sees_the_run(teacher: Page, run_id: str, nickname: str) -> None:
    """The teacher's view draws the member's run among the students' runs: a row of the table and its curve."""
    report = teacher.locator("#class-report")
    teacher.locator("#class-refresh").click()
    expect(report).to_contain_text(run_id, timeout=RUN_TIMEOUT_MS)  # the students' runs, as a table
    expect(report.locator("tr", has_text=run_id)).to_contain_text(re.compile(rf"{nickname}\s+\S+\s+pretraining"))
    gallery = teacher.locator("#class-runs .js-plotly-plot")
    expect(gallery).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # the student's training curve among the gallery's (it is drawn once the page is idle, and the view refreshes
    # itself: an answer read at once found only the landmarks)
    student_curve = f"{nickname}: {run_id}: train"
    teacher.wait_for_function(
        "name => { const p = document.querySelector('#class-runs .js-plotly-plot');"
        " return !!(p && p.data && p.data.some(d => d.name === name && d.x && d.x.length)); }",
        arg=student_curve, timeout=RUN_TIMEOUT_MS)
    assert student_curve in gallery.evaluate("p => p.data.filter(d => d.x && d.x.length).map(d => d.name)")
    teacher.locator("#class-runs").scroll_into_view_if_needed()
    screenshot(teacher, "class-runs-1280")
    resize(teacher, 390, 800)
    teacher.locator("#class-runs").scroll_into_view_if_needed()
    screenshot(teacher, "class-runs-390")


def test_start_watch_stop_and_query_checkpoint(browser_page: Page, app_url: str, runs_dir, open_page):
    page = browser_page
    store = ClassStore(Database.in_folder(runs_dir))  # the server's own class database (the page's Create: test_class)
    try:
        new = store.create_class("Runs class")
    finally:
        store.db.close()
    teacher = open_page()  # the teacher's view, open while the class works
    teacher.goto(f"{app_url}?teacher={new.teacher_key}")
    open_tab(teacher, "Class")
    expect(teacher.locator("#class-report")).to_contain_text("0 joined", timeout=RUN_TIMEOUT_MS)
    _join(page, f"{app_url}?class={new.join_code}", "Grace")
    open_tab(page, "Pretrain")
    # the server's state at page load: no run yet, or the run an earlier test ended (never a false "no run")
    expect(page.locator("#pt-status")).to_contain_text(re.compile("No pretraining run yet|FINISHED|STOPPED"),
                                                       timeout=RUN_TIMEOUT_MS)
    # its content mounted: still one Pretrain tab button (a gr.State directly under gr.Tabs made it two)
    expect(page.locator("button[role=tab][data-tab-id=pretrain]:visible")).to_have_count(1)
    # the defaults (BERT-tiny on the embedded Wikipedia summaries) but a held-out evaluation every 25 steps, not 125:
    # the curve below needs two of them (the test waited ~20 s more for the second at the default)
    set_open(page.locator("button.label-wrap", has_text="Training settings"))
    page.get_by_label("Evaluate every N steps").fill("25")
    page.click("#pt-start")

    status = page.locator("#pt-status")
    expect(status).to_contain_text("RUNNING", timeout=PREPARE_TIMEOUT_MS)
    # The curve fills in as the timer polls: train-loss points and a held-out evaluation.
    page.wait_for_function(
        """() => { const p = document.querySelector('#pt-curves .js-plotly-plot');
                   if (!p || !p.data) return false;
                   const t = n => (p.data.find(d => d.name.endsWith(n)) || {x: []}).x.length;
                   return t(': train') >= 3 && t(': held-out ([MASK]-only, 15 %)') >= 2; }""",
        timeout=120_000,
    )
    assert curve_points(page, ": train (raw)") >= 3
    assert curve_points(page, ": held-out ([MASK]-only, 15 %)") >= 2
    expect(page.locator("#pt-probe")).to_contain_text("%")  # probe predictions with probabilities
    expect(page.locator("#pt-probe")).to_contain_text("He was born [MASK] London.")  # a default probe and its rank
    expect(page.locator("#pt-timeline")).to_contain_text("uses the word before")
    # the run's landmarks on the loss chart, and a rank line per probe on its own chart
    assert page.locator("#pt-curves .js-plotly-plot").evaluate(
        "p => p.layout.annotations.filter(a => a.text.startsWith('uses both neighbours')).length") == 1
    page.wait_for_function("() => { const p = document.querySelector('#pt-probe-ranks .js-plotly-plot');"
                           " return p && p.data && p.data.filter(d => d.name && d.name.includes('[MASK]')"
                           " && d.y.length >= 1).length === 7; }", timeout=RUN_TIMEOUT_MS)
    expect(status).to_contain_text("tokens/s")
    screenshot(page, "pretrain")
    # axe on the page as a live run draws it, at both widths (the all-tabs pass sees the tab before any run); on a
    # phone the live curves and the status fit the screen
    assert {k: v for k, v in axe_at_both_widths(page, "pretrain_running", back_to=None).items() if v} == {}
    assert_fits(page, "#pt-curves")
    assert_fits(page, "#pt-status")
    screenshot(page, "pretrain_phone")
    resize(page, 1280, 1000)
    run_id = re.search(r"\d{8}-\d{6}-[\w.-]+", status.inner_text()).group(0)
    _teacher_sees_the_run(teacher, run_id, "Grace")
    teacher.context.close()  # its view polls while shown: not for the rest of the test

    # A reloaded page reattaches to the run in progress, and lists the member's runs in the class (known by the
    # membership cookie)
    page.reload()
    open_app(page, app_url)
    open_tab(page, "Class")
    expect(page.locator("#class-joined")).to_contain_text(f"Your runs in this class (your teacher sees their "
                                                          f"curves): {run_id} (pretraining).", timeout=RUN_TIMEOUT_MS)
    screenshot(page, "class-member-runs-1280")
    resize(page, 390, 800)
    screenshot(page, "class-member-runs-390")
    resize(page, 1280, 1000)
    open_tab(page, "Pretrain")
    expect(status).to_contain_text("RUNNING", timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(
        "() => { const p = document.querySelector('#pt-curves .js-plotly-plot');"
        " return p && p.data && p.data.some(d => d.x && d.x.length >= 3); }",
        timeout=RUN_TIMEOUT_MS,
    )

    page.click("#pt-stop")
    expect(status).to_contain_text("STOPPED", timeout=RUN_TIMEOUT_MS)
    expect(status).to_contain_text("Latest checkpoint", timeout=RUN_TIMEOUT_MS)

    # The checkpoint is now among the model choices; Fill-Mask predicts with it.
    page.locator("#model-box input").click()
    option = page.get_by_role("option").filter(has_text="(checkpoint)").first
    expect(option).to_be_visible(timeout=RUN_TIMEOUT_MS)
    option.click()
    expect(page.locator("#model-status")).to_contain_text("local", timeout=RUN_TIMEOUT_MS)
    open_tab(page, "Fill-Mask")
    page.locator("#fm-text textarea").fill("The capital of France is [MASK].")
    page.click("#fm-run")
    # the answer fills the mask (the page does not just echo the input) and names the checkpoint
    expect(page.locator("#fm-filled")).not_to_contain_text("[MASK]", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fm-filled")).to_contain_text("capital of France", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#model-status")).to_contain_text("checkpoint", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    bars = page.locator("#fm-plot .bars path")
    assert bars.count() >= 5

    # A second run that differs in two experiments (no position embeddings; each block begins at a text's start),
    # overlaid on the first: each curve is labelled by the settings that differ, on a tokens axis with a log-scale loss.
    open_tab(page, "Pretrain")
    set_open(page.locator("button.label-wrap", has_text="Experiments"))
    page.get_by_label("Position embeddings").uncheck()
    page.locator("#pt-block-starts").get_by_label("at a text's start").check()
    page.click("#pt-start")
    expect(status).to_contain_text("RUNNING", timeout=RUN_TIMEOUT_MS)
    page.locator("#pt-compare input").click()
    page.get_by_role("option").first.click()
    page.keyboard.press("Escape")
    page.get_by_label("tokens", exact=True).check()
    page.get_by_label("Log-scale loss").check()
    page.wait_for_function(
        """() => { const p = document.querySelector('#pt-curves .js-plotly-plot');
                   if (!p || !p.data) return false;
                   const names = p.data.map(d => d.name);
                   return names.some(n => n.startsWith('live run') && n.includes('position_embeddings=False')
                                            && n.includes('block_starts=text'))
                       && names.some(n => !n.startsWith('live run') && n.includes('position_embeddings=True') && n.includes(': held-out'))
                       && p.layout.yaxis.type === 'log'; }""",
        timeout=120_000,
    )
    assert page.locator("#pt-curves .js-plotly-plot").evaluate("p => p.layout.xaxis.title.text") == "tokens seen"
    # the log axis spans the losses (top below 100, in plotly's log10 units), not 10^0..10^11
    assert page.locator("#pt-curves .js-plotly-plot").evaluate("p => p._fullLayout.yaxis.range[1]") < 2
    wait_idle(page)
    page.locator("#pt-curves").scroll_into_view_if_needed()
    screenshot(page, "pretrain_compare")
    page.click("#pt-stop")
    expect(status).to_contain_text("STOPPED", timeout=RUN_TIMEOUT_MS)
    run_id = re.search(r"run (\S+-bert-tiny\S*)", status.inner_text()).group(1)

    # Delete asks once more, names the run by what it was, and the deleted run's status leaves the page
    set_open(page.locator("button.label-wrap", has_text="Runs on this server: download, delete"))
    page.locator("#pt-run-pick input").click()
    option = page.get_by_role("option").filter(has_text="position_embeddings=False")
    expect(option.first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    option.first.click()
    page.click("#pt-delete")
    question = page.locator("#pt-delete-question")
    expect(question).to_contain_text(f"Delete run {run_id}", timeout=RUN_TIMEOUT_MS)
    page.click("#pt-delete-no")
    expect(question).to_be_hidden()
    expect(status).to_contain_text(run_id)  # nothing deleted
    page.click("#pt-delete")
    page.click("#pt-delete-yes")
    expect(status).not_to_contain_text(run_id, timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#pt-delete-question")).to_be_hidden()

"""The Class tab: a teacher creates a class and gets its join link and secret teacher link; a student who opens
the join link (``?class=CODE``) types a nickname and is in; the teacher link (``?teacher=KEY``) opens the
teacher's view — who joined and who is active, the funnel of Learn steps, each question's answers, the concept
check's gain per item (Hake's ⟨g⟩), the training queue, the members' runs as overlaid curves, and a CSV.

Wiring only: the class logic is :mod:`bertdemo.classroom`. The member token is kept in the browser's
localStorage (like a run's owner token) and never shown; the teacher key only in the teacher's link. The token
also goes into a cookie (:data:`HEAD`, set before the page's first request, and at the join), so every request
of the page carries it and the HTTP door counts the member as themselves (:mod:`bertdemo.traffic`): their own
queue share, run quota and queued run, and the runs they start listed in their class."""

from __future__ import annotations

import html
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo import storage
from bertdemo.classroom.report import ClassReport, class_report, csv_text
from bertdemo.classroom.store import ClassStore
from bertdemo.learn import concept_check as learn_concept_check, predictions as learn_predictions, steps as learn_steps
from bertdemo.traffic import MEMBER_COOKIE
from bertdemo.ui.class_gallery import finetune_gallery_spec
from bertdemo.ui.common import user_errors, visitor_of
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.viz import run_curves

if TYPE_CHECKING:
    from bertdemo.context import AppContext

MEMBER_KEY = "bertdemo-class-member"  # localStorage: this browser's signed class membership
# the membership as a cookie, so every request of the page carries it (a year; sent to this site alone)
_SET_COOKIE = (f"document.cookie = {MEMBER_COOKIE + '='!r} + encodeURIComponent(token) + '; Path=/; Max-Age=31536000;"
               " SameSite=Lax' + (location.protocol === 'https:' ? '; Secure' : '');")
# at page open: the membership kept in this browser, and whether the page has a class to read (a membership, or a
# ?class= / ?teacher= link): only then does the page ask the server (read_link), else a page open sends nothing here
READ_CLASS_JS = (f"() => {{ const token = localStorage.getItem({MEMBER_KEY!r}) || '';"
                 " const q = new URLSearchParams(location.search);"
                 " return [token, token || q.get('class') || q.get('teacher') ? 'read' : '']; }")
KEEP_MEMBER_JS = (f"(token) => {{ if (token) {{ localStorage.setItem({MEMBER_KEY!r}, token); {_SET_COOKIE} }}"
                  " return []; }")
# for launch(head=...): before the page's first request, a membership kept in this browser becomes the cookie
HEAD = (f"<script>try {{ const token = localStorage.getItem({MEMBER_KEY!r}); if (token) {{ {_SET_COOKIE} }} }}"
        " catch (e) {}</script>")
LINKS_JS = ("(q) => { if (!q) return q; const base = location.origin + location.pathname;"
            " return q.split('\\n').map(line => line.replace(/\\?(class|teacher)=/, m => base + m)).join('\\n'); }")
MAX_GALLERY = 12  # runs drawn together
RUN_KINDS = {"pretrain": "pretraining", "finetune": "fine-tuning"}


def _cell(text: object) -> str:
    return html.escape(str(text)).replace("|", "&#124;")


def report_markdown(report: ClassReport, queue: list[tuple[int, str, str, float | None]]) -> str:
    """The teacher's view as text (tables a screen reader reads): participants, funnel, answers, gain, queue."""
    active = sum(p.active for p in report.participants)
    out = [f"### {_cell(report.name)} · join code **{report.join_code}**",
           f"{len(report.participants)} joined, {active} active in the last 5 minutes.", "",
           "| Nickname | Active | Steps reached | Answers | Right |", "|---|---|---|---|---|"]
    out += [f"| {_cell(p.nickname)} | {'yes' if p.active else 'no'} | {p.steps} | {p.answered} | {p.right} |"
            for p in report.participants]
    out += ["", "#### Learn steps reached (funnel)", "| Step | Students |", "|---|---|"]
    out += [f"| {_cell(step)} | {n} |" for step, n in report.funnel] or ["| – | 0 |"]
    out += ["", "#### Answers per question", "| Step · question | Right | Wrong | Model's answer | Guesses |",
            "|---|---|---|---|---|"]
    out += [f"| {_cell(q.step_id)} · {_cell(q.question_id)} | {q.right} | {q.wrong} | {_cell(q.truth)} | "
            + ", ".join(f"{_cell(g)} × {n}" for g, n in q.guesses[:8]) + " |" for q in report.questions] or \
        ["| – | | | | |"]
    out += ["", "#### Concept check: gain per item (Hake's ⟨g⟩ = (post − pre) / (100 − pre), students who took both)",
            "| Item | Students | Before | After | ⟨g⟩ |", "|---|---|---|---|---|"]
    out += [f"| {_cell(g.item_id)} | {g.students} | {g.pre:.0f} % | {g.post:.0f} % | "
            f"{'–' if g.gain is None else f'{g.gain:.2f}'} |" for g in report.gains] or ["| – | | | | |"]
    out += ["", "#### Students' runs", "| Nickname | Run | Kind |", "|---|---|---|"]
    out += [f"| {_cell(nick)} | {_cell(run_id)} | {RUN_KINDS.get(kind, _cell(kind))} |"
            for nick, run_id, kind in sorted(report.runs, key=lambda r: r[1])] or ["| – | | |"]
    out += ["", "#### Waiting for the training slot", ]
    out += [f"{pos}. a {_cell(label)}" + (f", starts in about {s / 60:.0f} min" if s is not None else "")
            for pos, _key, label, s in queue] or ["Nobody is waiting."]
    return "\n".join(out)


def build(ctx: AppContext, demo: gr.Blocks) -> gr.Textbox:
    """Lay out the tab inside the current Blocks context and wire its events."""
    classes = ctx.classes
    with gr.Tab("Class", id="class", elem_id="class-tab"):
        gr.Markdown("Learning with a class? Join with the code your teacher gave you — a nickname is all it asks. "
                    "Teaching? Create a class and share its join link.")
        with gr.Group():
            gr.Markdown("## Join a class")
            with gr.Row():
                code = gr.Textbox(label="Class code", max_length=12, elem_id="class-code", scale=1)
                nickname = gr.Textbox(label="Your nickname", max_length=40, elem_id="class-nickname", scale=2)
                join = gr.Button("Join", variant="primary", elem_id="class-join", scale=0, min_width=100)
            joined = gr.Markdown(elem_id="class-joined")
        with gr.Accordion("Teach a class", open=False, elem_id="class-teach"):
            with gr.Row():
                name = gr.Textbox(label="Class name", max_length=80, elem_id="class-name", scale=3)
                create = gr.Button("Create a class", elem_id="class-create", scale=1)
            links = gr.Textbox(label="Links (keep the teacher link to yourself: it opens everyone's answers)",
                               lines=2, interactive=False, buttons=["copy"], elem_id="class-links")
        with gr.Group(visible=False, elem_id="class-teacher") as teacher_view:
            report_md = gr.Markdown(elem_id="class-report")
            gallery = PlotlyFigure(label="Students' pretraining runs", elem_id="class-runs", visible=False)
            ft_gallery = PlotlyFigure(label="Students' fine-tuning runs", elem_id="class-ft-runs", visible=False)
            with gr.Row():
                refresh = gr.Button("Refresh", elem_id="class-refresh")
                csv_button = gr.DownloadButton("Answers as CSV", elem_id="class-csv")
        member = gr.Textbox(visible=False, elem_id="class-member")  # the signed membership, from localStorage
        teacher = gr.Textbox(visible=False, elem_id="class-teacher-key")  # from ?teacher=
        to_read = gr.Textbox("", visible=False, elem_id="class-to-read")  # "read": the page open has a class to read

    def create_class(class_name: str) -> str:
        new = classes.store.create_class(class_name)
        return f"Join link (for students): ?class={new.join_code}\nTeacher link (yours alone): ?teacher={new.teacher_key}"

    def join_class(class_code: str, nick: str):
        joined_member = classes.store.join(class_code, nick)
        return (joined_member.token,
                f"You are in **{_cell(joined_member.class_name)}** as **{_cell(joined_member.nickname)}**.")

    def teacher_report(key: str):
        if not key:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        report = class_report(classes.store, key, step_order=list(learn_steps.STEP_KEYS))
        text = report_markdown(report, ctx.runs.queue.waiting())
        spec = gallery_spec(ctx, report)
        figure = gr.update(value=json.dumps(spec, separators=(",", ":")), visible=True) if spec else gr.update(visible=False)
        ft_spec = finetune_gallery_spec(ctx, report)  # the fine-tuning runs' curves, beside the pretraining runs'
        ft_figure = (gr.update(value=json.dumps(ft_spec, separators=(",", ":")), visible=True) if ft_spec
                     else gr.update(visible=False))
        return gr.update(visible=True), text, figure, gr.skip(), ft_figure

    def class_csv(key: str):
        folder = Path(tempfile.mkdtemp(prefix="bertdemo-class-"))
        path = folder / "class-answers.csv"
        storage.write_text(path, csv_text(classes.store, key))
        return str(path)

    def read_link(request: gr.Request):
        """The link's class code into the Join box, with a teacher key the teacher's view, and for a member (the
        door knows them by their cookie) their class and own runs: one event, sent only by a page open that has a
        class to read (READ_CLASS_JS)."""
        params = dict(request.query_params) if request is not None else {}
        code_value, key = params.get("class", "")[:12], params.get("teacher", "")[:100]
        mine = classes.own_runs(visitor_of(request))
        return (code_value or gr.skip(), key or gr.skip(), *teacher_report(key),
                membership_markdown(*mine) if mine else gr.skip())

    create.click(user_errors(create_class), name, links, api_visibility="private").then(
        None, links, links, js=LINKS_JS, api_visibility="private")
    join.click(user_errors(join_class), [code, nickname], [member, joined], api_visibility="private").then(
        None, member, None, js=KEEP_MEMBER_JS, api_visibility="private")
    demo.load(None, None, [member, to_read], js=READ_CLASS_JS, api_visibility="private")
    shown = [teacher_view, report_md, gallery, csv_button, ft_gallery]
    to_read.change(user_errors(read_link), None, [code, teacher, *shown, joined], api_visibility="private")
    refresh.click(user_errors(teacher_report), teacher, shown, api_visibility="private")
    csv_button.click(user_errors(class_csv), teacher, csv_button, api_visibility="private")
    return member


def membership_markdown(class_name: str, nickname: str, runs: list[tuple[str, str]]) -> str:
    """A member's own line: their class, their nickname, the runs they started in it (theirs alone)."""
    line = f"You are in **{_cell(class_name)}** as **{_cell(nickname)}**."
    if not runs:
        return line + " The runs you start (Pretrain, Fine-tune) are shown to your teacher."
    return line + " Your runs in this class (your teacher sees their curves): " + ", ".join(
        f"{_cell(run_id)} ({RUN_KINDS.get(kind, _cell(kind))})" for run_id, kind in runs) + "."


def gallery_spec(ctx: AppContext, report: ClassReport) -> dict | None:
    """The members' latest pretraining runs (:data:`MAX_GALLERY`) as overlaid training curves, each named by its
    student: the live run's curves as they are now, an ended run's from its checkpoint; None when there is none."""
    live = {run.run_id: run for run in ctx.runs.manager.active_runs()}  # several with --parallel-runs
    latest = ctx.pretrain_runs.current
    if latest is not None:
        live.setdefault(latest.run_id, latest)
    curves = []
    pretraining = sorted((r for r in report.runs if r[2] == "pretrain"), key=lambda r: r[1])[-MAX_GALLERY:]
    for nick, run_id, _kind in pretraining:
        if run_id in live:
            curves.append(run_curves.CurveRun(f"{nick}: {run_id}", live[run_id].snapshot()))
            continue
        try:
            curves.append(run_curves.CurveRun(f"{nick}: {run_id}", ctx.pretrain_runs.load_run(run_id).snapshot))
        except ValueError:  # deleted since, or never saved a checkpoint
            continue
    return run_curves.training_curves_spec(curves) if curves else None


def send_answers(store: ClassStore, progress: object, token: str) -> int:
    """Record a member's Learn progress (what their browser keeps) in their class, in one transaction: each step
    reached, each guess with the model's answer, each concept-check item; how many rows were new (a repeat keeps
    the first)."""
    rows = []
    for row in learn_predictions.answer_records(progress):
        step = row["step"]
        if step.startswith("concept-check:"):
            if row["guess"] is None:  # an item left unanswered is no answer, right or wrong
                continue
            phase = "pre" if step == f"concept-check:{learn_concept_check.BEFORE}" else "post"
            rows.append(store.check_row(phase, row["question"], bool(row["correct"])))
            continue
        rows.append(store.progress_row(step))
        if row["guess"] is not None:
            rows.append(store.answer_row(step, row["question"], row["guess"], row["truth"], bool(row["correct"])))
    return store.record_rows(token, rows)


# the Learn progress changed: a browser with a class membership counts one more change to send (a request), any
# other leaves the count as it is (no request: a learner in no class sends nothing, not even when the page opens)
COUNT_FOR_MEMBER_JS = f"(count) => localStorage.getItem({MEMBER_KEY!r}) ? String((Number(count) || 0) + 1) : count"


def record_learning(ctx: AppContext, progress: gr.JSON, member: gr.Textbox) -> None:
    """A class member's Learn answers go to their class as they give them (the teacher's funnel, each question's
    answers, the concept check's gain); a learner in no class keeps them in their browser alone, and their page
    sends no request for it."""
    def send_learning_answers(kept: object, token: str | None) -> None:
        if not token:
            return
        try:
            send_answers(ctx.classes.store, kept, token)
        except ValueError as exc:  # a membership ended or forged, a full answer sheet: said, the page keeps working
            gr.Warning(f"Your answers were not sent to your class: {exc}")

    tab = member.parent
    while not isinstance(tab, gr.Tab):  # the Class tab (a gr.Tabs holds only tabs); member sits in a form in it
        tab = tab.parent
    with tab:
        changes = gr.Textbox("0", visible=False, elem_id="class-answers-to-send")  # counted in the page (members only)
    progress.change(None, changes, changes, js=COUNT_FOR_MEMBER_JS, api_visibility="private", show_progress="hidden")
    changes.change(send_learning_answers, [progress, member], None, api_visibility="private", show_progress="hidden")

"""The Class tab: a teacher creates a class and gets its join link and secret teacher link; a student who opens
the join link (``?class=CODE``) types a nickname and is in; the teacher link (``?teacher=KEY``) opens the
teacher's view — who joined and who is active, the funnel of Learn steps, each question's answers, the concept
check's gain per item (Hake's ⟨g⟩), the training queue, the members' runs as overlaid curves, and a CSV. Both links
open on this tab (:mod:`bertdemo.ui.deep_links`): the join link with the nickname box ready, the teacher link at
the teacher's view.

The teacher's view updates by itself while it is on screen: a timer (:data:`TEACHER_POLL_S`) that runs only while
the view is shown, this tab is the one open and the browser tab is visible (stopped in the page, without a request,
when any of these ends; drawn again at once when the teacher comes back); a tick sends back only what changed, and
the view says when it was last read.

One address, one share (:mod:`bertdemo.classroom.store`): on a public server the classes one address keeps open are
bounded; wrong join codes are counted per address and refused past a bound; a teacher closes their class (after the
browser's confirm); a class nobody uses for the stated days is deleted, as the teacher's view says. The runs a
class's members hold count on their network addresses, beyond them on the places the operator grants classes
(:mod:`bertdemo.runs.service`): the teacher's view says how many and how many are taken (:func:`places_markdown`).

What students typed is shown as text (:func:`as_text`): no Markdown, link, image, formula or table row of its own.
The answers the class records are graded on the server (:func:`send_learning`): the page sends the guesses its
browser keeps and the step, sentence and model of the answer on screen; the server computes the model's answer and
the grade (:mod:`bertdemo.learn.class_grading`), never reading a truth or a grade from the browser.

Wiring only: the class logic is :mod:`bertdemo.classroom`. The member token is kept in the browser's
localStorage (like a run's owner token) and never shown; the teacher key only in the teacher's link. The token
also goes into a cookie (:data:`HEAD`, set before the page's first request, and at the join), so every request
of the page carries it and the HTTP door knows the member by name at their address (:mod:`bertdemo.traffic`):
their own requests in flight and queued run to follow, and the runs they start listed in their class."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr

from bertdemo import storage
from bertdemo.classroom.report import ClassReport, class_report, csv_text, utc_time
from bertdemo.classroom.store import ClassStore, one_line
from bertdemo.lazy import LazyModule
from bertdemo.learn import concept_check as learn_concept_check, predictions as learn_predictions, steps as learn_steps
from bertdemo.models import run_access
from bertdemo.runs.service import ClassPlaces
from bertdemo.settings import Limits
from bertdemo.traffic import ADDRESS_HEADER, MEMBER_COOKIE
from bertdemo.ui import downloads
from bertdemo.ui.class_gallery import finetune_gallery_spec
from bertdemo.ui.common import user_errors, visitor_of
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.ui.pretrain_tab import OWNER_KEY
from bertdemo.ui.tab_poll import STOP_WHEN_HIDDEN_JS, unsent
from bertdemo.viz import run_curves
from bertdemo.viz.text import literal

if TYPE_CHECKING:
    from bertdemo.context import AppContext

class_grading = LazyModule("bertdemo.learn.class_grading")  # the model's answer computed again (torch: on first use)

MEMBER_KEY = "bertdemo-class-member"  # localStorage: this browser's signed class membership
TEACHER_POLL_S = 10.0  # the teacher's view reads the class again this often while it is on screen
# the membership as a cookie, so every request of the page carries it (a year; sent to this site alone)
_SET_COOKIE = (f"document.cookie = {MEMBER_COOKIE + '='!r} + encodeURIComponent(token) + '; Path=/; Max-Age=31536000;"
               " SameSite=Lax' + (location.protocol === 'https:' ? '; Secure' : '');")
# at page open: the membership kept in this browser, and whether the page has a class to read (a membership, or a
# ?class= / ?teacher= link): only then does the page ask the server (read_link), else a page open sends nothing here.
# It also tells the teacher's view when the browser tab is hidden or shown again (VISIBILITY_JS).
READ_CLASS_JS = (f"() => {{ const token = localStorage.getItem({MEMBER_KEY!r}) || '';"
                 " document.addEventListener('visibilitychange', () => {"
                 " const b = document.getElementById('class-visibility'); if (b) b.click(); });"
                 " const q = new URLSearchParams(location.search);"
                 " return [token, token || q.get('class') || q.get('teacher') ? 'read' : '']; }")
KEEP_MEMBER_JS = (f"(token) => {{ if (token) {{ localStorage.setItem({MEMBER_KEY!r}, token); {_SET_COOKIE} }}"
                  " return []; }")
# for launch(head=...): before the page's first request, a membership kept in this browser becomes the cookie
HEAD = (f"<script>try {{ const token = localStorage.getItem({MEMBER_KEY!r}); if (token) {{ {_SET_COOKIE} }} }}"
        " catch (e) {}</script>")
LINKS_JS = ("(q) => { if (!q) return q; const base = location.origin + location.pathname;"
            " return q.split('\\n').map(line => line.replace(/\\?(class|teacher)=/, m => base + m)).join('\\n'); }")
# the teacher's view on screen: this browser tab visible and the view laid out (its tab is the one open)
_VIEW_ON_SCREEN = ("(() => { const el = document.getElementById('class-report');"
                   " return !document.hidden && !!el && el.offsetParent !== null; })()")
# the browser tab hidden or shown again (READ_CLASS_JS's listener clicks the hidden button): the timer stops, or,
# with a teacher key, the view is drawn at once (Refresh) and the timer starts again; no request otherwise
VISIBILITY_JS = (f"(key) => {{ const shown = !!key && {_VIEW_ON_SCREEN};"
                 " if (shown) { const r = document.getElementById('class-refresh'); if (r) r.click(); }"
                 " return {__type__: 'update', active: shown}; }")
# "Close the class": asked first in the page; only a yes sends the request (a click on the hidden confirmed button)
CLOSE_JS = ("() => { if (confirm('Close this class? Its join link and this teacher link stop working, and its members"
            " and their answers are deleted (download the CSV first to keep them).')) {"
            " const b = document.getElementById('class-close-confirmed'); if (b) b.click(); } return []; }")
# the Class tab opened again: a teacher's view is drawn at once (its timer stopped when another tab was opened)
SHOWN_AGAIN_JS = ("(key) => { if (key) setTimeout(() => { const r = document.getElementById('class-refresh');"
                  " if (r) r.click(); }, 50); return []; }")
# a class member's answers to their class: the guesses this browser keeps, and of the answer on screen only what
# the server needs to ask its question again (step, sentence, model); the live-run question reads the member's run
SEND_LEARNING_JS = ("(kept, token, answer, owner) => [kept, token, answer && answer.step ? {step: answer.step,"
                    " text: answer.text, model_name: answer.model_name} : null,"
                    f" localStorage.getItem({OWNER_KEY!r}) || '']")
MAX_GALLERY = 12  # runs drawn together
RUN_KINDS = {"pretrain": "pretraining", "finetune": "fine-tuning"}
# what GFM reads as a link by itself (``http:``, ``www.``, an e-mail's ``@``), LaTeX's ``$`` and a heading's ``#``:
# with the characters :func:`literal` writes as entities, a student's text cannot become markup
_INERT = {c: f"&#{ord(c)};" for c in ":.@$#"}


def as_text(value: object) -> str:
    """Text someone typed (a nickname, a guess, a class name), shown in Markdown as typed, on one line: no
    emphasis, link, autolink, image, code, HTML, formula or table cell boundary — every character Markdown reads
    as markup written as an HTML entity, line breaks and unprintable characters as spaces."""
    return "".join(_INERT.get(c) or literal(c) for c in one_line(value))


def places_markdown(places: ClassPlaces, limits: Limits | None) -> str:
    """What the class's runs may hold on this server (``limits``: a public server's; None: not counted) — the places
    the operator grants classes and how many its members' runs take — and each address's share, in words."""
    if limits is None:
        return "This server is not public: your students' runs are not counted against any share."
    share = (f"every visitor behind one network address — a school's, a student's home — shares its "
             f"{limits.queued_per_address} waiting start{'s' * (limits.queued_per_address != 1)} and "
             f"{limits.max_runs_per_visitor} kept runs, class members too")
    if places.granted <= 0:
        return (f"This server grants classes no places of their own: your students' runs count on their network "
                f"addresses, and {share} (a class in one room shares them). Its operator grants places with "
                "`--class-places`.")
    return (f"This server grants each class **{places.granted}** places: runs your students hold, waiting for the "
            f"training slot or kept on the server, beyond their network addresses' shares ({share}). Now "
            f"**{places.waiting + places.kept}** taken ({places.waiting} waiting, {places.kept} kept), "
            f"**{places.free}** free; a run frees its place when it is deleted, or {limits.keep_hours:g} hours after its "
            "last use.")


def step_title(step_id: str) -> str:
    """A Learn step as its students read it ("1. What does BERT get …?"), not its key ("embeddings"); a step this
    server does not know (an older version's) by its key."""
    try:
        return as_text(learn_steps.step_label(learn_steps.step(step_id)))
    except ValueError:
        return as_text(step_id)


def item_title(item_id: str) -> str:
    """A concept-check item by the idea it tests ("attention weight = importance"), its number first as the students
    see the check; an unknown one by its id."""
    for number, item in enumerate(learn_concept_check.items(), start=1):
        if item.id == item_id:
            return as_text(f"{number}. {item.misconception}")
    return as_text(item_id)


def report_markdown(report: ClassReport, queue: list[tuple[int, str, str, float | None]], places: str = "") -> str:
    """The teacher's view as text (tables a screen reader reads): participants, funnel, answers, gain, queue, and
    ``places``: what the class's runs may hold on this server (:func:`places_markdown`)."""
    active = sum(p.active for p in report.participants)
    out = [f"### {as_text(report.name)} · join code **{report.join_code}**",
           f"{len(report.participants)} joined, {active} active in the last 5 minutes.", "",
           "| Nickname | Active | Steps reached | Answers | Right |", "|---|---|---|---|---|"]
    out += [f"| {as_text(p.nickname)} | {'yes' if p.active else 'no'} | {p.steps} | {p.answered} | {p.right} |"
            for p in report.participants]
    out += ["", "#### Learn steps reached (funnel)", "| Step | Students |", "|---|---|"]
    out += [f"| {step_title(step)} | {n} |" for step, n in report.funnel] or ["| – | 0 |"]
    out += ["", "#### Answers per question", "| Step | Right | Wrong | Model's answer | Guesses |",
            "|---|---|---|---|---|"]
    out += [f"| {step_title(q.step_id)} | {q.right} | {q.wrong} | {as_text(q.truth)} | "
            + ", ".join(f"{as_text(g)} × {n}" for g, n in q.guesses[:8]) + " |" for q in report.questions] or \
        ["| – | | | | |"]
    out += ["", "#### Concept check: gain per item (Hake's ⟨g⟩ = (post − pre) / (100 − pre), students who took both)",
            "| Item (the misconception it tests) | Students | Before | After | ⟨g⟩ |", "|---|---|---|---|---|"]
    out += [f"| {item_title(g.item_id)} | {g.students} | {g.pre:.0f} % | {g.post:.0f} % | "
            f"{'–' if g.gain is None else f'{g.gain:.2f}'} |" for g in report.gains] or ["| – | | | | |"]
    out += ["", "#### Students' runs", "| Nickname | Run | Kind |", "|---|---|---|"]
    out += [f"| {as_text(nick)} | {as_text(run_id)} | {RUN_KINDS.get(kind, as_text(kind))} |"
            for nick, run_id, kind in sorted(report.runs, key=lambda r: r[1])] or ["| – | | |"]
    out += ["", "#### Waiting for the training slot", ]
    out += [f"{pos}. a {as_text(label)}" + (f", starts in about {s / 60:.0f} min" if s is not None else "")
            for pos, _key, label, s in queue] or ["Nobody is waiting."]
    if places:
        out += ["", "#### Run places", places]
    return "\n".join(out)


def updated_line(now: float, idle_days: float) -> str:
    """When the teacher's view last read the class, how it keeps up, and how long an unused class is kept."""
    return (f"*Updated at {utc_time(now).split()[1]} UTC. The view reads the class again every "
            f"{TEACHER_POLL_S:g} s while it is on screen. A class nobody uses for {idle_days:g} days (neither this "
            "view nor any student) is deleted with its answers: download the CSV to keep them.*")


def address_of(request: gr.Request | None) -> str:
    """The network address a request came from, as the HTTP door worked it out (a class member's too); "" when the
    door did not run (a handler called in-process)."""
    headers = getattr(request, "headers", None)
    return str(headers.get(ADDRESS_HEADER, "")) if headers is not None else ""


def build(ctx: AppContext, demo: gr.Blocks) -> gr.Textbox:
    """Lay out the tab inside the current Blocks context and wire its events."""
    classes = ctx.classes
    with gr.Tab("Class", id="class", elem_id="class-tab") as tab:
        gr.Markdown("Learning with a class? Join with the code your teacher gave you — a nickname is all it asks. "
                    "Teaching? Create a class and share its join link.")
        with gr.Group():  # no elem_id: gradio writes a group's id on two elements
            gr.Markdown("## Join a class", elem_id="class-join-heading")
            with gr.Row():
                code = gr.Textbox(label="Class code", max_length=12, elem_id="class-code", scale=1)
                nickname = gr.Textbox(label="Your nickname", max_length=40, elem_id="class-nickname", scale=2)
                join = gr.Button("Join", variant="primary", elem_id="class-join", scale=0, min_width=100)
            joined = gr.Markdown(elem_id="class-joined", latex_delimiters=[])
        with gr.Accordion("Teach a class", open=False, elem_id="class-teach"):
            with gr.Row():
                name = gr.Textbox(label="Class name", max_length=80, elem_id="class-name", scale=3)
                create = gr.Button("Create a class", elem_id="class-create", scale=1)
            # a short label: a long one wrapped under the copy button, which sat on it (a phone)
            links = gr.Textbox(label="Links", info="Keep the teacher link to yourself: it opens everyone's answers.",
                               lines=2, interactive=False, buttons=["copy"], elem_id="class-links")
        with gr.Group(visible=False) as teacher_view:  # no elem_id: gradio writes a group's id on two elements
            updated = gr.Markdown(elem_id="class-updated")  # the view's first line: a teacher link scrolls to it
            report_md = gr.Markdown(elem_id="class-report", latex_delimiters=[])  # students' text: never LaTeX
            gallery = PlotlyFigure(label="Students' pretraining runs", elem_id="class-runs", visible=False)
            ft_gallery = PlotlyFigure(label="Students' fine-tuning runs", elem_id="class-ft-runs", visible=False)
            with gr.Row():
                refresh = gr.Button("Refresh", elem_id="class-refresh")
                csv_button = gr.Button("Answers as CSV", elem_id="class-csv")  # one click downloads
                close = gr.Button("Close the class", variant="stop", elem_id="class-close")
        csv_file = downloads.holder("class-csv")  # outside the view: its showing would show the holder too
        closed = gr.Markdown(elem_id="class-closed")
        member = gr.Textbox(visible=False, elem_id="class-member")  # the signed membership, from localStorage
        teacher = gr.Textbox(visible=False, elem_id="class-teacher-key")  # from ?teacher=
        to_read = gr.Textbox("", visible=False, elem_id="class-to-read")  # "read": the page open has a class to read
        timer = gr.Timer(TEACHER_POLL_S, active=False)  # the teacher's view, while it is on screen
        sent = gr.State({})  # what this page was last sent of the teacher's view (a tick sends only what changed)
        visibility = gr.Button(visible="hidden", elem_id="class-visibility")  # clicked when the browser tab hides/shows
        close_confirmed = gr.Button(visible="hidden", elem_id="class-close-confirmed")  # clicked by CLOSE_JS on a yes

    def create_class(class_name: str, request: gr.Request) -> str:
        """A new class; on a public server counted against the address it came from."""
        new = classes.store.create_class(class_name, creator=address_of(request) if ctx.settings.is_public else "")
        return f"Join link (for students): ?class={new.join_code}\nTeacher link (yours alone): ?teacher={new.teacher_key}"

    def join_class(class_code: str, nick: str, request: gr.Request):
        joined_member = classes.store.join(class_code, nick, address=address_of(request))
        return joined_member.token, membership_markdown(joined_member.class_name, joined_member.nickname, [])

    drawn = [report_md, gallery, ft_gallery]  # a tick sends each only when it changed
    drawn_ids = [c._id for c in drawn]

    def draw(key: str, last: dict | None, ticking: bool) -> tuple:
        if not key:
            return (gr.skip(),) * (len(drawn) + 4)
        now = classes.store.clock()
        report = class_report(classes.store, key, step_order=list(learn_steps.STEP_KEYS), now=now)
        with run_access.acting_as(None):  # the teacher key verified: the runs their class recorded are theirs to read
            spec = gallery_spec(ctx, report)
            ft_spec = finetune_gallery_spec(ctx, report)  # the fine-tuning runs' curves, beside the pretraining runs'
        places = places_markdown(ctx.runs.class_places(report.class_id), ctx.settings.public_limits)
        values, last = unsent([report_markdown(report, ctx.runs.queue.waiting(), places), _figure(spec),
                               _figure(ft_spec)], drawn_ids, last)
        timer_update = gr.skip() if ticking else gr.update(value=TEACHER_POLL_S, active=True)
        return (gr.update(visible=True), *values, updated_line(now, classes.store.limits.idle_days), last,
                timer_update)

    def teacher_report(key: str, last: dict | None):
        """The teacher's view drawn, its timer started."""
        return draw(key, last, ticking=False)

    def teacher_tick(key: str, last: dict | None):
        """The teacher's view read again while it is on screen: only what changed goes back. A class closed (or
        deleted) meanwhile is said once, in the view's line, and the timer stops: no error every tick."""
        try:
            return draw(key, last, ticking=True)
        except ValueError:
            return (*(gr.skip(),) * (len(drawn) + 1), "*This class no longer exists on this server (closed, or "
                    "deleted after it was unused): its links no longer work.*", last, gr.update(active=False))

    def close_class(key: str):
        """Close the class (the page asked first); the teacher's view goes, its timer stops."""
        if not key:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        name = classes.store.close_class(key)
        return (gr.update(visible=False), "", gr.update(active=False),
                f"The class **{as_text(name)}** is closed: its join link and teacher link no longer work.")

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
        return (code_value or gr.skip(), key or gr.skip(), *teacher_report(key, {}),
                membership_markdown(*mine) if mine else gr.skip())

    private = dict(api_visibility="private")
    quiet = dict(api_visibility="private", show_progress="hidden")
    create.click(user_errors(create_class), name, links, **private).then(None, links, links, js=LINKS_JS, **private)
    join.click(user_errors(join_class), [code, nickname], [member, joined], **private).then(
        None, member, None, js=KEEP_MEMBER_JS, **private)
    demo.load(None, None, [member, to_read], js=READ_CLASS_JS, **private)
    shown = [teacher_view, *drawn, updated, sent, timer]
    to_read.change(user_errors(read_link), None, [code, teacher, *shown, joined], **private)
    refresh.click(user_errors(teacher_report), [teacher, sent], shown, **private)
    timer.tick(user_errors(teacher_tick), [teacher, sent], shown, **quiet, show_progress_on=[])
    visibility.click(None, teacher, timer, js=VISIBILITY_JS, **quiet)
    tab.select(None, teacher, None, js=SHOWN_AGAIN_JS, **quiet)
    tabs = getattr(tab, "parent", None)
    if isinstance(tabs, gr.Tabs):  # another tab opened: the timer stops in the page, without a request
        tabs.change(None, None, timer, js=STOP_WHEN_HIDDEN_JS % "class-report", **quiet)
    downloads.wire(csv_button, user_errors(class_csv), teacher, csv_file, **private)
    close.click(None, None, None, js=CLOSE_JS, **quiet)
    close_confirmed.click(user_errors(close_class), teacher, [teacher_view, teacher, timer, closed], **private)
    return member


def _figure(spec: dict | None) -> dict:
    """A gallery's update: its figure shown, or hidden when there is none to draw."""
    if not spec:
        return gr.update(visible=False)
    return gr.update(value=json.dumps(spec, separators=(",", ":")), visible=True)


def membership_markdown(class_name: str, nickname: str, runs: list[tuple[str, str]]) -> str:
    """A member's own line: their class, their nickname, the runs they started in it (theirs alone)."""
    line = f"You are in **{as_text(class_name)}** as **{as_text(nickname)}**."
    if not runs:
        return line + " The runs you start (Pretrain, Fine-tune) are shown to your teacher."
    return line + " Your runs in this class (your teacher sees their curves): " + ", ".join(
        f"{as_text(run_id)} ({RUN_KINDS.get(kind, as_text(kind))})" for run_id, kind in runs) + "."


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


def send_answers(store: ClassStore, progress: object, token: str, asked: dict | None = None) -> int:
    """Record a member's Learn progress in their class, in one transaction: each step reached and each concept-check
    item (graded here from the item's answer) that ``progress`` (what their browser keeps) holds, and the guess it
    holds for ``asked`` — the question as the server computed it (:func:`send_learning`) — graded against that
    question's truth. The truth and grade a browser keeps are never read. How many rows were new (a repeat keeps the
    first)."""
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
    record = class_grading.graded(progress, asked) if asked else None
    if record is not None:
        rows.append(store.answer_row(record["step"], record["question"], record["guess"], record["truth"],
                                     record["correct"]))
    return store.record_rows(token, rows)


def send_learning(ctx: AppContext, progress: object, token: str, answer: object, owner_token: str = "") -> int:
    """A member's Learn progress to their class (:func:`send_answers`), the guess for the step ``answer`` names (the
    page's answer on screen: only its step, sentence and model are read) graded on the server: the step's question
    computed again (:func:`bertdemo.learn.class_grading.asked_again`; the live-run question on the run of
    ``owner_token``), unless the class already has the member's answer to it. How many rows were new; ValueError
    for a membership that ended or was forged, a full answer sheet, or a question that cannot be asked again."""
    store = ctx.classes.store
    step = answer.get("step") if isinstance(answer, dict) else None
    kept = learn_predictions.clean_progress(progress)["answers"].get(step) if isinstance(step, str) else None
    asked = None
    if kept is not None and kept["guess"] is not None and \
            (step, kept["question"]) not in {(row[0], row[1]) for row in store.own_answers(token)}:
        asked = class_grading.asked_again(ctx.models, step, answer.get("text"), answer.get("model_name"),
                                          runs=ctx.pretrain_runs, owner_token=owner_token,
                                          public=ctx.settings.is_public, budget=current_budget())
    return send_answers(store, progress, token, asked)


# the Learn progress changed: a browser with a class membership counts one more change to send (a request), any
# other leaves the count as it is (no request: a learner in no class sends nothing, not even when the page opens)
COUNT_FOR_MEMBER_JS = f"(count) => localStorage.getItem({MEMBER_KEY!r}) ? String((Number(count) || 0) + 1) : count"


def record_learning(ctx: AppContext, progress: gr.JSON, member: gr.Textbox, answer: gr.JSON) -> None:
    """A class member's Learn answers go to their class as they give them (the teacher's funnel, each question's
    answers graded on the server against ``answer``'s step, sentence and model — the Learn tab's answer on screen —,
    the concept check's gain); a learner in no class keeps them in their browser alone, and their page sends no
    request for it."""
    def send_learning_answers(kept: object, token: str | None, shown: Any = None, owner_token: str = "") -> None:
        if not token:
            return
        try:
            send_learning(ctx, kept, token, shown, owner_token)
        except ValueError as exc:  # a membership ended or forged, a full answer sheet: said, the page keeps working
            gr.Warning(f"Your answers were not sent to your class: {exc}")

    tab = member.parent
    while not isinstance(tab, gr.Tab):  # the Class tab (a gr.Tabs holds only tabs); member sits in a form in it
        tab = tab.parent
    with tab:
        changes = gr.Textbox("0", visible=False, elem_id="class-answers-to-send")  # counted in the page (members only)
        owner = gr.Textbox("", visible=False, elem_id="class-owner")  # filled from localStorage by SEND_LEARNING_JS
    progress.change(None, changes, changes, js=COUNT_FOR_MEMBER_JS, api_visibility="private", show_progress="hidden")
    changes.change(send_learning_answers, [progress, member, answer, owner], None, js=SEND_LEARNING_JS,
                   api_visibility="private", show_progress="hidden")

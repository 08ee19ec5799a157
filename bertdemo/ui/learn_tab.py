"""The Learn tab, first on the page: the learners' questions in notebook order, each answered live
on the model in use and the learner's sentence, with the code behind it and a button to the tab where
the learner keeps exploring (set up with the same sentence). Skippable: any other tab is one click away.

Predict, then reveal: each step first asks the learner to guess (a choice or a number,
:mod:`bertdemo.learn.predictions`), then shows the answer with the guess graded against it; "Just show me"
reveals it without a guess. A concept check (:mod:`bertdemo.learn.concept_check`) is taken before and after
the path. The learner's progress is kept in their own browser's localStorage (``PROGRESS_KEY``), never on
the server.

The answer is a named endpoint (``/learn_step``) returning one JSON value; the page draws it from a
``gr.State`` in a follow-up event, as the Masking tab does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gradio as gr

from bertdemo.lazy import LazyModule
from bertdemo.learn import concept_check, predictions, steps as learn_steps
from bertdemo.models import availability, twins
from bertdemo.ui import common, first_show, lanes
from bertdemo.ui.code_panel import engine_tokenizer_reference, model_reference, with_model_note
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.pretrain_tab import OWNER_KEY
from bertdemo.viz.text import literal

if TYPE_CHECKING:
    from bertdemo.context import AppContext

learn_path = LazyModule("bertdemo.learn.path")
PREDICTING_STEPS = ("outputs", "loss", "no-positions")  # the steps whose answer is a predicted word

INTRO = (
    f"**New to BERT? Start here.** {learn_steps.path_summary()}, from the notebooks that take BERT apart, in "
    f"their order: {' → '.join(learn_steps.milestones())}. Each step asks you first — guess, then see the answer, "
    "computed now on the model chosen above and on your sentence (or press *Just show me*); *Show the code* "
    "gives the lines that reproduce it in a notebook. Already know your way? Pick any tab."
)
PROGRESS_KEY = "bertdemo-learn-progress"  # localStorage: this browser's guesses and concept-check answers
READ_PROGRESS_JS = f"() => {{ try {{ return JSON.parse(localStorage.getItem({PROGRESS_KEY!r}) || 'null'); }} " \
                   "catch (e) { return null; } }"
KEEP_PROGRESS_JS = f"(p) => {{ if (p) localStorage.setItem({PROGRESS_KEY!r}, JSON.stringify(p)); return []; }}"
# the live-run question is graded on this browser's own run: its owner token (the Pretrain tab's OWNER_KEY) goes last
WITH_OWNER_JS = f"(...args) => [...args.slice(0, -1), localStorage.getItem({OWNER_KEY!r}) || '']"


@dataclass
class LearnTab:
    """What the page wiring (deep links, "keep exploring") needs of the tab."""

    step: gr.Dropdown
    sentence: gr.Textbox
    open_button: gr.Button
    raw: gr.JSON  # the last answer (its "tab" and "tab_text" say where the button leads)
    progress: gr.JSON | None = None  # this browser's answers (hidden; learn.predictions.answer_records reads it)
    # the model the tab was shown with (ui/first_show.py): a new value answers the current step and draws it, in
    # one request; the page open writes it (first_show.shown_value) when the page opens on this tab
    shown: gr.Textbox | None = None


def render(answer: dict) -> tuple[str, str, str, dict]:
    """(question, answer, code, button) of one answer."""
    s = learn_steps.step(answer["step"])
    number = learn_steps.STEPS.index(s) + 1
    question = f"**Step {number} of {len(learn_steps.STEPS)} · {s.stage}**\n## {s.question}"  # headings in order: h1, h2
    # the sentence it was computed on: "Just show me" shows the answer to the sentence last sent, which is not the
    # box's when the learner changed it and pressed no Enter (an emptied box showed the example's answer unnamed)
    on = f" *on* “{literal(answer['text'])}”" if answer.get("text") else ""
    by = answer.get("answered_by") or answer["model_name"]
    own = " (this step's own pair, whatever the model chosen above)" if by != answer["model_name"] else ""
    body = answer["answer"] + f"\n\n*Answered by* **{by}**{own}{on}"
    if answer.get("caveat"):
        body += f"  \n*{answer['caveat']}*"
    return question, body, answer["code"], gr.update(value=f"Keep exploring in {s.tab_label} ▶", visible=True)


def is_current(answer: dict | None, step_key: str | None) -> bool:
    """Whether ``answer`` answers the step the page is on now (its sentence is not compared: a learner who types on
    after pressing Enter still gets the answer they asked for)."""
    return bool(answer) and answer.get("step") == step_key


def ask(answer: dict | None, progress: Any) -> tuple:
    """(prompt, choices, number box, verdict, reveal box, progress line) for an answer's question: asked, or
    revealed with the learner's earlier guess when they answered this very question before."""
    line = predictions.summary(progress)
    question = (answer or {}).get("prediction")
    if not question:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), line
    record = predictions.record_for(progress, question)
    choice = question["kind"] == predictions.CHOICE
    earlier = record["guess"] if record else None
    prompt = "### Your guess first\n" + question["prompt"] + (f" *({question['unit']})*" if question["unit"]
                                                                and not choice else "")
    return (prompt,
            gr.update(choices=question["choices"], value=earlier if choice else None, visible=choice),
            gr.update(value=earlier if not choice else None, visible=not choice),
            predictions.verdict(record, question) if record else "",
            gr.update(visible=True if record else "hidden"), line)


REFUSED = ("**The step could not answer** (the error message says why). Change the sentence and press Enter: the "
           "step's question and its choices come back with the answer for your new sentence.")
REFUSED_PROMPT = "No guess to make yet: the step waits for a sentence it can answer."


AGAIN = ("*Your first answer on this sentence counts (the answer was shown with it). Type another sentence and press "
         "Enter to guess again.*")


def twin_caveat(model: str, default: str) -> str:
    """What an answer says when the Model box holds one of the twins ("Why the B in BERT?" opens Fill-Mask with its
    pair, and the box keeps it): that a small twin, not BERT, answered, and how to get BERT back."""
    return (f"{model} is one of the small twins of “Why the B in BERT?” ({twins.shape_text()}, trained on their own "
            f"text), not BERT: choose {default} in the Model box above for BERT's own answer to this step.")


def reveal(record: dict, question: dict, progress: Any, again: bool = False) -> tuple:
    """(verdict, reveal box, progress, progress line) once a guess is graded or skipped; ``again``: the learner
    guessed once more on a sentence whose answer they had seen, and ``record`` is their first answer."""
    kept = predictions.with_record(progress, record)
    said = predictions.verdict(record, question) + ("  \n" + AGAIN if again else "")
    return said, gr.update(visible=True), kept, predictions.summary(kept)


def build(ctx: AppContext, model_box: gr.Dropdown, page: gr.Blocks | None = None) -> LearnTab:
    """Lay out the tab inside the current Blocks context (put it first) and wire its own events; ``page``: the
    app, whose load restores the learner's progress from their browser."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)
    store, public = ctx.models, ctx.settings.is_public

    @user_errors
    def learn_step(step: str = learn_steps.STEP_KEYS[0], text: str = learn_steps.DEFAULT_SENTENCE,
                   model: str = "") -> dict:
        """One step of the learning path answered live: its question, the answer with its numbers, the
        notebook code, and the tab to keep exploring in."""
        learn_steps.step(step)  # an unknown step is refused before the model is touched
        loaded = store.get(model or None)
        ref, note = model_reference(store, model, public)
        result = learn_path.answer(loaded, step, text, model_ref=ref, hub_reachable=store.hub.reachable(),
                                   tokenizer_ref=engine_tokenizer_reference(store, public), budget=current_budget())
        out = result.to_json()
        out["code"] = with_model_note(note, out["code"])
        out["caveat"] = (twin_caveat(model, ctx.settings.default_model) if step != "why-b" and twins.twin_kind(model)
                         else availability.stand_in_caveat(availability.requested_name(store, model), loaded)
                         if step in PREDICTING_STEPS else "")
        return out

    def model_answers(model: str) -> bool:
        """Whether ``model`` loads and may be named here; when it cannot, the status line under the model box
        says why (once), so the tab's first answer stays quiet about it."""
        try:
            store.get(model or None)
            model_reference(store, model, public)
        except Exception:  # noqa: BLE001 - told by the model box's status line, not by this tab
            return False
        return True

    def move(step: str, offset: int) -> str:
        return learn_steps.neighbour(step, offset)

    def graded_on_own_run(question: dict | None, token: str) -> dict | None:
        """The live-run question with its truth read from this learner's own run now (or the reference
        measurement when none decides it); any other question as it is."""
        return predictions.decided_on_own_run(question, ctx.pretrain_runs, token, public)

    @user_errors
    def check_guess(answer: dict | None, choice: str | None, number: float | None, progress: Any,
                    token: str = "") -> tuple:
        """Grade the learner's guess against the live answer's truth, and reveal the answer."""
        question = graded_on_own_run((answer or {}).get("prediction"), token)
        if not question:
            raise ValueError("No answer to guess on yet: wait for the step's answer, or, if the step could not "
                             "answer your sentence, change it and press Enter.")
        given = predictions.record_for(progress, question)
        if given is not None:  # seen already (a guess or "Just show me"): the first answer counts, as in a class
            return reveal(given, question, progress, again=True)
        guess = choice if question["kind"] == predictions.CHOICE else number
        return reveal(predictions.grade(question, guess), question, progress)

    @user_errors
    def show_me(answer: dict | None, progress: Any, token: str = "") -> tuple:
        """Reveal the answer without a guess (a guess is never required)."""
        question = graded_on_own_run((answer or {}).get("prediction"), token)
        if not question:
            return gr.skip(), gr.update(visible=True), gr.skip(), gr.skip()
        given = predictions.record_for(progress, question)  # a guess given before stays the answer
        return reveal(given or predictions.shown_without_guess(question), question, progress)

    @user_errors
    def grade_concept(when: str, *args) -> tuple:
        """Grade the concept check (taken before or after the path) and show the change."""
        *chosen, progress = args
        if when not in concept_check.WHEN:
            raise ValueError("Say whether you take the check before or after the path.")
        kept = predictions.clean_progress(progress)
        kept["concept"][when] = concept_check.chosen_indices(list(chosen))
        return concept_check.report(kept["concept"], when), kept, predictions.summary(kept)

    with gr.Tab("Learn", id="learn") as tab:
        gr.Markdown(INTRO)
        progress_line = gr.Markdown(predictions.summary(None), elem_id="learn-progress-line")
        items = concept_check.items()
        with gr.Accordion(f"Concept check: {len(items)} questions, before and after the path", open=False,
                          elem_id="learn-check"):
            gr.Markdown("Each question is about an idea that is often misunderstood. Take it once before the "
                        "path and once after: you will see your own change.")
            when = gr.Radio([("Before the path", concept_check.BEFORE), ("After the path", concept_check.AFTER)],
                            value=concept_check.BEFORE, label="I am taking it", elem_id="learn-check-when")
            item_boxes = [gr.Radio(list(item.shown_choices()), value=None, label=f"{number}. {item.question}",
                                   elem_id=f"learn-check-{item.id}") for number, item in enumerate(items, start=1)]
            grade_button = gr.Button("Grade my answers", variant="primary", elem_id="learn-check-grade")
            check_result = gr.Markdown(elem_id="learn-check-result")
        with gr.Row(equal_height=False):
            sentence = gr.Textbox(label="Your sentence (Enter answers again)", value=learn_steps.DEFAULT_SENTENCE,
                                  lines=1, max_lines=3, scale=2, min_width=240, elem_id="learn-text",
                                  info="Steps that hide a word choose one; put a word in [brackets] to choose it yourself.")
            step = gr.Dropdown([(learn_steps.step_label(s), s.key) for s in learn_steps.STEPS],
                               value=learn_steps.STEP_KEYS[0], label="Step", scale=3, min_width=240,
                               elem_id="learn-step")
        question = gr.Markdown(elem_id="learn-question")
        with gr.Group():  # no elem_id: gradio writes a group's id on two elements
            prompt = gr.Markdown(elem_id="learn-predict-prompt", padding=True)
            choice = gr.Radio([], label="Your guess", elem_id="learn-guess-choice")
            number = gr.Number(None, label="Your guess", visible=False, elem_id="learn-guess-number")
        with gr.Row():
            check = gr.Button("Check my guess", variant="primary", size="sm", elem_id="learn-check-guess",
                              min_width=120)
            skip = gr.Button("Just show me", size="sm", elem_id="learn-skip", min_width=120)
        with gr.Column(visible="hidden", elem_id="learn-reveal") as revealed:  # until a guess or "just show me"
            verdict = gr.Markdown(elem_id="learn-verdict")
            answer = gr.Markdown(elem_id="learn-answer")
        with gr.Row():  # after the answer: a keyboard user reads, then moves on (Tab goes forward, never back up)
            back = gr.Button("◀ Previous", size="sm", elem_id="learn-prev", min_width=100)
            forward = gr.Button("Next ▶", size="sm", variant="primary", elem_id="learn-next", min_width=100)
        open_button = gr.Button("Keep exploring ▶", variant="secondary", elem_id="learn-open")
        with gr.Accordion("Show the code", open=False, elem_id="learn-code-panel"):
            code = gr.Code(language="python", interactive=False, show_label=False, elem_id="learn-code")
        with gr.Accordion("As JSON (the /learn_step answer)", open=False):
            raw = gr.JSON(elem_id="learn-raw")
        progress = gr.JSON(None, visible=False, elem_id="learn-progress")  # kept in this browser (PROGRESS_KEY)
        owner = gr.Textbox("", visible=False, elem_id="learn-owner")  # filled from localStorage by WITH_OWNER_JS
        shown_with = first_show.model_shown(tab, "learn", model_box)

        inputs = [step, sentence, model_box]
        drawn = [question, answer, code, open_button, prompt, choice, number, verdict, revealed, progress_line]
        shown = dict(show_progress_on=[answer])  # the answer being computed, not the JSON below it
        ask_model = dict(fn=learn_step, inputs=inputs, outputs=raw, **shown)
        def drawing(answer: dict, progress: Any) -> tuple:
            return (*render(answer), *ask(answer, progress))

        on_screen = gr.State(None)  # the answer last drawn: the JSON shows it again when a late answer is not drawn

        def draw_step(answer: dict, progress: Any, step_key: str, last: Any) -> tuple:
            """Draw ``answer`` when it is for the step the page is on now; an answer that arrives after the learner
            moved on (Enter, then Next before it came: two requests in two lanes, either may finish first) is not
            drawn, and the JSON goes back to the answer on screen."""
            if not is_current(answer, step_key):
                return (*(gr.skip(),) * len(drawn), gr.skip() if last is None else last, gr.skip())
            return (*drawing(answer, progress), gr.skip(), answer)

        draw = dict(fn=draw_step, inputs=[raw, progress, step, on_screen], outputs=[*drawn, raw, on_screen],
                    api_visibility="private", show_progress_on=[question], **lanes.LIGHT)  # no forward: never waits

        def cleared():  # a refused sentence leaves no answer of another sentence (the toast says why) and says so:
            # nor a way into one (Keep exploring took the learner to the sentence before's blank), nor its JSON
            return (REFUSED, "", "", gr.update(visible=False), REFUSED_PROMPT,  # no empty "Your guess" box either
                    gr.update(choices=[], value=None, visible=False), gr.update(value=None, visible=False), "",
                    gr.update(visible="hidden"), gr.skip(), None, None)

        refused = [*drawn, raw, on_screen]

        # a pick in the list (.input: the page's own writes of the step — a link, Previous / Next — answer
        # through their own events, so a link to a step costs one request, not two); named first: /learn_step
        picked = step.input(**ask_model, api_name="learn_step")
        moved = [button.click(functools.partial(move, offset=offset), step, step, api_visibility="private").then(
            **ask_model, api_visibility="private") for button, offset in ((back, -1), (forward, 1))]
        for event in (picked, sentence.submit(**ask_model, api_visibility="private"), *moved):
            event.success(**draw)
            event.failure(cleared, None, refused, api_visibility="private", queue=False)

        def answer_shown(step_key: str, text: str, model: str, kept: Any) -> tuple:
            """The tab is on screen (first shown, or shown with another model): the step answered and drawn in one
            request. A model that cannot load is told once, by the status line under the model box, not here; a
            refused sentence (a link's text too long, say) is told here, as when the learner presses Enter."""
            if not model_answers(model):
                return (gr.skip(),) * (2 + len(drawn))
            answer = learn_step(step_key, text, model)
            return (answer, *drawing(answer, kept), answer)

        shown_with.change(answer_shown, [*inputs, progress], [raw, *drawn, on_screen], api_visibility="private",
                          **shown).failure(cleared, None, refused, api_visibility="private", queue=False)
        graded = [verdict, revealed, progress, progress_line]
        check.click(check_guess, [raw, choice, number, progress, owner], graded, api_visibility="private",
                    show_progress_on=[verdict], js=WITH_OWNER_JS, **lanes.LIGHT)
        skip.click(show_me, [raw, progress, owner], graded, api_visibility="private", show_progress_on=[verdict],
                   js=WITH_OWNER_JS, **lanes.LIGHT)
        grade_button.click(grade_concept, [when, *item_boxes, progress], [check_result, progress, progress_line],
                           api_visibility="private", show_progress_on=[check_result], **lanes.LIGHT)
    progress.change(None, progress, None, js=KEEP_PROGRESS_JS, api_visibility="private")  # kept in the browser
    if page is not None:  # what this browser kept, read in the page when it opens (drawn with the first answer)
        page.load(None, None, progress, js=READ_PROGRESS_JS, api_visibility="private")

    return LearnTab(step, sentence, open_button, raw, progress, shown_with)

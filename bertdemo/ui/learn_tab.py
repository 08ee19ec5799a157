"""The Learn tab, first on the page: the learners' eighteen questions in notebook order, each answered live
on the model in use and the learner's sentence, with the code behind it and a button to the tab where
the learner keeps exploring (set up with the same sentence). Skippable: any other tab is one click away.

The answer is a named endpoint (``/learn_step``) returning one JSON value; the page draws it from a
``gr.State`` in a follow-up event, as the Masking tab does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import gradio as gr

from bertdemo.learn import steps as learn_steps
from bertdemo.models import availability
from bertdemo.ui import common
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.code_panel import engine_tokenizer_reference, model_reference, with_model_note
from bertdemo.ui.lazy import LazyModule

if TYPE_CHECKING:
    from bertdemo.context import AppContext

learn_path = LazyModule("bertdemo.learn.path")
PREDICTING_STEPS = ("outputs", "loss", "no-positions")  # the steps whose answer is a predicted word

INTRO = (
    "**New to BERT? Start here.** Twelve questions from the notebooks that take BERT apart, in their order: "
    "tokens → embeddings → attention → output and loss → masking and NSP → pretraining. Each answer is "
    "computed now, on the model chosen above and on your sentence; *Show the code* gives the lines that "
    "reproduce it in a notebook. Already know your way? Pick any tab."
)


@dataclass
class LearnTab:
    """What the page wiring (deep links, "keep exploring") needs of the tab."""

    step: gr.Dropdown
    sentence: gr.Textbox
    open_button: gr.Button
    raw: gr.JSON  # the last answer (its "tab" and "tab_text" say where the button leads)
    answer_after: Callable[[Any], Any]  # (an event) -> answer the current step once it has run


def render(answer: dict) -> tuple[str, str, str, dict]:
    """(question, answer, code, button) of one answer."""
    s = learn_steps.step(answer["step"])
    number = learn_steps.STEPS.index(s) + 1
    question = f"**Step {number} of {len(learn_steps.STEPS)} · {s.stage}**\n## {s.question}"  # headings in order: h1, h2
    body = answer["answer"] + f"\n\n*Answered by* **{answer['model_name']}**"
    if answer.get("caveat"):
        body += f"  \n*{answer['caveat']}*"
    return question, body, answer["code"], gr.update(value=f"Keep exploring in {s.tab_label} ▶")


def build(ctx: AppContext, model_box: gr.Dropdown) -> LearnTab:
    """Lay out the tab inside the current Blocks context (put it first) and wire its own events."""
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
        out["caveat"] = (availability.stand_in_caveat(availability.requested_name(store, model), loaded)
                         if step in PREDICTING_STEPS else "")
        return out

    def quietly(answer: Callable[..., dict]) -> Callable[..., dict]:
        def answer_or_skip(*args):
            try:
                return answer(*args)
            except gr.Error:
                return gr.skip()
        return answer_or_skip

    def move(step: str, offset: int) -> str:
        return learn_steps.neighbour(step, offset)

    with gr.Tab("Learn", id="learn"):
        gr.Markdown(INTRO)
        with gr.Row(equal_height=False):
            sentence = gr.Textbox(label="Your sentence (Enter answers again)", value=learn_steps.DEFAULT_SENTENCE,
                                  lines=1, max_lines=3, scale=2, min_width=240, elem_id="learn-text")
            step = gr.Dropdown([(learn_steps.step_label(s), s.key) for s in learn_steps.STEPS],
                               value=learn_steps.STEP_KEYS[0], label="Step", scale=3, min_width=240,
                               elem_id="learn-step")
        with gr.Row():
            back = gr.Button("◀ Previous", size="sm", elem_id="learn-prev", min_width=100)
            forward = gr.Button("Next ▶", size="sm", variant="primary", elem_id="learn-next", min_width=100)
        question = gr.Markdown(elem_id="learn-question")
        answer = gr.Markdown(elem_id="learn-answer")
        open_button = gr.Button("Keep exploring ▶", variant="secondary", elem_id="learn-open")
        with gr.Accordion("Show the code", open=False, elem_id="learn-code-panel"):
            code = gr.Code(language="python", interactive=False, show_label=False, elem_id="learn-code")
        with gr.Accordion("As JSON (the /learn_step answer)", open=False):
            raw = gr.JSON(elem_id="learn-raw")

        inputs, drawn = [step, sentence, model_box], [question, answer, code, open_button]
        shown = dict(show_progress_on=[answer])  # the answer being computed, not the JSON below it
        ask = dict(fn=learn_step, inputs=inputs, outputs=raw, **shown)
        def cleared():  # a refused sentence leaves no answer of another sentence (the toast says why)
            return gr.skip(), "", "", gr.skip()

        for event in (step.change(**ask, api_name="learn_step"), sentence.submit(**ask, api_visibility="private")):
            event.success(render, raw, drawn, api_visibility="private", **shown)
            event.failure(cleared, None, drawn, api_visibility="private", queue=False)
        # a model that cannot load is told once, by the status line under the model box, not again here
        model_box.change(quietly(learn_step), inputs, raw, api_visibility="private", **shown).success(
            render, raw, drawn, api_visibility="private", **shown)
        back.click(functools.partial(move, offset=-1), step, step, api_visibility="private")
        forward.click(functools.partial(move, offset=1), step, step, api_visibility="private")
    def answer_after(event):
        return event.then(**ask, api_visibility="private").success(render, raw, drawn, api_visibility="private",
                                                                    **shown)

    return LearnTab(step, sentence, open_button, raw, answer_after)

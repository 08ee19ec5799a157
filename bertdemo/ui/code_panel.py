""""Show the code": one closed accordion per view holding the notebook code that reproduces its numbers,
filled (when opened, and when refreshed) with the view's own inputs and the model the view uses."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.models import availability, embedded
from bertdemo.snippets.views import ENGINE_TOKENIZER
from bertdemo.ui import common, lanes

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.lazy import ModelSource

STAND_IN_NOTE = ("# The view's numbers came from the model below, standing in for ASKED_FOR (the model hub is\n"
                 "# unreachable from this server): ASKED_FOR itself would print other numbers.\n")
SERVER_MODEL_NOTE = ("# The view's numbers came from SERVER_MODEL, a model of this server: download its folder and\n"
                     "# put the folder's path in MODEL below.\n")
LOCAL_NOTE = "# MODEL below is the folder, on this server, of the model whose numbers the view shows.\n"


def model_reference(store: ModelSource, model: str, public: bool) -> tuple[str, str]:
    """(what ``from_pretrained`` gets in the code, the lines above the code): the model that answered the
    view — the stand-in when the one asked for cannot load — as a hub id; on a local server a local
    model's folder; on a public server its name (no server path is shown). Every name in those lines is a
    Python literal; the comments are fixed text."""
    requested = availability.requested_name(store, model)
    answered = store.get(requested)  # the model the views use (a stand-in when the hub is unreachable)
    lines = STAND_IN_NOTE + f"ASKED_FOR = {requested!r}\n" if answered.name != requested else ""
    if availability.is_hub_id(answered.name):
        return answered.name, lines
    if public:
        return answered.name, lines + SERVER_MODEL_NOTE + f"SERVER_MODEL = {answered.name!r}\n"
    return str(answered.path), lines + LOCAL_NOTE


def with_model_note(note: str, code: str) -> str:
    """The code under the lines ``model_reference`` wrote about its model, when the code loads ``MODEL``; code
    that loads no model (a config built from scratch, arithmetic, the engine's tokenizer) is shown without
    them: "the view's numbers came from the model below" would name a model that is not there."""
    return note + code if re.search(r"\bMODEL\b", code) else code


def engine_tokenizer_reference(store: ModelSource, public: bool) -> str:
    """What the masking snippets load as the pretraining engine's tokenizer: bert-base-uncased, or (on a
    local server with the hub unreachable) the embedded folder with the same vocabulary and ids."""
    if public or store.hub.reachable():
        return ENGINE_TOKENIZER
    return str(embedded.tokenizer_dir())


class CodePanel:
    """A "Show the code" panel: its code box, a per-page state saying whether it is open, and what fills it.

    A closed panel is never refreshed: it is filled when it opens. An open one is refreshed inside the view's
    own event (:meth:`fold`), so a click is one round trip whether the panel is open or not."""

    def __init__(self, box: gr.Code, opened: gr.State, inputs: list, fill: Callable[..., str]) -> None:
        self.box, self.opened, self.inputs, self.fill = box, opened, list(inputs), fill

    def fold(self, fn: Callable, inputs: list, outputs: list) -> tuple[Callable, list, list]:
        """``(handler, inputs, outputs)`` for an event of the view that also refreshes the panel when it is open:
        the handler calls ``fn`` with the view's own ``inputs`` and adds the code (nothing at all for the panel
        when it is closed) to ``fn``'s answer, a tuple, a single value or a ``{component: value}`` dict. The
        panel's inputs that the view already reads are not listed again: each listed input is gathered by the
        page and processed by the server on its own (a thread hop each), at every click."""
        n = len(inputs)
        takes_progress = "progress" in inspect.signature(fn).parameters
        listed = [*inputs, self.opened]
        at: list[int] = []  # where each of the panel's inputs is in the event's inputs
        for component in self.inputs:
            same = [i for i, c in enumerate(listed) if c is component]
            if not same:
                listed.append(component)
            at.append(same[0] if same else len(listed) - 1)

        def combine(answer, args):
            opened = args[n]
            try:
                code = self.fill(*(args[i] for i in at)) if opened else gr.skip()
            except gr.Error:  # the view answered: its panel keeps the code it shows
                code = gr.skip()
            if isinstance(answer, dict):
                return answer if not opened else {**answer, self.box: code}
            return (*answer, code) if isinstance(answer, tuple) else (answer, code)

        if takes_progress:
            def handler(*args, progress=gr.Progress()):
                return combine(fn(*args[:n], progress=progress), args)
        else:
            def handler(*args):
                return combine(fn(*args[:n]), args)
        return handler, listed, [*outputs, self.box]

    def refresh_on(self, triggers: list) -> None:
        """A refresh of the open panel on each of ``triggers`` (event listeners such as ``button.click``), in an
        event of its own outside the queue, for a view whose event is an API endpoint that keeps its inputs and
        outputs; a closed panel gets nothing."""
        def refresh(opened, *values):
            return self.fill(*values) if opened else gr.skip()

        gr.on(triggers, refresh, [self.opened, *self.inputs], self.box, api_visibility="private",
              show_progress="hidden", queue=False)


def code_panel(ctx: AppContext, snippet: Callable[..., str], inputs: list, elem_id: str | None = None,
               uses_model: bool = True) -> CodePanel:
    """A closed "Show the code" accordion under the view: ``snippet(model_reference, *other inputs)`` is
    written into it when it opens and, while it is open, each time the view answers (the view's event
    folds the refresh in, :meth:`CodePanel.fold`), so an open panel never keeps an old sentence and a
    closed one costs nothing. With ``uses_model`` ``inputs[0]`` must be the model box; without it the
    snippet gets the inputs alone."""
    store, public = ctx.models, ctx.settings.is_public

    @common.user_errors(public=public)
    def fill(*values) -> str:
        if not uses_model:
            return snippet(*values)
        ref, note = model_reference(store, values[0], public)
        return with_model_note(note, snippet(ref, *values[1:]))

    with gr.Accordion("Show the code", open=False, elem_classes="code-panel") as panel:
        gr.Markdown("The few lines of transformers / torch that reproduce this view's numbers in a notebook, with "
                    "your inputs and the model that answered. Refreshed each time the view is.")
        box = gr.Code(language="python", interactive=False, elem_id=elem_id, show_label=False)
    opened = gr.State(False)
    panel.expand(lambda *values: (fill(*values), True), inputs, [box, opened], api_visibility="private", **lanes.LIGHT)
    panel.collapse(lambda: False, None, opened, api_visibility="private", queue=False, show_progress="hidden")
    return CodePanel(box, opened, inputs, fill)

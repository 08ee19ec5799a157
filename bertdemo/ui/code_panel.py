""""Show the code": one closed accordion per view holding the notebook code that reproduces its numbers,
filled (when opened, and when refreshed) with the view's own inputs and the model the view uses."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

import gradio as gr

from bertdemo.snippets.views import ENGINE_TOKENIZER
from bertdemo.models import availability, embedded
from bertdemo.ui import common

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.ui.lazy import ModelSource

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


def code_panel(ctx: AppContext, snippet: Callable[..., str], inputs: list, elem_id: str | None = None,
               refresh_on: list | None = None, uses_model: bool = True) -> Callable[[list], None]:
    """A closed "Show the code" accordion under the view: ``snippet(model_reference, *other inputs)`` is
    written into it when it opens and again each time one of ``refresh_on`` (the view's buttons) is
    clicked, so an open panel never keeps an old sentence. With ``uses_model`` ``inputs[0]`` must be the
    model box; without it the snippet gets the inputs alone.

    Returns ``refresh_on_click(buttons)``, which wires the same refresh later: the page sends one click's
    events one after the other, in the order they were registered, each once the one before is answered
    and drawn, so a tab registers its panel's refresh *after* its own main event (the panel laid out
    where it reads best) and the learner's picture is not kept waiting for the code."""
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
    panel.expand(fill, inputs, box, api_visibility="private")

    def refresh_on_click(buttons: list) -> None:
        for button in buttons:
            button.click(fill, inputs, box, api_visibility="private", show_progress="hidden")

    refresh_on_click(refresh_on or [])
    return refresh_on_click

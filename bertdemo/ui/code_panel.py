""""Show the code": one closed accordion per view holding the notebook code that reproduces its numbers,
filled (when opened, and when refreshed) with the view's own inputs and the model the view uses."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import gradio as gr

from bertdemo.models import availability
from bertdemo.models.run_refs import RUN_PREFIX
from bertdemo.ui import common

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.ui.lazy import ModelSource

OFFLINE_NOTE = "# {name} is this server's own model: download its folder and put the folder's path here\n"


def model_reference(store: ModelSource, model: str, public: bool) -> tuple[str, str]:
    """(what ``from_pretrained`` gets in the code, a note above it): a hub id as is; on a local server a
    local model's folder; on a public server the name, with a note (no server path is shown)."""
    name = availability.requested_name(store, model)
    local = name.startswith((RUN_PREFIX, "embedded/", "/", ".", "~")) or (not public and Path(name).expanduser().is_dir())
    if not local:
        return name, ""
    if public:
        return name, OFFLINE_NOTE.format(name=name)
    return store.get(name).path, ""


def code_panel(ctx: AppContext, snippet: Callable[..., str], inputs: list, elem_id: str | None = None) -> gr.Code:
    """A closed "Show the code" accordion under the view: ``snippet(model_reference, *other inputs)`` is
    written into it when it opens; ``inputs[0]`` must be the model box."""
    store, public = ctx.models, ctx.settings.is_public

    @common.user_errors(public=public)
    def fill(model: str, *values) -> str:
        ref, note = model_reference(store, model, public)
        return note + snippet(ref, *values)

    with gr.Accordion("Show the code", open=False) as panel:
        gr.Markdown("The few lines of transformers / torch that reproduce this view's numbers in a notebook, with "
                    "your inputs and the model in use. Reopen to refresh.")
        box = gr.Code(language="python", interactive=False, elem_id=elem_id, show_label=False)
    panel.expand(fill, inputs, box, api_visibility="private")
    return box

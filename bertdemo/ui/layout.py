"""The whole page: header, the shared model picker with its status line, and the tabs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.settings import Limits
from bertdemo.ui import (
    access,
    attention_tab,
    class_tab,
    deep_links,
    fill_mask_tab,
    finetune_tab,
    inside_tab,
    learn_tab,
    masking_tab,
    pretrain_tab,
    static,
    status_targets,
    theme,
    tokenizer_tab,
    words_tab,
)
from bertdemo.ui.api_surface import hide_page_loads
from bertdemo.ui.callers import serve_as_visitors
from bertdemo.ui.common import model_dropdown, model_status, progress_on_text
from bertdemo.ui.heavy_requests import apply_budgets
from bertdemo.ui.latest_input import answer_latest
from bertdemo.ui.request_limits import guard_events

if TYPE_CHECKING:
    from bertdemo.context import AppContext

TITLE = "BERT Explorer"
# for launch(css=...): the page's own rules, and its reflow on a phone; the colours the theme cannot set
CSS = static.read("page.css") + theme.CSS + access.CSS
# for launch(head=...): a tap shows what a hover shows; the keyboard, screen-reader and phone rules (ui/access.py)
HEAD = f"<script>{static.read('phone.js')}</script>" + access.head() + class_tab.HEAD  # + a class membership's cookie
THEME = theme.THEME  # the page's colours: bertdemo/ui/theme.py


def mode_line(limits: Limits | None) -> str:
    """The one line under the title that says which mode this server is in (``limits``: a public server's caps)."""
    if limits is None:
        return "*Local mode: any hub id or model folder on this machine can be loaded; training is not capped.*"
    lim = limits
    return (f"*Public mode: hub models, the embedded models and this server's runs only; training up to "
            f"{lim.max_params / 1e6:g}M parameters, {lim.max_steps:,} steps and {lim.max_minutes:g} minutes; "
            "only you control the runs you start.*")


def build_app(ctx: AppContext) -> gr.Blocks:
    """Build (but do not launch) the Blocks app serving every tab from the context's one model store.

    Pretraining checkpoints of this server's runs join the model choices of every tab (as run:<id>
    names, registered by the Pretrain tab). On a public server models and training are restricted.
    Building imports no torch: the store is a :class:`~bertdemo.lazy.StoreFront`, so the page is
    served while the logic loads, and the status line says "Loading the model…" until the model is in.
    """
    store = ctx.models
    load_selected = model_status(store, public=ctx.settings.is_public)  # (model, last loaded) -> status, notice, last, picker

    with gr.Blocks(title=TITLE, delete_cache=(1800, 3600)) as demo:  # files served: removed after an hour
        gr.Markdown(
            f"# {TITLE}\nSee BERT work: how it splits text into WordPiece tokens, which words it "
            "predicts for a `[MASK]`, where its attention heads look — and train a small one yourself, live."
        )
        gr.Markdown(mode_line(ctx.settings.public_limits), elem_id="mode-line")
        with gr.Row():
            model_box = model_dropdown(store, scale=2, elem_id="model-box")
            with gr.Column(scale=1, min_width=280):  # at phone width it wraps under the model box
                status = gr.Markdown("Loading the model…", elem_id="model-status")
                share = deep_links.share_controls()  # the link of the view on screen
        with gr.Tabs():
            learn = learn_tab.build(ctx, model_box, demo)  # first: a newcomer's way in (skippable: any other tab)
            tokenizer_tab.build(ctx, model_box, demo)
            notice = fill_mask_tab.build(ctx, model_box)
            attention_tab.build(ctx, model_box)
            inside_tab.build(ctx, model_box)
            words_tab.build(ctx, model_box, demo)  # after Fill-Mask: its "Why this word?" opens here
            masking_tab.build(ctx, model_box)
            owner = pretrain_tab.build(ctx, model_box, demo)  # this browser's owner token (kept in localStorage)
            finetune_tab.build(ctx, model_box, owner)
            member = class_tab.build(ctx, demo)  # a class: join with a code and a nickname; the teacher's view
            class_tab.record_learning(ctx, learn.progress, member, learn.raw)  # a member's answers reach their class
        # ?tab=…&text=…&model=… and the Learn tab's "keep exploring"; the page's one load handler of the model box
        opened = deep_links.connect(demo, model_box, learn, store, share)

        last_loaded = gr.State(None)
        picked = ([model_box, last_loaded], [status, notice, last_loaded, model_box])
        # Loading progress ("Starting up: loading PyTorch and transformers…", then the model's
        # steps) shows over the model box, where it has room; the status line keeps its words.
        model_box.change(load_selected, *picked, api_visibility="private", show_progress_on=model_box)
        opened.then(load_selected, *picked, api_visibility="private", show_progress_on=model_box)
    apply_budgets(demo, ctx)  # every model handler: its heavy slot, GFLOP allowance, deadline and client-gone stop
    serve_as_visitors(demo, ctx.settings.is_public)  # every event as its visitor: the run-access rule knows who asks
    guard_events(demo, ctx.settings.is_public)  # size before work: every handler's inputs checked against their limits
    progress_on_text(demo)  # no event shows its progress on a figure, table or JSON: the page copies those
    status_targets.track_less(demo)  # nor tracks a status it never shows (hidden progress, a closed tab at page load)
    answer_latest(demo)  # Enter or Run pressed while the answer before is coming asks again: never dropped
    hide_page_loads(demo)  # a function-valued component's page-load event is the page's, not an API endpoint
    return demo


"""The whole page: header, the shared model picker with its status line, and the tabs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.pretrain.budget import Limits
from bertdemo.settings import ServerSettings
from bertdemo.ui import attention_tab, fill_mask_tab, inside_tab, masking_tab, pretrain_tab, tokenizer_tab
from bertdemo.ui.common import model_dropdown, model_status, refresh_choices

if TYPE_CHECKING:
    from bertdemo.models.store import ModelStore
    from bertdemo.ui.lazy import StoreFront

TITLE = "BERT Explorer"
CSS = """
.token-chip:hover { outline: 2px solid #4f46e5; }
#model-status { min-height: 2.5em; }
#fm-targets-table table { display: block; overflow-x: auto; }
#fm-targets-table th, #fm-targets-table td { white-space: nowrap; }
/* the 2x2 run curves keep a readable size on a phone: the panel scrolls sideways instead */
#pt-curves { overflow-x: auto; }
#pt-curves .js-plotly-plot { min-width: 760px; }
"""
THEME = gr.themes.Soft(primary_hue="indigo")


def mode_line(public: bool, limits: Limits | None = None) -> str:
    """The one line under the title that says which mode this server is in."""
    if not public:
        return "*Local mode: any hub id or model folder on this machine can be loaded; training is not capped.*"
    lim = limits or Limits()
    return (f"*Public mode: hub models, the embedded models and this server's runs only; training up to "
            f"{lim.max_params / 1e6:g}M parameters, {lim.max_steps:,} steps and {lim.max_minutes:g} minutes; "
            "only you control the runs you start.*")


def build_app(store: ModelStore | StoreFront, runs_dir: str = "runs", public: bool = False, limits: Limits | None = None,
              settings: ServerSettings | None = None) -> gr.Blocks:
    """Build (but do not launch) the Blocks app serving every tab from one model store.

    Pretraining checkpoints under ``runs_dir`` join the model choices of every tab (as run:<id> names,
    registered by the Pretrain tab). ``public``: the
    server faces the public (models and training restricted, ``limits`` the training caps).
    Building imports no torch: with a :class:`~bertdemo.ui.lazy.StoreFront` the page is served
    while the logic loads, and the status line says "Loading the model…" until the model is in.
    """
    load_selected = model_status(store)  # (model, last loaded) -> status, notice, last, picker

    with gr.Blocks(title=TITLE, delete_cache=(1800, 3600)) as demo:  # files served: removed after an hour
        gr.Markdown(
            f"# {TITLE}\nSee BERT work: how it splits text into WordPiece tokens, which words it "
            "predicts for a `[MASK]`, where its attention heads look — and train a small one yourself, live."
        )
        gr.Markdown(mode_line(public, limits), elem_id="mode-line")
        with gr.Row():
            model_box = model_dropdown(store, scale=2, elem_id="model-box")
            with gr.Column(scale=1, min_width=280):  # at phone width it wraps under the model box
                status = gr.Markdown("Loading the model…", elem_id="model-status")
        with gr.Tabs():
            tokenizer_tab.build(store, model_box)
            notice = fill_mask_tab.build(store, model_box)
            attention_tab.build(store, model_box)
            inside_tab.build(store, model_box)
            masking_tab.build(store, model_box)
            pretrain_tab.build(_pretrain_context(store, runs_dir, public, limits, settings), model_box)

        last_loaded = gr.State(None)
        picked = ([model_box, last_loaded], [status, notice, last_loaded, model_box])
        # Loading progress ("Starting up: loading PyTorch and transformers…", then the model's
        # steps) shows over the model box, where it has room; the status line keeps its words.
        model_box.change(load_selected, *picked, api_visibility="private", show_progress_on=model_box)
        demo.load(refresh_choices(store), model_box, model_box, api_visibility="private").then(
            load_selected, *picked, api_visibility="private", show_progress_on=model_box
        )
    return demo


def _pretrain_context(store, runs_dir: str, public: bool, limits: Limits | None,
                      settings: ServerSettings | None) -> SimpleNamespace:
    """A stand-in for the app context the Pretrain tab takes (settings, run service, model store);
    the app context of app.py replaces it."""
    from bertdemo.models import policy
    from bertdemo.pretrain.service import RunService

    settings = settings or ServerSettings.build(runs_dir=runs_dir, public=public, limits=limits)
    policy.set_runs_dir(settings.runs_dir)  # the model store resolves "run:<id>/checkpoint" names through it
    return SimpleNamespace(settings=settings, runs=RunService(settings), models=store)

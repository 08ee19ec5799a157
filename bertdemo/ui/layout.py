"""The whole page: header, the shared model picker with its status line, and the tabs."""

from __future__ import annotations

import gradio as gr

from bertdemo.models.store import ModelStore
from bertdemo.pretrain import list_checkpoints
from bertdemo.ui import attention_tab, fill_mask_tab, inside_tab, masking_tab, pretrain_tab, tokenizer_tab
from bertdemo.ui.common import model_dropdown, progress_callback, refresh_choices, user_errors

TITLE = "BERT Explorer"
CSS = """
.token-chip:hover { outline: 2px solid #4f46e5; }
#model-status { min-height: 2.5em; }
"""
THEME = gr.themes.Soft(primary_hue="indigo")


def build_app(store: ModelStore, runs_dir: str = "runs") -> gr.Blocks:
    """Build (but do not launch) the Blocks app serving every tab from one model store.

    Pretraining checkpoints under ``runs_dir`` join the model choices of every tab.
    """
    store.set_extra_choices(lambda: [(f"{label} (checkpoint)", str(path)) for label, path in list_checkpoints(runs_dir)])

    @user_errors
    def load_selected(model: str, progress=gr.Progress()):
        loaded = store.get(model, progress=progress_callback(progress))
        return f"Model in use: {loaded.describe()}", fill_mask_tab.head_notice(store, model)

    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(
            f"# {TITLE}\nSee BERT work: how it splits text into WordPiece tokens, which words it "
            "predicts for a `[MASK]`, where its attention heads look — and train a small one yourself, live."
        )
        with gr.Row():
            model_box = model_dropdown(store, scale=2, elem_id="model-box")
            status = gr.Markdown("Loading the model…", elem_id="model-status")
        with gr.Tabs():
            tokenizer_tab.build(store, model_box)
            notice = fill_mask_tab.build(store, model_box)
            attention_tab.build(store, model_box)
            inside_tab.build(store, model_box)
            masking_tab.build(store, model_box)
            pretrain_tab.build(store, model_box, runs_dir)

        model_box.change(load_selected, model_box, [status, notice], api_visibility="private")
        demo.load(refresh_choices(store), model_box, model_box, api_visibility="private").then(
            load_selected, model_box, [status, notice], api_visibility="private"
        )
    return demo

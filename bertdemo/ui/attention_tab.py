"""The Attention tab: one head as a large heatmap, every layer x head as a clickable overview."""

from __future__ import annotations

import gradio as gr

from bertdemo.explore import attention

from bertdemo.viz import heatmaps
from bertdemo.models.store import ModelStore
from bertdemo.ui.common import progress_callback, user_errors

EXAMPLE = "The animal didn't cross the street because it was too tired."


def _render(result: attention.AttentionResult, layer: int, head: int, mean: bool, hide: bool, renorm: bool):
    layer = min(int(layer), result.num_layers - 1)
    head = min(int(head), result.num_heads - 1)
    view = attention.select_view(result, layer, None if mean else head, hide, renorm)
    overview = heatmaps.attention_overview(
        attention.all_heads(result, hide, renorm), selected=None if mean else (layer, head)
    )
    info = (
        f"{len(result.tokens)} tokens · {result.num_layers} layers × {result.num_heads} heads · "
        f"model {result.model_name}. Each row shows where one token looks; rows sum to 1"
        + (" over the tokens shown (renormalised after hiding [CLS]/[SEP])." if view.renormalised else ".")
        + (" With [CLS]/[SEP] hidden and renormalising off, rows sum to less than 1." if hide and not renorm else "")
    )
    return heatmaps.attention_heatmap(view), overview, info


def build(store: ModelStore, model_box: gr.Dropdown) -> None:
    """Lay out the tab inside the current Blocks context and wire its events."""

    @user_errors
    def run_attention(text, text_pair, model, layer, head, mean, hide, renorm, progress=gr.Progress()):
        loaded = store.get(model, progress=progress_callback(progress))
        result = attention.compute(loaded, text, text_pair)
        layer, head = min(int(layer), result.num_layers - 1), min(int(head), result.num_heads - 1)
        heatmap, overview, info = _render(result, layer, head, mean, hide, renorm)
        return heatmap, overview, info, result

    def fit_sliders(result, layer, head):
        """After a new result (browser only): slider ranges follow the model's layers and heads."""
        if result is None:
            return gr.skip(), gr.skip()
        return (
            gr.update(maximum=result.num_layers - 1, value=min(int(layer), result.num_layers - 1)),
            gr.update(maximum=result.num_heads - 1, value=min(int(head), result.num_heads - 1)),
        )

    @user_errors
    def redraw(result, layer, head, mean, hide, renorm):
        if result is None:
            return gr.skip(), gr.skip(), gr.skip()
        return _render(result, layer, head, mean, hide, renorm)

    def pick(result, evt: gr.SelectData):
        """A click on the overview selects that layer and head."""
        if result is None or evt.index is None:
            return gr.skip(), gr.skip(), gr.skip()
        x, y = evt.index[0], evt.index[1]
        cell = heatmaps.OverviewGeometry(result.num_layers, result.num_heads).cell_at(int(x), int(y))
        if cell is None:
            return gr.skip(), gr.skip(), gr.skip()
        return cell[0], cell[1], False

    with gr.Tab("Attention", id="attention"):
        gr.Markdown(
            "Self-attention decides, for every token, how much of every other token it mixes in. "
            "Each layer has several heads, each with its own pattern."
        )
        with gr.Row():
            text = gr.Textbox(label="Sentence A", value=EXAMPLE, lines=2, elem_id="att-text")
            text_pair = gr.Textbox(label="Sentence B (optional)", lines=2)
        with gr.Row():
            layer = gr.Slider(0, 23, value=0, step=1, label="Layer")  # ranges fitted to each model
            head = gr.Slider(0, 15, value=0, step=1, label="Head")
            with gr.Column(min_width=200):
                mean = gr.Checkbox(label="Mean over heads", value=False)
                hide = gr.Checkbox(label="Hide [CLS]/[SEP]", value=False)
                renorm = gr.Checkbox(
                    label="Renormalise rows when hiding", value=True,
                    info="Rescale each row to sum to 1 over the tokens that remain.",
                )
        button = gr.Button("Show attention", variant="primary", elem_id="att-run")
        info = gr.Markdown(elem_id="att-info")
        with gr.Row():
            heatmap = gr.Plot(label="Attention heatmap", elem_id="att-heatmap", scale=3)
        gr.Markdown("**Every layer (rows) × head (columns)** — click a head to enlarge it above.")
        overview = gr.Image(
            show_label=False, type="pil", interactive=False, elem_id="att-overview",
            buttons=["download", "fullscreen"],
        )
        state = gr.State(None)

    controls = [layer, head, mean, hide, renorm]
    # The API endpoint returns plain figures; the slider ranges are fitted in a browser-only
    # follow-up, so an API caller's session never has a lowered maximum.
    outputs = [heatmap, overview, info, state]
    for event, api in ((button.click, {"api_name": "attention"}), (text.submit, {"api_visibility": "private"})):
        event(run_attention, [text, text_pair, model_box, *controls], outputs, **api).then(
            fit_sliders, [state, layer, head], [layer, head], api_visibility="private"
        )
    gr.on(
        [c.change for c in controls],
        redraw,
        [state, *controls],
        [heatmap, overview, info],
        api_visibility="private",
        trigger_mode="always_last",
    )
    overview.select(pick, state, [layer, head, mean], api_visibility="private")

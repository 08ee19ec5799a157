"""The Inside BERT tab: one sentence through the model, step by step, with the model's own numbers.

Five sections, each its own named endpoint (text first): ``/inside_embeddings``,
``/inside_layer``, ``/logit_lens``, ``/mlm_loss``, ``/param_breakdown``. "Look inside" runs them
all for the browser, where a section that cannot answer (no [MASK], no right words) says why
in place instead of stopping the others.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable

import gradio as gr

from bertdemo.explore import code_snippets
from bertdemo.ui.code_panel import code_panel

from bertdemo.ui import common

from bertdemo.explore.input_limits import MAX_INSIDE_TOKENS, MAX_LENS_TOP_K, MAX_MASKS
from bertdemo.ui.common import progress_callback
from bertdemo.ui.lazy import LazyModule

if TYPE_CHECKING:
    from bertdemo.context import AppContext

inside = LazyModule("bertdemo.explore.inside")
inside_anatomy = LazyModule("bertdemo.explore.inside_anatomy")
inside_layer = LazyModule("bertdemo.explore.inside_layer")
inside_output = LazyModule("bertdemo.explore.inside_output")
draw = LazyModule("bertdemo.viz.inside")

EXAMPLE = "The capital of France is [MASK]."
EXAMPLE_WORDS = "paris"
INTRO = (
    "Follow one sentence through the model chosen above: embeddings → one layer, one head, step by "
    "step → every layer's guess at a `[MASK]` → the output and the loss → the parameters. Every number "
    "is recomputed from the weights and checked against the model's own forward. Type `[SEP]` to start "
    f"a second sentence (segment 1). At most {MAX_INSIDE_TOKENS} tokens."
)

WIDE = "in-wide"  # tables that scroll sideways on a phone instead of wrapping digit by digit
STYLE = (
    f"<style>.{WIDE} table {{ display: block; width: fit-content; max-width: 100%; overflow-x: auto; }} "
    f".{WIDE} td, .{WIDE} th {{ white-space: nowrap; }} "
    "#in-neuron-plot, #in-steps-plot, #in-lens-plot { overflow-x: auto; }</style>"
)


def _shape_state(result: inside_layer.LayerStepResult) -> dict:
    return {"layers": result.num_layers, "heads": result.num_heads, "tokens": len(result.tokens),
            "layer": result.layer, "head": result.head, "query": result.query}


def _soft(fn: Callable, n_outputs: int, message_at: int) -> Callable:
    """For the "Look inside" chain: a ValueError becomes a note in the section, other outputs cleared."""

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:
            out: list = [None] * n_outputs
            out[message_at] = f"> ⚠️ {exc}"
            return tuple(out)

    return wrapper


def build(ctx: AppContext, model_box: gr.Dropdown) -> None:
    """Lay out the tab inside the current Blocks context and wire its events."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)  # no server path shown
    store = ctx.models

    def load(model, progress):
        return store.get(model, progress=progress_callback(progress))

    def embeddings(text: str, model: str, progress=gr.Progress()):
        result = inside.embeddings(load(model, progress), text)
        return (draw.embeddings_markdown(result), draw.embeddings_figure(result),
                draw.position_cosine_figure(result), draw.order_markdown(result.order, result.model_name))

    def layer_view(text: str, model: str, layer: float, head: float, query: float, progress=gr.Progress()):
        result = inside_layer.layer_step(load(model, progress), text, int(layer), int(head), int(query))
        return draw.layer_markdown(result), draw.neuron_figure(result), draw.layer_figure(result), _shape_state(result)

    def layer_fitted(text, model, layer, head, query, progress=gr.Progress()):
        """Browser path: a layer/head/token beyond this model's range is brought into it."""
        loaded = load(model, progress)
        inside.bert_modules(loaded)  # a clear message for other architectures
        cfg = loaded.model.config
        n_tokens = len(inside.encode_for_inside(loaded, text).tokens)
        return layer_view(text, model, min(int(layer), cfg.num_hidden_layers - 1),
                          min(int(head), cfg.num_attention_heads - 1), min(int(query), n_tokens - 1), progress)

    def lens(text: str, model: str, mask_number: float, top_k: float, progress=gr.Progress()):
        result = inside_output.logit_lens(load(model, progress), text, int(mask_number), int(top_k))
        return draw.lens_markdown(result), draw.lens_figure(result), inside_output.lens_as_plain(result)

    def loss(text: str, words: str, model: str, progress=gr.Progress()):
        result = inside_output.mlm_loss(load(model, progress), text, words)
        return draw.loss_markdown(result), draw.loss_figure(result), inside_output.as_plain(result)

    def anatomy(model: str, progress=gr.Progress()):
        loaded = load(model, progress)
        result = inside_anatomy.param_breakdown(loaded.model, loaded.name)
        return draw.anatomy_markdown(result), result.architecture, inside_anatomy.as_plain(result)

    def fit_sliders(state):
        if not state:
            return gr.skip(), gr.skip(), gr.skip()
        return (
            gr.update(maximum=state["layers"] - 1, value=state["layer"]),
            gr.update(maximum=state["heads"] - 1, value=state["head"]),
            gr.update(maximum=state["tokens"] - 1, value=state["query"]),
        )

    with gr.Tab("Inside BERT", id="inside"):
        gr.HTML(STYLE, padding=False)
        gr.Markdown(INTRO)
        with gr.Row():
            text = gr.Textbox(label="Your sentence", value=EXAMPLE, lines=2, elem_id="in-text",
                              info="[MASK] where a word is hidden.")
            words = gr.Textbox(
                label="Right words", value=EXAMPLE_WORDS, lines=2, elem_id="in-words",
                info="One per [MASK], comma-separated, in order. Or type a plain sentence and name its words to mask.",
            )
        run = gr.Button("Look inside", variant="primary", elem_id="in-run")

        with gr.Accordion("1 · Embeddings: token + position + segment, then LayerNorm", open=True):
            emb_button = gr.Button("Show embeddings", size="sm", elem_id="in-emb-run")
            emb_md = gr.Markdown(elem_id="in-emb-info", elem_classes=[WIDE])
            emb_fig = gr.Plot(show_label=False, elem_id="in-emb-plot")
            pos_fig = gr.Plot(show_label=False, elem_id="in-pos-plot")
            order_md = gr.Markdown(elem_id="in-order", elem_classes=[WIDE])

        with gr.Accordion("2 · One layer, one head, step by step", open=True):
            with gr.Row():
                layer = gr.Slider(0, 23, value=0, step=1, label="Layer", elem_id="in-layer")
                head = gr.Slider(0, 15, value=0, step=1, label="Head", elem_id="in-head")
                query = gr.Slider(0, MAX_INSIDE_TOKENS - 1, value=1, step=1,
                                  label="Query token (position)", elem_id="in-query")
            layer_button = gr.Button("Show this layer", size="sm", elem_id="in-layer-run")
            layer_md = gr.Markdown(elem_id="in-layer-info", elem_classes=[WIDE])
            neuron_fig = gr.Plot(show_label=False, elem_id="in-neuron-plot")
            steps_fig = gr.Plot(show_label=False, elem_id="in-steps-plot")
            shape_state = gr.State(None)

        with gr.Accordion("3 · Through the layers: the MLM head at every layer (logit lens)", open=True):
            with gr.Row():
                mask_number = gr.Slider(1, MAX_MASKS, value=1, step=1, label="Which [MASK]")
                top_k = gr.Slider(1, MAX_LENS_TOP_K, value=5, step=1, label="Top-k per layer")
            lens_button = gr.Button("Show the lens", size="sm", elem_id="in-lens-run")
            lens_md = gr.Markdown(elem_id="in-lens-info")
            lens_fig = gr.Plot(show_label=False, elem_id="in-lens-plot")
            with gr.Accordion("Numbers (JSON)", open=False):
                lens_json = gr.JSON()

        with gr.Accordion("4 · The output and the loss", open=True):
            loss_button = gr.Button("Compute the loss", size="sm", elem_id="in-loss-run")
            loss_md = gr.Markdown(elem_id="in-loss-info", elem_classes=[WIDE])
            loss_fig = gr.Plot(show_label=False, elem_id="in-loss-plot")
            with gr.Accordion("Numbers (JSON)", open=False):
                loss_json = gr.JSON()

        with gr.Accordion("5 · Anatomy: parameters per component", open=True):
            anatomy_button = gr.Button("Count the parameters", size="sm", elem_id="in-anatomy-run")
            anatomy_md = gr.Markdown(elem_id="in-anatomy", elem_classes=[WIDE])
            with gr.Accordion("print(model)", open=False):
                architecture = gr.Code(language=None, show_label=False, elem_id="in-architecture")
            with gr.Accordion("Numbers (JSON)", open=False):
                anatomy_json = gr.JSON()
        code_panel(ctx, code_snippets.inside_code, [model_box, text, words, layer, head, query], elem_id="in-code")

    sections = [
        (emb_button, embeddings, [text, model_box], [emb_md, emb_fig, pos_fig, order_md], "inside_embeddings"),
        (layer_button, layer_view, [text, model_box, layer, head, query], [layer_md, neuron_fig, steps_fig, shape_state],
         "inside_layer"),
        (lens_button, lens, [text, model_box, mask_number, top_k], [lens_md, lens_fig, lens_json], "logit_lens"),
        (loss_button, loss, [text, words, model_box], [loss_md, loss_fig, loss_json], "mlm_loss"),
        (anatomy_button, anatomy, [model_box], [anatomy_md, architecture, anatomy_json], "param_breakdown"),
    ]
    chain = None
    for button, fn, inputs, outputs, api_name in sections:
        event = button.click(user_errors(fn), inputs, outputs, api_name=api_name)
        soft = user_errors(_soft(layer_fitted if fn is layer_view else fn, len(outputs), 0))
        chain = (run.click if chain is None else chain.then)(soft, inputs, outputs, api_visibility="private")
        if fn is layer_view:
            event.then(fit_sliders, shape_state, [layer, head, query], api_visibility="private")
            chain = chain.then(fit_sliders, shape_state, [layer, head, query], api_visibility="private")

    gr.on(
        [c.release for c in (layer, head, query)],
        user_errors(_soft(layer_fitted, 4, 0)),
        [text, model_box, layer, head, query],
        [layer_md, neuron_fig, steps_fig, shape_state],
        api_visibility="private",
        trigger_mode="always_last",
    )

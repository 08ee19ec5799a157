"""The Inside BERT tab: one sentence through the model, step by step, with the model's own numbers.

Five sections, each its own named endpoint (text first): ``/inside_embeddings``,
``/inside_layer``, ``/logit_lens``, ``/mlm_loss``, ``/param_breakdown``. In the page a section is
computed when it is open: "Look inside" (or Enter) answers every open section in one event, opening
a section answers it then, and a slider redraws only its own section. The views of one sentence
share the model's one forward (remembered with the model), and a figure that would not change is
not sent again. A figure screens away from what the learner reads is drawn as they scroll towards
it (``PlotlyFigure(lazy=True)``). A section that cannot answer (no [MASK], no right words) says why in place.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.lazy import LazyModule
from bertdemo.limits import MAX_INSIDE_TOKENS, MAX_LENS_TOP_K, MAX_MASKS
from bertdemo.snippets import views as snippets
from bertdemo.ui import common, lanes
from bertdemo.ui.code_panel import code_panel
from bertdemo.ui.common import progress_callback
from bertdemo.ui.plotly_figure import PlotlyFigure

if TYPE_CHECKING:
    from bertdemo.context import AppContext

inside = LazyModule("bertdemo.explore.inside")
inside_anatomy = LazyModule("bertdemo.explore.inside_anatomy")
inside_layer = LazyModule("bertdemo.explore.inside_layer")
inside_output = LazyModule("bertdemo.explore.inside_output")
draw = LazyModule("bertdemo.viz.inside")

EXAMPLE = "The capital of France is [MASK]."
EXAMPLE_WORDS = "paris"


def right_words(text: str, words: str) -> str:
    """The right words the views use: the learner's, and the example's own ("paris") for the example sentence while
    the box is left empty. The box never holds the example's word: prefilled, it was scored against the learner's
    own sentence as soon as they typed one (a loss worse than a uniform guess, shown as theirs)."""
    return EXAMPLE_WORDS if not (words or "").strip() and (text or "").strip() == EXAMPLE else words


def _inside_code(model: str, text: str, words: str, *view: int) -> str:
    """The tab's code panel: the views' code, with the right words they used."""
    return snippets.inside_code(model, text, right_words(text, words), *view)


INTRO = (
    "Follow one sentence through the model chosen above: embeddings → one layer, one head, step by "
    "step → every layer's guess at a `[MASK]` → the output and the loss → the parameters. Every number "
    "is recomputed from the weights and checked against the model's own forward. Type `[SEP]` to start "
    f"a second sentence (segment 1). At most {MAX_INSIDE_TOKENS} tokens."
)

WIDE = "in-wide"  # tables that scroll sideways on a phone instead of wrapping digit by digit (static/page.css)


SECTIONS = ("embeddings", "order", "positions", "layer", "steps", "lens", "loss", "anatomy")  # in page order
NESTED_IN = {"order": "embeddings", "positions": "embeddings", "steps": "layer"}  # shown only inside the other
OPEN_AT_START = ("embeddings", "layer")  # the others are computed when a learner opens them
WAITING = "*Press **Look inside**: this section fills in for your sentence.*"


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
        return draw.layer_markdown(result), draw.neuron_figure(result), draw.layer_figure(result)

    def lens(text: str, model: str, mask_number: float, top_k: float, progress=gr.Progress()):
        result = inside_output.logit_lens(load(model, progress), text, int(mask_number), int(top_k))
        return draw.lens_markdown(result), draw.lens_figure(result), inside_output.lens_as_plain(result)

    def loss(text: str, words: str, model: str, progress=gr.Progress()):
        result = inside_output.mlm_loss(load(model, progress), text, right_words(text, words))
        return draw.loss_markdown(result), draw.loss_figure(result), inside_output.as_plain(result)

    def anatomy(model: str, progress=gr.Progress()):
        loaded = load(model, progress)
        result = inside_anatomy.param_breakdown(loaded.model, loaded.name)
        return draw.anatomy_markdown(result), result.architecture, inside_anatomy.as_plain(result)

    def section_answer(name: str, loaded, text, words, layer, head, query, mask_number, top_k,
                       page: dict) -> dict:
        """One section's outputs as {component: value}. ``page``: what the page shows now (:func:`_on_page`):
        a figure already on screen gets its new value alone, and a slider is sent again only when its range or
        its value must change (each property update rebuilds the component and its config on the server: most of
        what answering a click cost there, beside the model)."""
        def figure(fig):
            return fig if name in page["figures"] else gr.update(value=fig, visible=True)

        if name == "embeddings":
            result = inside.embeddings(loaded, text, with_order_test=False)
            return {emb_md: draw.embeddings_markdown(result), emb_fig: figure(draw.embeddings_figure(result))}
        if name == "order":  # three more passes through the model: run when its accordion opens
            return {order_md: draw.order_markdown(inside.order_test(loaded, text), loaded.name)}
        if name == "positions":  # the same for every sentence: drawn when its accordion opens
            return {pos_fig: figure(draw.position_cosine_figure(inside.embeddings(loaded, text, False)))}
        if name in ("layer", "steps"):
            result = layer_fitted(loaded, text, layer, head, query)
            if name == "steps":  # all 15 steps of the layer, drawn when their accordion opens
                return {steps_fig: figure(draw.layer_figure(result))}
            out = {layer_md: draw.layer_markdown(result), neuron_fig: figure(draw.neuron_figure(result))}
            ranges = [result.num_layers - 1, result.num_heads - 1, len(result.tokens) - 1]
            for box, shown_max, top, asked, value in zip((layer_box, head_box, query_box), page["ranges"], ranges,
                                                         (layer, head, query),
                                                         (result.layer, result.head, result.query)):
                if shown_max != top or int(asked) != value:  # a new range, or a value brought into it
                    out[box] = gr.update(maximum=top, value=value)
            page["ranges"] = ranges  # what the sliders span once this answer is on the page
            return out
        if name == "lens":
            result = inside_output.logit_lens(loaded, text, int(mask_number), int(top_k))
            return {lens_md: draw.lens_markdown(result), lens_fig: figure(draw.lens_figure(result)),
                    lens_json: inside_output.lens_as_plain(result)}
        if name == "loss":
            result = inside_output.mlm_loss(loaded, text, words)
            return {loss_md: draw.loss_markdown(result), loss_fig: figure(draw.loss_figure(result)),
                    loss_json: inside_output.as_plain(result)}
        result = inside_anatomy.param_breakdown(loaded.model, loaded.name)
        return {anatomy_md: draw.anatomy_markdown(result), architecture: result.architecture,
                anatomy_json: inside_anatomy.as_plain(result)}

    def layer_fitted(loaded, text, layer, head, query):
        """The browser's layer view: a layer/head/token beyond this model's range is brought into it."""
        inside.bert_modules(loaded)  # a clear message for other architectures
        cfg = loaded.model.config
        n_tokens = inside.trace(loaded, text).enc.length
        return inside_layer.layer_step(loaded, text, min(int(layer), cfg.num_hidden_layers - 1),
                                       min(int(head), cfg.num_attention_heads - 1), min(int(query), n_tokens - 1))

    def answer(sections, force: bool, text, words, model, layer, head, query, mask_number, top_k, opened, shown,
               progress) -> dict:
        """The open ones of ``sections`` for these inputs; unless ``force``, one already shown for them is skipped.
        ``sections`` of one name is that section being opened: it is open from now on."""
        loaded = load(model, progress)
        words = right_words(text, words)  # once, for every section that reads them
        shown = dict(shown or {})
        if len(sections) == 1 and sections[0] not in (opened or []):
            opened = sorted({*(opened or []), sections[0]})
        inputs = {"embeddings": (text,), "order": (text,), "positions": (), "layer": (text, layer, head, query),
                  "steps": (text, layer, head), "lens": (text, mask_number, top_k), "loss": (text, words),
                  "anatomy": ()}
        out: dict = {}
        page = _on_page(shown)
        for name in sections:
            if name not in opened or NESTED_IN.get(name, name) not in opened:
                continue
            key = (loaded.name, *inputs[name])
            if not force and shown.get(name) == key:
                continue
            try:
                out.update(section_answer(name, loaded, text, words, layer, head, query, mask_number, top_k, page))
                if any(c in plots for c in section_outputs[name]):
                    page["figures"].add(name)
            except ValueError as exc:  # this section cannot answer: say why in it, the others go on
                out.update({c: (f"> ⚠️ {exc}" if i == 0 else gr.update(visible=False) if c in plots else None)
                            for i, c in enumerate(section_outputs[name])})
                page["figures"].discard(name)
            shown[name] = key
        shown[_FIGURES] = sorted(page["figures"])
        shown[_RANGES] = page["ranges"]
        out[shown_state] = shown
        out[opened_state] = opened
        return out

    with gr.Tab("Inside BERT", id="inside") as tab:
        gr.Markdown(INTRO)
        with gr.Row():
            text = gr.Textbox(label="Your sentence", value=EXAMPLE, lines=2, elem_id="in-text",
                              info="[MASK] where a word is hidden.")
            words = gr.Textbox(
                label="Right words", value="", lines=2, elem_id="in-words", placeholder=f"e.g. {EXAMPLE_WORDS}",
                info=f"One per [MASK], comma-separated, in order (the example's: {EXAMPLE_WORDS}, while this box is "
                     "empty). Or type a plain sentence and name its words to mask.",
            )
        run = gr.Button("Look inside", variant="primary", elem_id="in-run")

        def section(title: str, name: str) -> gr.Accordion:
            return gr.Accordion(title, open=name in OPEN_AT_START, elem_id=f"in-section-{name}")

        def plot(elem_id: str) -> PlotlyFigure:
            # shown once it has a figure; drawn when near the screen (the layer's views lie screens below the button)
            return PlotlyFigure(show_label=False, elem_id=elem_id, visible=False, lazy=True)

        with section("1 · Embeddings: token + position + segment, then LayerNorm", "embeddings") as emb_section:
            emb_button = gr.Button("Show embeddings", size="sm", elem_id="in-emb-run", visible=False)  # API
            emb_md = gr.Markdown(WAITING, elem_id="in-emb-info", elem_classes=[WIDE])
            emb_fig = plot("in-emb-plot")
            with section("Order test: the same words shuffled, with and without positions", "order") as order_section:
                order_md = gr.Markdown(WAITING, elem_id="in-order", elem_classes=[WIDE])
            with section("The learned position vectors: cosine between positions", "positions") as pos_section:
                pos_fig = plot("in-pos-plot")

        with section("2 · One layer, one head, step by step", "layer") as layer_section:
            with gr.Row():
                layer = gr.Slider(0, 23, value=0, step=1, label="Layer", elem_id="in-layer")
                head = gr.Slider(0, 15, value=0, step=1, label="Head", elem_id="in-head")
                query = gr.Slider(0, MAX_INSIDE_TOKENS - 1, value=1, step=1,
                                  label="Query token (position)", elem_id="in-query")
            layer_button = gr.Button("Show this layer", size="sm", elem_id="in-layer-run", visible=False)  # API
            layer_md = gr.Markdown(WAITING, elem_id="in-layer-info", elem_classes=[WIDE])
            neuron_fig = plot("in-neuron-plot")
            with section("Every step of this layer as a heatmap (chosen head)", "steps") as steps_section:
                steps_fig = plot("in-steps-plot")

        with section("3 · Through the layers: the MLM head at every layer (logit lens)", "lens") as lens_section:
            with gr.Row():
                mask_number = gr.Slider(1, MAX_MASKS, value=1, step=1, label="Which [MASK]")
                top_k = gr.Slider(1, MAX_LENS_TOP_K, value=5, step=1, label="Top-k per layer")
            lens_button = gr.Button("Show the lens", size="sm", elem_id="in-lens-run", visible=False)  # API
            lens_md = gr.Markdown(WAITING, elem_id="in-lens-info")
            lens_fig = plot("in-lens-plot")
            with gr.Accordion("Numbers (JSON)", open=False):
                lens_json = gr.JSON()

        with section("4 · The output and the loss", "loss") as loss_section:
            loss_button = gr.Button("Compute the loss", size="sm", elem_id="in-loss-run", visible=False)  # API
            loss_md = gr.Markdown(WAITING, elem_id="in-loss-info", elem_classes=[WIDE])
            loss_fig = plot("in-loss-plot")
            with gr.Accordion("Numbers (JSON)", open=False):
                loss_json = gr.JSON()

        with section("5 · Anatomy: parameters per component", "anatomy") as anatomy_section:
            anatomy_button = gr.Button("Count the parameters", size="sm", elem_id="in-anatomy-run", visible=False)
            anatomy_md = gr.Markdown(WAITING, elem_id="in-anatomy", elem_classes=[WIDE])
            with gr.Accordion("print(model)", open=False):
                architecture = gr.Code(language=None, show_label=False, elem_id="in-architecture")
            with gr.Accordion("Numbers (JSON)", open=False):
                anatomy_json = gr.JSON()
        opened_state = gr.State(list(OPEN_AT_START))  # the sections open in this page
        shown_state = gr.State({})  # per section: the inputs its outputs show

    layer_box, head_box, query_box = layer, head, query  # the names section_answer() updates
    plots = {emb_fig, pos_fig, neuron_fig, steps_fig, lens_fig, loss_fig}
    section_outputs = {
        "embeddings": [emb_md, emb_fig],
        "order": [order_md],
        "positions": [pos_fig],
        "layer": [layer_md, neuron_fig],
        "steps": [steps_fig],
        "lens": [lens_md, lens_fig, lens_json],
        "loss": [loss_md, loss_fig, loss_json],
        "anatomy": [anatomy_md, architecture, anatomy_json],
    }
    look_inputs = [text, words, model_box, layer, head, query, mask_number, top_k, opened_state, shown_state]

    # API endpoints, one per section (plain values); the page uses the events below
    apis = [
        (emb_button, embeddings, [text, model_box], [emb_md, emb_fig, pos_fig, order_md], "inside_embeddings"),
        (layer_button, layer_view, [text, model_box, layer, head, query], [layer_md, neuron_fig, steps_fig],
         "inside_layer"),
        (lens_button, lens, [text, model_box, mask_number, top_k], section_outputs["lens"], "logit_lens"),
        (loss_button, loss, [text, words, model_box], section_outputs["loss"], "mlm_loss"),
        (anatomy_button, anatomy, [model_box], section_outputs["anatomy"], "param_breakdown"),
    ]
    for button, fn, inputs, outputs, api_name in apis:
        button.click(user_errors(fn), inputs, outputs, api_name=api_name, **lanes.VIEWS)

    def page_event(triggers, sections: tuple[str, ...], force: bool, status: bool = True, code=None,
                   status_on: tuple[str, ...] | None = None, **kwargs) -> None:
        """``sections`` answered on ``triggers``; the event's outputs are theirs alone (every output of an
        event is tracked and copied by the page while it runs, so a slider's event lists only its section).
        ``status``: the page shows the event's loading status on the sections' text (not on the states), on
        ``status_on``'s alone when given; ``code``: a code panel refreshed in the same answer while it is open."""
        def handler(*args, progress=gr.Progress()):
            return answer(sections, force, *args, progress)

        outputs = [c for name in sections for c in section_outputs[name]]
        if "layer" in sections:
            outputs += [layer, head, query]
        on = outputs if status_on is None else [c for name in status_on for c in section_outputs[name]]
        shown = dict(show_progress_on=common.text_outputs(on)) if status else dict(show_progress="hidden",
                                                                                  show_progress_on=[])
        wiring = (user_errors(handler), look_inputs, outputs + [shown_state, opened_state])
        event = gr.on(triggers, *(code.fold(*wiring) if code is not None else wiring), api_visibility="private",
                      **shown, **lanes.VIEWS, **kwargs)
        # refused: no section keeps the sentence before's answer; what was shown is forgotten, so the next answer
        # draws every section again (the sliders and the open sections stay)
        answers = [c for c in outputs if c not in (layer, head, query)]
        notes = common.text_outputs(answers)
        common.clear_on_refusal(event, [*answers, shown_state], note=notes[0] if notes else None)

    # Look inside shows no loading status: it answers in a fraction of a second, and the page's status
    # machinery was a fifth of its CPU per click (docs/lab/benchmarks.md, "Inside BERT's Look inside");
    # a model still loading shows its progress on the model box
    with tab:  # under the sections; refreshed, while open, in Look inside's own answer (one round trip)
        code = code_panel(ctx, _inside_code, [model_box, text, words, layer, head, query],
                          elem_id="in-code")
    page_event([run.click, text.submit, words.submit], SECTIONS, True, status=False, code=code)
    # the example, the first time the tab is shown: it computes the open sections, and shows its status on theirs
    # (the page tracks a target's status for its life, at every later click: docs/benchmarks.md, "Click to settled")
    page_event([tab.select], SECTIONS, False, status_on=OPEN_AT_START)
    page_event([c.release for c in (layer, head, query)], ("layer", "steps"), False, trigger_mode="always_last")
    page_event([c.release for c in (mask_number, top_k)], ("lens",), False, trigger_mode="always_last")
    accordions = (emb_section, order_section, pos_section, layer_section, steps_section, lens_section, loss_section,
                  anatomy_section)
    for name, accordion in zip(SECTIONS, accordions):
        page_event([accordion.expand], (name,), False)  # computed when opened (and open from then on)
        accordion.collapse(functools.partial(_closing, name), opened_state, opened_state, api_visibility="private",
                           queue=False)


_FIGURES = "_figures on screen"  # keys of the page's shown state beside the sections': the sections whose
_RANGES = "_slider ranges"  # figure is on screen, and the maxima the layer / head / query sliders were last sent


def _on_page(shown: dict) -> dict:
    """What the page shows, from its shown state: the sections whose figure is on screen, and the maxima the
    three layer-view sliders were last sent (None before the first); an answer updates both as it goes."""
    return {"figures": set(shown.get(_FIGURES) or ()), "ranges": list(shown.get(_RANGES) or [None, None, None])}


def _closing(name: str, opened: list[str] | None) -> list[str]:
    return [s for s in (opened or []) if s != name]

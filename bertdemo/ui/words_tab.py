"""The Word in context tab: one word, many meanings (cosines across layers against the random-word
baseline and the static vector, the sense readout), the word across the embedded corpus (a 2D picture
and nearest neighbours), and "why this word?" (attribution of a [MASK] prediction, reached from
Fill-Mask too). Named endpoints: ``/word_in_context``, ``/corpus_neighbours``, ``/attribution``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.assets import sense_sets
from bertdemo.lazy import LazyModule
from bertdemo.limits import (
    MAX_ATTR_TOKENS,
    MAX_IG_STEPS,
    MAX_INDEX_TOKENS,
    MAX_MASKS,
    MAX_NEIGHBOURS,
    MAX_WIC_SENTENCES,
    MAX_WIC_TOKENS,
)
from bertdemo.snippets import words as word_code
from bertdemo.ui import common
from bertdemo.ui.code_panel import code_panel
from bertdemo.ui.common import progress_callback
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.plotly_figure import PlotlyFigure

if TYPE_CHECKING:
    from bertdemo.context import AppContext

wic = LazyModule("bertdemo.explore.word_in_context")
corpus = LazyModule("bertdemo.explore.corpus_neighbours")
attribution = LazyModule("bertdemo.explore.attribution")
draw = LazyModule("bertdemo.viz.words")

TAB_ID = "words"
METHODS = ("integrated gradients", "gradient x input", "occlusion")  # as explore.attribution.METHODS (torch-free)
DEFAULT_STEPS = 50
WHY_EXAMPLE = "She drank a cup of hot [MASK] before going to bed."
NEIGHBOUR_EXAMPLE = "We sat on the bank of the river."
INTRO = (
    "Is *bank* in “the river bank” the same vector as in “a bank account”? A static embedding says yes — one row "
    "of the embedding table per word. BERT's vectors depend on the sentence: follow where the senses part, "
    "layer by layer, where the word sits among its uses in a corpus, and which words made the model predict "
    f"what it did. One sentence per line, `sense | sentence` to label it (at most {MAX_WIC_SENTENCES} sentences "
    f"of {MAX_WIC_TOKENS} tokens)."
)


def build(ctx: AppContext, model_box: gr.Dropdown, page: gr.Blocks | None = None) -> None:
    """Lay out the tab inside the current Blocks context and wire its events (``page``: the app, to link
    Fill-Mask's "Why this word?" button here)."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)
    store = ctx.models

    def load(model, progress=None):
        loaded = store.get(model, progress=progress_callback(progress) if progress is not None else None)
        current_budget().restart()  # the request's time counts once its model is in (loading has its own rules)
        return loaded

    def compare(word: str, sentences: str, model: str, progress=gr.Progress()):
        result = wic.similarities(load(model, progress), word, sentences)
        return draw.similarity_figure(result), draw.similarity_markdown(result), wic.as_plain(result)

    def readout(model: str, progress=gr.Progress()):
        progress(0.1, desc="Reading the labelled sense set through every layer")
        result = wic.sense_readout(load(model, progress))
        return draw.readout_figure(result), draw.readout_markdown(result)

    def fitted(loaded, layer: float) -> tuple[int, dict]:
        """The page's layer brought into this model's range, and its slider spanning that range."""
        top = corpus.num_layers(loaded)
        return min(int(layer), top), gr.update(maximum=top, value=min(int(layer), top))

    def picture(word: str, sentences: str, layer: float, clusters: float, model: str, progress=gr.Progress()):
        progress(0.1, desc=f"Finding '{word.strip()}' in the embedded corpus")
        loaded = load(model, progress)
        layer, slider = fitted(loaded, layer)
        result = corpus.atlas(loaded, word, sentences, layer, int(clusters), budget=current_budget())
        return draw.atlas_figure(result), draw.atlas_markdown(result), slider

    def find(text: str, position: float, layer: float, k: float, model: str, progress=gr.Progress()):
        loaded = load(model, progress)
        layer, slider = fitted(loaded, layer)
        result = corpus.neighbours(loaded, text, int(position), layer, int(k), progress=progress_callback(progress),
                                   budget=current_budget())
        return draw.neighbours_markdown(result), slider

    def explain(text: str, mask_number: float, target: str, methods: list[str], steps: float, model: str,
                progress=gr.Progress()):
        result = attribution.attribute(load(model, progress), text, int(mask_number), target, tuple(methods or ()),
                                       int(steps), progress=progress_callback(progress), budget=current_budget())
        return draw.attribution_figure(result), draw.attribution_markdown(result), attribution.as_plain(result)

    @user_errors
    def word_in_context(word: str, sentences: str, model: str = "") -> dict:
        """The word's cosine between every two sentences at every layer, the layer's random-word baseline and the
        static vector's cosine.

        Args:
            word: The word to follow, as it is written in every sentence.
            sentences: 2 to 12 sentences holding the word, one per line, each optionally "sense | sentence".
            model: The model whose hidden states are compared; empty: the server's default model.
        """
        return wic.as_plain(wic.similarities(load(model), word, sentences))

    @user_errors
    def corpus_neighbours(text: str, position: int = 1, layer: int = 4, k: int = 10, model: str = "") -> dict:
        """The k corpus tokens (embedded Wikipedia summaries) most similar at ``layer`` to token ``position`` of
        ``text`` (0 = [CLS]), with their sentences and cosines."""
        return corpus.neighbours_as_plain(corpus.neighbours(load(model), text, position, layer, k,
                                                            budget=current_budget()))

    @user_errors
    def attribution_api(text: str, mask_number: int = 1, target: str = "", method: str = "integrated gradients",
                        steps: int = DEFAULT_STEPS, model: str = "") -> dict:
        """Each token's contribution to the target word's probability at the chosen [MASK] (``method``: integrated
        gradients, gradient x input or occlusion), with the completeness figures."""
        return attribution.as_plain(attribution.attribute(load(model), text, mask_number, target, (method,), steps,
                                                          budget=current_budget()))

    with gr.Tab("Word in context", id=TAB_ID) as tab:
        gr.Markdown(INTRO)
        with gr.Accordion("1 · One word, many meanings: the same vector?", open=True):
            with gr.Row():
                word = gr.Textbox(label="Word", value=sense_sets.DEFAULT_WORD, max_lines=1, scale=1, min_width=120,
                                  elem_id="wic-word")
                sentences = gr.Textbox(label="Sentences (one per line; optional 'sense | ' before each)", lines=4,
                                       max_lines=12, value=sense_sets.default_lines(sense_sets.DEFAULT_WORD), scale=4,
                                       elem_id="wic-sentences")
            gr.Examples([[w, sense_sets.default_lines(w)] for w in sense_sets.WORDS], inputs=[word, sentences],
                        label="Sense sets")
            run = gr.Button("Compare the vectors", variant="primary", elem_id="wic-run")
            sim_md = gr.Markdown(elem_id="wic-sim-info")
            sim_fig = PlotlyFigure(show_label=False, elem_id="wic-sim-plot")
            with gr.Accordion("Numbers (JSON)", open=False):
                sim_json = gr.JSON()
            with gr.Accordion("Sense readout: which layer knows the sense?", open=False) as readout_box:
                readout_md = gr.Markdown("*Open to compute (a labelled set of 96 sentences).*", elem_id="wic-readout")
                readout_fig = PlotlyFigure(show_label=False, elem_id="wic-readout-plot")
            code_panel(ctx, word_code.word_in_context_code, [model_box, word, sentences], elem_id="wic-code")

        with gr.Accordion("2 · The word across the corpus", open=False) as corpus_box:
            with gr.Row():
                atlas_layer = gr.Slider(0, 24, value=4, step=1, label="Layer of the uses", elem_id="wic-atlas-layer")
                clusters = gr.Slider(1, 6, value=2, step=1, label="Clusters (colours)")
            atlas_run = gr.Button("Show the word's uses", elem_id="wic-atlas-run")
            atlas_md = gr.Markdown(elem_id="wic-atlas-info")
            atlas_fig = PlotlyFigure(show_label=False, elem_id="wic-atlas-plot")
            gr.Markdown(f"**Nearest neighbours.** The corpus tokens most like one token of your sentence at a layer: "
                        f"the first {MAX_INDEX_TOKENS:,} tokens of the corpus, indexed once per model and layer "
                        "(a few seconds; kept in memory, bounded).")
            with gr.Row():
                nb_text = gr.Textbox(label="Your sentence", value=NEIGHBOUR_EXAMPLE, scale=3, elem_id="wic-nb-text")
                nb_position = gr.Number(label="Token position (0 = [CLS])", value=5, precision=0, minimum=0,
                                        maximum=MAX_WIC_TOKENS - 1, scale=1, elem_id="wic-nb-position")
            with gr.Row():
                nb_layer = gr.Slider(0, 24, value=4, step=1, label="Layer of the neighbours", elem_id="wic-nb-layer")
                nb_k = gr.Slider(1, MAX_NEIGHBOURS, value=10, step=1, label="k")
            nb_run = gr.Button("Find neighbours", elem_id="wic-nb-run")
            nb_md = gr.Markdown(elem_id="wic-nb-table")
            code_panel(ctx, word_code.neighbours_code, [model_box, nb_text, nb_position, nb_layer, nb_k],
                       elem_id="wic-nb-code")

        with gr.Accordion("3 · Why this word? Which tokens made the model predict it", open=True,
                          elem_id="wic-section-why"):
            with gr.Row():
                attr_text = gr.Textbox(label="Text with [MASK]", value=WHY_EXAMPLE, lines=2, scale=3,
                                       elem_id="wic-attr-text",
                                       info=f"At most {MAX_ATTR_TOKENS} tokens.")
                target = gr.Textbox(label="Word to explain (blank: the top prediction)", scale=1, elem_id="wic-target")
            with gr.Row():
                mask_number = gr.Slider(1, MAX_MASKS, value=1, step=1, label="Which [MASK]")
                steps = gr.Slider(4, MAX_IG_STEPS, value=DEFAULT_STEPS, step=1, label="Integrated-gradient steps",
                                  elem_id="wic-steps")
            methods = gr.CheckboxGroup(list(METHODS), value=list(METHODS), label="Methods", elem_id="wic-methods")
            attr_run = gr.Button("Explain", variant="primary", elem_id="wic-attr-run")
            attr_md = gr.Markdown(elem_id="wic-attr-info")
            attr_fig = PlotlyFigure(show_label=False, elem_id="wic-attr-plot")
            with gr.Accordion("Numbers (JSON)", open=False):
                attr_json = gr.JSON()
            code_panel(ctx, word_code.attribution_code, [model_box, attr_text, mask_number, target, steps],
                       elem_id="wic-attr-code")
        gr.api(word_in_context, api_name="word_in_context")
        gr.api(corpus_neighbours, api_name="corpus_neighbours")
        gr.api(attribution_api, api_name="attribution", concurrency_limit=2, concurrency_id="attribution")

    private = dict(api_visibility="private")
    sim = (user_errors(compare), [word, sentences, model_box], [sim_fig, sim_md, sim_json])
    refused = common.clear_on_refusal  # a refused request leaves no answer of the text before on screen
    refused(gr.on([run.click, word.submit], *sim, show_progress_on=[sim_md], **private), [sim_fig, sim_md, sim_json],
            note=sim_md)
    tab.select(*sim, show_progress_on=[sim_md], **private)
    readout_box.expand(user_errors(readout), model_box, [readout_fig, readout_md], show_progress_on=[readout_md],
                       **private)
    atlas_inputs = [word, sentences, atlas_layer, clusters, model_box]
    atlas_outputs = [atlas_fig, atlas_md, atlas_layer]
    refused(gr.on([atlas_run.click, corpus_box.expand], user_errors(picture), atlas_inputs, atlas_outputs,
                  show_progress_on=[atlas_md], **private), [atlas_fig, atlas_md], note=atlas_md)
    atlas_layer.release(user_errors(picture), atlas_inputs, atlas_outputs, show_progress_on=[atlas_md],
                        trigger_mode="always_last", **private)
    refused(gr.on([nb_run.click, nb_text.submit], user_errors(find), [nb_text, nb_position, nb_layer, nb_k, model_box],
                  [nb_md, nb_layer], show_progress_on=[nb_md], **private), [nb_md], note=nb_md)
    attr_inputs = [attr_text, mask_number, target, methods, steps, model_box]
    refused(gr.on([attr_run.click, attr_text.submit], user_errors(explain), attr_inputs, [attr_fig, attr_md, attr_json],
                  show_progress_on=[attr_md], concurrency_limit=2, concurrency_id="attribution", **private),
            [attr_fig, attr_md, attr_json], note=attr_md)
    if page is not None:
        _link_fill_mask(page, attr_text)


def _link_fill_mask(page: gr.Blocks, attr_text: gr.Textbox) -> None:
    """Fill-Mask's "Why this word?" button: its sentence goes to section 3 here, the tab opens and explains."""
    boxes = {b.elem_id: b for b in page.blocks.values() if getattr(b, "elem_id", None)}
    source, button = boxes.get("fm-text"), boxes.get("fm-why")
    if source is None or button is None:
        return
    open_js = ("() => { const b = [...document.querySelectorAll('button[role=tab]')].find("
               f"x => x.dataset.tabId === '{TAB_ID}' && x.offsetParent !== null); if (b) b.click();"
               " setTimeout(() => document.getElementById('wic-attr-run')?.click(), 50); return []; }")
    button.click(lambda text: text, source, attr_text, api_visibility="private", queue=False).then(
        None, None, None, js=open_js, api_visibility="private")

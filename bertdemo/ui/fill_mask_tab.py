"""The Fill-Mask tab: top-k bars per [MASK] (one or two models), the filled sentence, target-word scores."""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo import limits
from bertdemo.lazy import LazyModule
from bertdemo.locks import pieces_of
from bertdemo.models import availability
from bertdemo.request_budget import WorkStopped
from bertdemo.snippets import views as snippets
from bertdemo.ui import common
from bertdemo.ui.code_panel import code_panel
from bertdemo.ui.common import answered_line, labelled_choices, progress_callback
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.plotly_figure import PlotlyFigure

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.models.store import ModelStore

fill_mask = LazyModule("bertdemo.explore.fill_mask")
bars = LazyModule("bertdemo.viz.bars")

EXAMPLES = [
    ["Nice to [MASK] you.", "", 5, "meet, see"],
    ["The capital of France is [MASK].", "", 5, "paris"],
    ["I drank a cup of [MASK] this morning.", "", 10, "coffee, tea"],
    ["The [MASK] barked at the [MASK].", "", 5, ""],
    ["She opened the door.", "Then she [MASK] into the room.", 5, "walked"],
    ["I love [MASK] words into pieces.", "", 5, "tokenization, splitting"],
]
NO_SECOND = ""  # the second-model choice meaning "none"
CONCURRENCY = 16  # Fill-Mask requests in progress at once; they wait for the model in turn, batched together
log = logging.getLogger(__name__)


def _second_choices(store: ModelStore) -> list[tuple[str, str]]:
    return [("none", NO_SECOND)] + labelled_choices(store)


def build(ctx: AppContext, model_box: gr.Dropdown) -> gr.Markdown:
    """Lay out the tab inside the current Blocks context; returns its notice box for the model picker.

    ``ctx``: the app context; ``ctx.models`` is the model store, ``ctx.batcher`` the micro-batcher that
    lets concurrent requests share a forward.
    """
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)  # no server path shown
    store = ctx.models

    @user_errors
    def run_fill_mask(text: str, text_pair: str, model: str, top_k: float, targets: str,
                      second_model: str = NO_SECOND, whole_words: bool = False, fast: bool = False,
                      progress=gr.Progress()):
        """The model's top-k words and probabilities for each [MASK] (the API's and the MCP tool's ``fill_mask``).

        Args:
            text: The text with one or more [MASK] (at most 20), whatever the model's own mask token is.
            text_pair: Sentence B (optional): the pair is encoded as [CLS] A [SEP] B [SEP], B as segment 1.
            model: The masked-LM that answers: a hub id, an embedded model or a run's checkpoint.
            top_k: How many words to list for each [MASK], 1 to 50.
            targets: Words whose probability to give at each mask even outside the top-k, comma-separated (optional).
            second_model: Another masked-LM to answer the same text beside the first (optional; empty: none).
            whole_words: True to let a mask stand for a word of 1 to 3 pieces, ranked by pseudo-log-likelihood.
            fast: True for int8 weights on the CPU: sooner, with probabilities a little different.
        """
        names = [availability.requested_name(store, model)]
        if (second_model or "").strip():
            names.append(second_model.strip())
        # the models first: while the app is starting, the store says so ("Starting up…") as it waits
        models = [(requested, store.get(requested, progress=progress_callback(progress))) for requested in names]
        words = fill_mask.parse_targets(targets)
        heavy = [what for what, on in (
            ("whole words", whole_words), ("a second model", len(models) > 1),
            ("target words of several pieces", any(len(pieces_of(models[0][1].tokenizer, w)) > 1 for w in words)),
        ) if on]
        def computing(done: int, planned: int) -> None:  # the page's progress bar while the extra passes run
            progress((done, planned), desc=f"Computing {', '.join(heavy)}", unit="passes")

        # one budget for the whole request (both models): its GFLOP, its deadline, and its client still there
        budget = current_budget()
        budget.restart()  # its time counts from here: the models are in
        budget.on_progress = computing
        with ctx.heavy.take(", ".join(heavy)) if heavy else contextlib.nullcontext():
            results = []
            for requested, loaded in models:
                try:
                    result = fill_mask.predict(loaded, text, text_pair, int(top_k), words,
                                               whole_words=bool(whole_words), fast=bool(fast), batcher=ctx.batcher,
                                               budget=budget)
                except WorkStopped:
                    log.info("Fill-Mask (%s) stopped, its client went away: %d of its %d planned passes had run",
                             ", ".join(heavy), budget.passes, budget.planned_passes)
                    raise
                results.append((requested, loaded, result))
        labels = [availability.answered_by(requested, loaded) for requested, loaded, _ in results]
        figure = bars.fill_mask_figure(results[0][2].masks, labels, [r.masks for _, _, r in results[1:]])
        caveats = dict.fromkeys(c for c in (availability.stand_in_caveat(r, m) for r, m, _ in results) if c)
        filled = "\n\n".join(
            f"**Filled with the top choices:** {bars.filled_markdown(result)}  \n{answered_line(requested, loaded)}"
            + (f"  \n*This model is a {result.note}.*" if result.note else "")
            for requested, loaded, result in results
        ) + "".join(f"  \n*{c}*" for c in caveats) + f"\n\n*Method:* {results[0][2].method}."
        table = bars.targets_markdown([(label, r) for label, (_, _, r) in zip(labels, results)])
        raw = [entry for label, (_, _, r) in zip(labels, results) for entry in bars.predictions_json(r, label)]
        return figure, filled, table, raw

    def refresh_second():
        """New checkpoints join the choices; the value is left alone (an answer that arrives late, on a busy
        server, must not put back what the box held when it was clicked: the learner is typing)."""
        return gr.update(choices=_second_choices(store))

    with gr.Tab("Fill-Mask", id="fill-mask"):
        gr.Markdown(
            "BERT was trained to guess hidden words. Put `[MASK]` where a word is missing; "
            "each mask gets its own ranked guesses (all masks are predicted at once, independently)."
        )
        notice = gr.Markdown(elem_id="fm-notice")
        with gr.Row():
            text = gr.Textbox(label="Text with [MASK]", value=EXAMPLES[0][0], lines=2, max_lines=8, elem_id="fm-text")
            text_pair = gr.Textbox(label="Sentence B (optional, segment 1)", value="", lines=2, max_lines=8)
        with gr.Row():
            top_k = gr.Slider(1, limits.MAX_TOP_K, value=5, step=1, label="Top-k", elem_id="fm-top-k")
            targets = gr.Textbox(
                label="Target words (optional, comma-separated)", value="",
                placeholder="e.g. meet, see",  # an example: "meet, see" alone read as a value typed in
                info=f"Their probability at each mask, even outside the top-k (at most {limits.MAX_TARGETS} "
                     f"words of {limits.MAX_TARGET_CHARS} characters).",
                elem_id="fm-targets",
            )
        with gr.Row():
            second = gr.Dropdown(
                _second_choices(store), value=NO_SECOND, label="Compare with a second model (optional)",
                allow_custom_value=True, elem_id="fm-second",
                info="The same sentence through another masked-LM, e.g. a checkpoint from the Pretrain tab.",
            )
            whole = gr.Checkbox(
                label="Whole words (1–3 pieces, ranked by pseudo-log-likelihood)", value=False, elem_id="fm-whole",
                info="Each mask may stand for a word the tokenizer splits, e.g. token ##ization.",
            )
        fast = gr.Checkbox(
            label="Fast mode (int8 weights: answers sooner, probabilities change slightly)", value=False,
            elem_id="fm-fast",
            info="The model's Linear layers in 8-bit integers (CPU). The top guess almost always stays; "
                 "percentages can move by a few points.",
        )
        button = gr.Button("Predict", variant="primary", elem_id="fm-run")
        gr.Examples(EXAMPLES, inputs=[text, text_pair, top_k, targets])
        filled = gr.Markdown(elem_id="fm-filled")
        plot = PlotlyFigure(label="Predictions", elem_id="fm-plot")
        target_table = gr.Markdown(elem_id="fm-targets-table")
        with gr.Accordion("Raw predictions (JSON)", open=False):
            raw = gr.JSON()
        code = code_panel(ctx, snippets.fill_mask_code, [model_box, text, top_k, text_pair],
                                  elem_id="fm-code")
        gr.Button("Why this word? Which tokens made it predict that →", size="sm", elem_id="fm-why")  # ui.words_tab
        api_button = gr.Button(visible=False)  # /fill_mask: the view's inputs and outputs (no code panel)

    inputs = [text, text_pair, model_box, top_k, targets, second, whole, fast]
    outputs = [plot, filled, target_table, raw]
    # requests computed at once: those that meet in the model share one padded forward pass
    shared = dict(concurrency_limit=CONCURRENCY, concurrency_id="fill_mask")
    api_button.click(run_fill_mask, inputs, outputs, api_name="fill_mask", **shared)
    # the page's event: one round trip, an open code panel refreshed in the same answer
    filled_in = gr.on([button.click, text.submit, targets.submit], *code.fold(run_fill_mask, inputs, outputs),
                      api_visibility="private", **shared)
    common.clear_on_refusal(filled_in, outputs, note=filled)  # no earlier answer under the new sentence
    second.focus(refresh_second, None, second, api_visibility="private")  # new checkpoints join
    return notice

"""The Masking & NSP tab: the pretraining engine's masking on the learner's sentence, epoch after
epoch and over many draws; next-sentence pairs as pretraining builds them, and P(IsNext).

Each main action is a named endpoint returning one JSON value (on a hidden button, for API
callers); the page's own button answers in one event with that JSON and everything drawn from it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo import limits
from bertdemo.lazy import LazyModule
from bertdemo.snippets import views as snippets
from bertdemo.ui import common, lanes
from bertdemo.ui.code_panel import code_panel, engine_tokenizer_reference
from bertdemo.ui.plotly_figure import PlotlyFigure

if TYPE_CHECKING:
    from bertdemo.context import AppContext

masking_lab = LazyModule("bertdemo.explore.masking_lab")
nsp = LazyModule("bertdemo.explore.nsp")
draw = LazyModule("bertdemo.viz.masking")

DEFAULT_TEXT = "The children were playing football in the park until it started raining heavily."
NSP_A, NSP_B = "She opened the fridge.", "There was nothing left but an old lemon."


def _settings(p, m, r, seed, whole_word, fixed_count) -> masking_lab.MaskSettings:
    if seed is None:
        raise ValueError("Enter a seed (a whole number >= 0).")
    return masking_lab.MaskSettings(float(p), float(m), float(r), int(seed), bool(whole_word), bool(fixed_count))


def _wire(button: gr.Button, compute, inputs, raw: gr.JSON, render, outputs, api_name: str,
          user_errors=common.user_errors, lane: dict | None = None) -> Callable[..., tuple]:
    """button -> compute -> (its JSON, *render(result)) into ``[raw, *outputs]``, in one event; the named
    endpoint ``api_name`` (a hidden button) returns the JSON alone. ``lane``: the queue lane of both
    (:mod:`bertdemo.ui.lanes`; gradio's own lane per event when None).

    Returns the page's handler, for a further control that shows the same (with its own inputs' values).
    """
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]

    @user_errors
    @functools.wraps(compute)  # the API shows compute's parameter names
    def api(*args):
        return compute(*args).to_json()

    @user_errors
    def page(*args) -> tuple:
        result = compute(*args)
        drawn = render(result)
        return (result.to_json(), *(drawn if isinstance(drawn, tuple) else (drawn,)))

    gr.Button(visible=False).click(api, inputs, raw, api_name=api_name, **(lane or {}))
    shown = button.click(page, inputs, [raw, *outputs], api_visibility="private", **(lane or {}))
    notes = [box for box in outputs if isinstance(box, (gr.Markdown, gr.HTML))]
    common.clear_on_refusal(shown, [raw, *outputs], note=notes[0] if notes else None)
    return page


def build(ctx: AppContext, model_box: gr.Dropdown) -> None:
    """Lay out the tab inside the current Blocks context."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)  # no server path shown
    store = ctx.models

    def mask_sample(text, mlm_probability, mask_replace_prob, random_replace_prob, seed, whole_word, fixed_count):
        settings = _settings(mlm_probability, mask_replace_prob, random_replace_prob, seed, whole_word, fixed_count)
        return masking_lab.mask_sample(text, settings)

    def mask_epochs(text, mlm_probability, mask_replace_prob, random_replace_prob, seed, whole_word, fixed_count,
                    epochs, static_copies):
        settings = _settings(mlm_probability, mask_replace_prob, random_replace_prob, seed, whole_word, fixed_count)
        return masking_lab.compare_epochs(text, settings, epochs, static_copies)

    def mask_stats(text, mlm_probability, mask_replace_prob, random_replace_prob, seed, whole_word, fixed_count,
                   draws):
        settings = _settings(mlm_probability, mask_replace_prob, random_replace_prob, seed, whole_word, fixed_count)
        return masking_lab.measure_rates(text, settings, draws)

    def build_pairs(text: str = "", seq_len: int = 64, n_pairs: int = 4, seed: int = 1):
        """NSP pairs from the learner's text (or the embedded corpus when empty), as pretraining makes them."""
        return nsp.build_pairs(text, seq_len, n_pairs, seed)

    def nsp_predict(sentence_a, sentence_b, model):
        loaded = store.get(model)
        return nsp.predict_is_next(loaded, sentence_a, sentence_b)

    with gr.Tab("Masking & NSP", id="masking") as tab:
        gr.Markdown(
            "How BERT's training data is made, by experiment. Your sentence is masked by **the pretraining "
            "engine's own code** (the function the Pretrain tab trains with), with its tokenizer: some tokens "
            "are *chosen* for prediction; of those, most become `[MASK]`, some a random token, some stay."
        )
        text = gr.Textbox(label="Sentence", value=DEFAULT_TEXT, lines=2, elem_id="ml-text")
        with gr.Row():
            p = gr.Slider(0.01, 0.99, value=0.15, step=0.01, label="mlm_probability",
                          info="Fraction of the tokens chosen for prediction.")
            m = gr.Slider(0.0, 1.0, value=0.8, step=0.05, label="mask_replace_prob",
                          info="Of the chosen: replaced by [MASK].")
            r = gr.Slider(0.0, 1.0, value=0.1, step=0.05, label="random_replace_prob",
                          info="Of the chosen: a random token (the rest stay).")
        with gr.Row(equal_height=False):
            seed = gr.Number(value=2, precision=0, minimum=0, label="Seed", elem_id="ml-seed", min_width=120,
                             info="The same seed, the same mask.")
            with gr.Column(scale=2, min_width=220):
                whole_word = gr.Checkbox(label="Whole-word masking", info="All ## pieces of a word chosen together.",
                                         elem_id="ml-whole-word")
                fixed_count = gr.Checkbox(value=True, label="Fixed count (the engine's default)",
                                          info="Exactly round(p·(T−2)) chosen; off: a coin flip per token.")
        settings = [text, p, m, r, seed, whole_word, fixed_count]
        run_button = gr.Button("Mask it", variant="primary", elem_id="ml-run")
        chips = gr.HTML(elem_id="ml-chips")
        with gr.Accordion("The tensors the model gets", open=True):
            tensors = gr.HTML(elem_id="ml-tensors")
        with gr.Accordion("As JSON (the /mask_sample answer)", open=False):
            sample_raw = gr.JSON()

        gr.Markdown(
            "## Next epoch: dynamic vs static masking\n"
            "The original BERT wrote each sequence **N times with N fixed masks** (static masking), so over "
            "many epochs the model saw the same N masks again and again. This engine draws a **fresh mask "
            "every time** a sequence comes round (dynamic masking, as RoBERTa does)."
        )
        with gr.Row():
            epochs = gr.Slider(1, limits.MAX_EPOCHS, value=12, step=1, label="Epochs shown", elem_id="ml-epochs")
            copies = gr.Slider(1, limits.MAX_STATIC_COPIES, value=10, step=1, label="Static copies N")
        with gr.Row():
            compare_button = gr.Button("Show epochs", elem_id="ml-compare")
            next_button = gr.Button("Next epoch ▶", variant="primary", elem_id="ml-next")
        epochs_view = gr.HTML(elem_id="ml-epochs-view")
        with gr.Accordion("As JSON (the /mask_epochs answer)", open=False):
            epochs_raw = gr.JSON()

        gr.Markdown("## Rates over many draws\nThe engine's masking of your sentence, drawn many times at once.")
        with gr.Row():
            draws = gr.Slider(10, limits.MAX_DRAWS, value=2000, step=10, label="Draws")
            stats_button = gr.Button("Measure", elem_id="ml-stats")
        stats_plot = PlotlyFigure(elem_id="ml-stats-plot")
        stats_table = gr.Markdown(elem_id="ml-stats-table")
        code = code_panel(ctx, lambda *v: snippets.masking_code(  # the engine's tokenizer, whatever the model box says
                       *v, tokenizer=engine_tokenizer_reference(ctx.models, ctx.settings.is_public)),
                   [text, p, m, r, draws, seed, fixed_count, whole_word], elem_id="ml-code",
                   uses_model=False)
        with gr.Accordion("As JSON (the /mask_stats answer)", open=False):
            stats_raw = gr.JSON()

        gr.Markdown(
            "## Next-sentence prediction (NSP)\n"
            "Pairs built as BERT built them: the text is cut into **whole sentences**; A is one or more sentences "
            "of a document, B the sentences that follow it (IsNext) or, half the time, sentences of another "
            "document (NotNext) — `[CLS] A [SEP] B [SEP]`, never cut inside a sentence or a word. Leave the text "
            "empty for the embedded Wikipedia summaries; separate documents with a blank line."
        )
        nsp_text = gr.Textbox(label="Text (optional)", lines=3, placeholder="Empty: the embedded corpus",
                              elem_id="nsp-text")
        with gr.Row():
            seq_len = gr.Slider(limits.MIN_SEQ_LEN, limits.MAX_SEQ_LEN, value=64, step=1, label="Longest pair T")
            n_pairs = gr.Slider(2, limits.MAX_PAIRS, value=4, step=1, label="Pairs")
            nsp_seed = gr.Number(value=1, precision=0, minimum=0, label="Seed of the pairs")
        pairs_button = gr.Button("Build pairs", elem_id="nsp-build")
        pairs_view = gr.HTML(elem_id="nsp-pairs")
        with gr.Accordion("As JSON (the /nsp_pairs answer)", open=False):
            pairs_raw = gr.JSON()
        gr.Markdown("**Your own pair** — P(IsNext) from the NSP head of the model chosen at the top of the page. "
                    "It needs a checkpoint **trained with NSP**: bert-base-uncased (from the model hub), or your "
                    "own: Pretrain tab → tick *Next-sentence prediction (NSP) too* → Start; once it has saved a "
                    "checkpoint, pick its `run:…` entry in the Model box. A masked-LM alone has no NSP head.")
        with gr.Row():
            sentence_a = gr.Textbox(label="Sentence A", value=NSP_A, elem_id="nsp-a")
            sentence_b = gr.Textbox(label="Sentence B", value=NSP_B, elem_id="nsp-b")
        predict_button = gr.Button("P(IsNext)", elem_id="nsp-run")
        nsp_result = gr.Markdown(elem_id="nsp-result")
        with gr.Accordion("As JSON (the /nsp_predict answer)", open=False):
            nsp_raw = gr.JSON()

    # Inside the tab: each _wire makes a hidden button. Directly under gr.Tabs (after this tab) such blocks
    # shift the next tab's index in Gradio's frontend (its `order` counts every child of the Tabs, the tab
    # list only the tabs), and the Pretrain tab registered itself a second time when first opened.
    with tab:
        _wire(run_button, mask_sample, settings, sample_raw,
              lambda s: (draw.render_sample(s), draw.render_tensors(s)), [chips, tensors], "mask_sample", lane=lanes.LIGHT,
              user_errors=user_errors)
        show_epochs = _wire(compare_button, mask_epochs, [*settings, epochs, copies], epochs_raw,
                            lambda s: draw.render_epochs(s), epochs_view, "mask_epochs", user_errors=user_errors,
                            lane=lanes.LIGHT)

        def next_epoch(*values) -> tuple:
            """One more epoch, shown in the same event: the dynamic scheme draws a fresh mask, the static
            one reads its next copy."""
            *chosen, shown, static_copies = values
            more = min(int(shown) + 1, limits.MAX_EPOCHS)
            return (*show_epochs(*chosen, more, static_copies), more)

        common.clear_on_refusal(next_button.click(next_epoch, [*settings, epochs, copies], [epochs_raw, epochs_view, epochs],
                                                  api_visibility="private", **lanes.LIGHT),
                                [epochs_raw, epochs_view], note=epochs_view)
        _wire(stats_button, mask_stats, [*settings, draws], stats_raw,
              lambda s: (draw.rates_figure(s), draw.rates_markdown(s)), [stats_plot, stats_table], "mask_stats",
              user_errors=user_errors)
        code.refresh_on([stats_button.click])  # /mask_stats is an API endpoint: the open panel's refresh beside it
        _wire(pairs_button, build_pairs, [nsp_text, seq_len, n_pairs, nsp_seed], pairs_raw,
              lambda s: draw.render_pairs(s), pairs_view, "nsp_pairs", user_errors=user_errors, lane=lanes.LIGHT)
        _wire(predict_button, nsp_predict, [sentence_a, sentence_b, model_box], nsp_raw,
              lambda s: draw.nsp_markdown(s), nsp_result, "nsp_predict", user_errors=user_errors)

"""The Pretrain tab's sections on what pretraining made: masked LM beside left-to-right LM, what the heads
became, and what a run cost next to BERT-base.

Layout and wiring only; the logic lives in :mod:`bertdemo.explore.twins`, :mod:`bertdemo.explore.head_roles`
and :mod:`bertdemo.pretrain.cost`, the drawing in :mod:`bertdemo.viz.twins` (all imported lazily: the
page is built before PyTorch loads). Every view names the model that answered.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from bertdemo import limits
from bertdemo.explore.twin_choices import checkpoint_step, default_pair, pair_choices
from bertdemo.lazy import LazyModule
from bertdemo.models import twin_curve, twins
from bertdemo.models.embedded import EMBEDDED_ENCODER_NAME, EMBEDDED_MLM_NAME
from bertdemo.pretrain import cost
from bertdemo.pretrain.config import TrainConfig
from bertdemo.ui import common, table5_section
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.viz import twin_curve as curve_drawing  # torch-free: drawn as the page is built

twins_engine = LazyModule("bertdemo.explore.twins")
heads_engine = LazyModule("bertdemo.explore.head_roles")
drawing = LazyModule("bertdemo.viz.twins")
pretrain_model = LazyModule("bertdemo.pretrain.model")

NO_LTR = ("**No left-to-right model is available on this server yet.** The comparison needs one: a run "
          "pretrained with the left-to-right objective (the same model with a causal mask) appears in the "
          "right-hand picker once it has a checkpoint.")
TWINS_NOTE = (
    "BERT's paper (§5.1, Table 5) credits *bidirectional* pretraining: a masked LM reads both sides of a gap, a "
    "left-to-right LM (GPT-style) only the words before it. Pick one of each (same tokenizer) and measure "
    "where the words after the gap pay.")
HEADS_NOTE = (
    "Clark et al. (2019), *What does BERT look at?*: many heads do one simple thing, such as attending to the "
    "previous word, the next word, [SEP] or [CLS]. Each head of the model is labelled here by what it measurably "
    "does on a fixed set of sentences, with the share of its attention that earns the label. A run on the default "
    "start has previous- and next-word heads from step 0 (planted at initialisation); a run with the plain random "
    "start shows whether they grow on their own.")
CURVE_NOTE = (
    "**Where bidirectional pays.** The app ships three twins of one shape ({shape}; one recipe, one seed, the "
    "same data, {tokens} tokens each; earlier builds of other recipes, a second seed among them, show the "
    "same: the twins' card): "
    "a masked LM and two left-to-right LMs. Beside the first left-to-right twin, which "
    "predicts the words its masking rule picks on every batch, as the masked one does, only what each prediction may read differs (the "
    "*controlled* pair); beside the second, which predicts every next word as GPT does, it is the paper's setting. "
    "Each checkpoint was measured on the same held-out words, each asked alone, and on sentences whose words after "
    "the blank decide it. The paper's Figure 5 shows the masked LM converging a little slower, then leading.")


def _plot(spec: dict) -> str:
    return json.dumps(spec, separators=(",", ":"))


TEXT_START_LABEL = "Ask each sentence as a text that starts inside a training block: [CLS] [SEP] sentence [SEP]"
TEXT_START_NOTE = "*Each sentence asked after a `[SEP]`, `[CLS] [SEP] sentence [SEP]`, as a text starts inside a training block.*"


def text_start_info(blocks_began: str) -> str:
    """What the box changes, said for the shipped twins' packing (``blocks_began``, their record's)."""
    if blocks_began == "text":
        return ("The shipped twins' training blocks began at a text's start: a block's first text right after [CLS], "
                "the next ones after [SEP]. Unticked, a sentence is asked alone, [CLS] sentence [SEP], as a pipeline "
                "asks it and as a block's first text reads. For the cloze and your sentence.")
    return ("The shipped twins' training cut one stream of texts, joined by [SEP], into blocks anywhere, so a text "
            "starts after [SEP], almost never right after [CLS]. Unticked, a sentence is asked alone, [CLS] sentence "
            "[SEP], as a pipeline asks it. For the cloze and your sentence.")


SHIPPED_CLOZE_NOTE = ("*These are the shipped twins' fp16 weights, ranked now. The curve's record above was measured on "
                      "each run's fp32 checkpoint before that export: a median there can differ from this one by a "
                      "rank or two.*")


def build(ctx: Any, runs: Any, store: Any, poll: Any) -> None:
    """Lay out the three sections inside the current Blocks context (the Pretrain tab) and wire their events.
    ``runs``: the pretraining service (run choices, checkpoints, run histories); ``store``: the model store;
    ``poll``: the tab's :class:`~bertdemo.ui.tab_poll.TabPoll` (a live Table 5 cell is one of its parts)."""
    user_errors = common.user_errors(public=ctx.settings.is_public)

    def choices() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        offered = [(label, name) for label, name in store.choices() if name != EMBEDDED_ENCODER_NAME]
        return pair_choices(offered, runs.resolve_run_reference)

    mlm_choices, ltr_choices = choices()
    mlm_default, ltr_default = default_pair(mlm_choices, ltr_choices, EMBEDDED_MLM_NAME)
    run_list = runs.run_choices()
    newest = run_list[0][1] if run_list else None  # newest first
    curve = twin_curve.read_curve()
    with gr.Accordion("The B in BERT: masked LM beside left-to-right LM", open=False, elem_id="pt-twins"):
        gr.Markdown(TWINS_NOTE)
        if curve is not None:  # what the shipped twins measured along their training (no torch: read from a file)
            gr.Markdown(CURVE_NOTE.format(
                tokens=twin_curve.millions(curve.final_tokens), shape=twins.shape_text()), elem_id="pt-twins-curve-note")
            PlotlyFigure(_plot(curve_drawing.curve_spec(curve)), label="Where bidirectional pays: the shipped twins along "
                         "their training", elem_id="pt-twins-curve-plot", lazy=True)
            close_up = curve_drawing.stage_spec(curve)
            if close_up is not None:  # the later stages' points, a sliver at the log curve's right edge, close up
                stages = "stage" if len(twin_curve.later_stages(curve)) == 1 else "stages"
                PlotlyFigure(_plot(close_up), label=f"The later {stages} close up", elem_id="pt-twins-stage-plot",
                             lazy=True)
            gr.Markdown(curve_drawing.curve_markdown(curve), elem_id="pt-twins-curve")
        with gr.Row():
            mlm_pick = gr.Dropdown(mlm_choices, value=mlm_default, label="Masked LM (reads both sides)",
                                   elem_id="pt-twins-mlm", allow_custom_value=True, scale=1)
            ltr_pick = gr.Dropdown(ltr_choices, value=ltr_default,
                                   label="Left-to-right LM (reads the words before)", elem_id="pt-twins-ltr",
                                   allow_custom_value=True, scale=1)
        availability = gr.Markdown("" if ltr_choices else NO_LTR, elem_id="pt-twins-available")
        with gr.Row():
            blocks = gr.Slider(1, 64, value=16, step=1, label="Held-out blocks to read (128 tokens each)", scale=3)
            heldout_button = gr.Button("Compare on held-out words", elem_id="pt-twins-heldout-run", scale=1)
        heldout_plot = PlotlyFigure(label="Held-out loss by position in the sentence", elem_id="pt-twins-heldout-plot")
        heldout_text = gr.Markdown(elem_id="pt-twins-heldout")
        text_start = gr.Checkbox(False, label=TEXT_START_LABEL, info=text_start_info(twin_curve.blocks_began(curve)),
                                 elem_id="pt-twins-text-start")
        cloze_button = gr.Button("Rank the right word on the right-context cloze set", elem_id="pt-twins-cloze-run")
        cloze_text = gr.Markdown(elem_id="pt-twins-cloze")
        with gr.Row():
            sentence = gr.Textbox("The [MASK] barked at the mailman.", label="Your sentence with one [MASK]", scale=3)
            expected = gr.Textbox("dog", label="The word you expect (optional)", elem_id="pt-twins-expected", scale=1,
                                  min_width=140, max_length=limits.MAX_EXPECTED_CHARS,
                                  info="Each model's rank of it at the blank.")
            top_k = gr.Slider(1, 20, value=8, step=1, label="Guesses", scale=2, min_width=180)
            side_button = gr.Button("Both models fill it", elem_id="pt-twins-side-run", scale=1)
        side_plot = PlotlyFigure(label="Top guesses, side by side", elem_id="pt-twins-side-plot")
        side_text = gr.Markdown(elem_id="pt-twins-side")
    table5_section.build(ctx, poll)  # Table 5 in miniature: both twins fine-tuned, over seeds, beside the paper's rows
    with gr.Accordion("What the heads became", open=False, elem_id="pt-heads"):
        gr.Markdown(HEADS_NOTE)
        with gr.Row():
            heads_model = gr.Dropdown([c for pair in choices() for c in pair], value=mlm_default, label="Model",
                                      elem_id="pt-heads-model", allow_custom_value=True, scale=3)
            heads_button = gr.Button("Label its heads", elem_id="pt-heads-run", scale=1)
        heads_plot = PlotlyFigure(label="What each head attends to", elem_id="pt-heads-plot")
        heads_text = gr.Markdown(elem_id="pt-heads-out")
        with gr.Row():
            heads_run = gr.Dropdown(run_list, value=newest, label="Run whose heads to label", elem_id="pt-heads-run-pick",
                                    allow_custom_value=True, scale=3)
            steps_button = gr.Button("Over its checkpoints", elem_id="pt-heads-steps-run", scale=1)
        steps_text = gr.Markdown(elem_id="pt-heads-steps")
    with gr.Accordion("What it cost: a run beside BERT-base", open=False, elem_id="pt-cost"):
        with gr.Row():
            cost_run = gr.Dropdown(run_list, value=newest, label="Run to count", elem_id="pt-cost-run", allow_custom_value=True,
                                   scale=3)
            cost_button = gr.Button("Count its tokens and FLOPs", elem_id="pt-cost-go", scale=1)
        cost_text = gr.Markdown(drawing_free_bert_base(), elem_id="pt-cost-out")

    def pair(mlm_model: str, ltr_model: str):
        if not ltr_model:
            raise ValueError("Pick a left-to-right model: " + NO_LTR.replace("**", ""))
        if not mlm_model:
            raise ValueError("Pick a masked LM.")
        mlm, ltr = store.get(mlm_model), store.get(ltr_model)
        current_budget().restart()  # loading has its own rules
        twins = twins_engine.twin_of(mlm), twins_engine.twin_of(ltr)
        twins_engine.check_pair(*twins)
        return twins

    @user_errors
    def twin_heldout(mlm_model: str, ltr_model: str, blocks: float):
        mlm, ltr = pair(mlm_model, ltr_model)
        result, corpus_note = twins_engine.heldout_for(mlm, ltr, ctx.settings.cache_dir, int(blocks), current_budget())
        return _plot(drawing.heldout_spec(result)), drawing.heldout_markdown(result, corpus_note)

    @user_errors
    def twin_cloze(mlm_model: str, ltr_model: str, text_start: bool = False) -> str:
        mlm, ltr = pair(mlm_model, ltr_model)
        ranks = twins_engine.cloze_ranks([mlm, ltr], budget=current_budget(), text_start=bool(text_start))
        text = (TEXT_START_NOTE + "\n\n" if text_start else "") + drawing.cloze_markdown(ranks)
        return text + ("\n\n" + SHIPPED_CLOZE_NOTE if twins_engine.is_shipped_pair(mlm, ltr) and not text_start else "")

    @user_errors
    def twin_side_by_side(mlm_model: str, ltr_model: str, text: str, top_k: float, text_start: bool = False,
                          expected: str = ""):
        mlm, ltr = pair(mlm_model, ltr_model)
        guesses = twins_engine.side_by_side([mlm, ltr], text, int(top_k), text_start=bool(text_start),
                                            expected=str(expected or ""))
        return _plot(drawing.side_by_side_spec(guesses)), drawing.side_by_side_markdown(guesses)

    @user_errors
    def head_roles(model: str):
        if not model:
            raise ValueError("Pick a model.")
        loaded = store.get(model)
        current_budget().restart()
        roles = heads_engine.head_roles(loaded.model, loaded.tokenizer, loaded.name, budget=current_budget())
        return _plot(drawing.head_roles_spec(roles)), drawing.head_roles_markdown(roles)

    @user_errors
    def head_roles_over_checkpoints(run_id: str) -> str:
        if not run_id:
            raise ValueError("Pick a run first.")
        folders = runs.checkpoint_folders(run_id)
        by_step = {checkpoint_step(folder): folder for folder in folders}
        measured = []
        for step in heads_engine.checkpoints_to_measure(list(by_step)):
            loaded = store.get(runs.run_reference(by_step[step]))
            measured.append((step, loaded.model, loaded.tokenizer))
        current_budget().restart()
        planted = pretrain_model.starts_on_neighbours(TrainConfig.from_flat(**runs.load_run(run_id).settings))
        return drawing.roles_over_steps_markdown(heads_engine.roles_over_checkpoints(run_id, measured, current_budget()),
                                                 planted)

    @user_errors
    def run_cost(run_id: str) -> str:
        if not run_id:
            raise ValueError("Pick a run first.")
        snap = runs.snapshot()
        if snap is None or snap.run_id != run_id:
            snap = runs.load_run(run_id).snapshot
        tokens = snap.tokens[-1] if snap.tokens else 0
        steps = snap.steps[-1] if snap.steps else snap.step
        spent = cost.run_cost(f"run {run_id}", snap.param_count, tokens, steps, snap.wall_s[-1] if snap.wall_s else 0.0)
        return drawing.cost_markdown(spent, cost.bert_base_cost(), cost.BERT_BASE_HARDWARE)

    def refresh_pairs():
        mlm, ltr = choices()
        return (gr.update(choices=mlm), gr.update(choices=ltr), "" if ltr else NO_LTR,
                gr.update(choices=mlm + ltr))

    for pick in (mlm_pick, ltr_pick, heads_model):  # checkpoints made after the page was built are offered
        pick.focus(refresh_pairs, None, [mlm_pick, ltr_pick, availability, heads_model], api_visibility="private")
    for pick in (heads_run, cost_run):
        pick.focus(lambda: gr.update(choices=runs.run_choices()), None, pick, api_visibility="private")
    # each answer's page: a refused request leaves no answer of the models or sentence before on screen
    for event, outputs in (
        (heldout_button.click(twin_heldout, [mlm_pick, ltr_pick, blocks], [heldout_plot, heldout_text],
                              api_name="twin_heldout"), [heldout_plot, heldout_text]),
        (cloze_button.click(twin_cloze, [mlm_pick, ltr_pick, text_start], cloze_text, api_name="twin_cloze"),
         [cloze_text]),
        (side_button.click(twin_side_by_side, [mlm_pick, ltr_pick, sentence, top_k, text_start, expected],
                           [side_plot, side_text],
                           api_name="twin_side_by_side"), [side_plot, side_text]),
        (heads_button.click(head_roles, heads_model, [heads_plot, heads_text], api_name="head_roles"),
         [heads_plot, heads_text]),
        (steps_button.click(head_roles_over_checkpoints, heads_run, steps_text, api_name="head_roles_over_checkpoints"),
         [steps_text]),
        (cost_button.click(run_cost, cost_run, cost_text, api_name="run_cost"), [cost_text]),
    ):
        common.clear_on_refusal(event, outputs, note=outputs[-1])


def drawing_free_bert_base() -> str:
    """BERT-base's pretraining cost as the section opens (before a run is picked): the arithmetic, torch-free."""
    base = cost.bert_base_cost()
    lines = "\n".join(f"- {x}" for x in base.tokens_lines)
    return (f"**{base.label}** ({cost.BERT_BASE_HARDWARE})\n{lines}\n- {base.flops_line}\n\n"
            "Pick a run to set its tokens and FLOPs beside these.")

"""The Fine-tune tab's "Find the names" panel: a label for every word. Start a names run with the tab's settings,
follow its F1 against the landmarks, read the test split's errors, tag a sentence word by word with a finished
run (``/tag``), and probe which layer knows names beside the sentence-level probes.

Wiring only: runs through ``ctx.finetune_runs`` (task "names"), tagging and probes through ``ctx.finetune``,
drawing through :mod:`bertdemo.viz.names`.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import gradio as gr

from bertdemo.corpus.names import RULE, RULE_PRECISION
from bertdemo.finetune.own_run import is_own
from bertdemo.ui import run_starts
from bertdemo.ui.common import clear_on_refusal, visitor_of
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.viz import names as viz

MAX_TAG_CHARS = 1000
EXAMPLE = "Yesterday marie curie flew from warsaw to Paris with her sister Bronisława."
RANDOM_REFERENCE = ""  # the bench's measured random-weight control, quoted beside a run's test scores (docs/benchmarks.md)
INTRO = (
    "**One vector per word, one label per word.** A sentence-level task reads the [CLS] vector; here every word's "
    "own vector (its first WordPiece) goes through a new Linear layer that says NAME or O "
    "(`BertForTokenClassification`; the other pieces of a word get the label -100 and are left out of the loss). "
    "The labels come free from the cased Wikipedia summaries: " + RULE + " Checked by hand on "
    f"{RULE_PRECISION[1]} words the rule calls names, **{RULE_PRECISION[0] / RULE_PRECISION[1]:.0%}** are names "
    f"({RULE_PRECISION[0]} of {RULE_PRECISION[1]}; the misses are symbols such as °C, titles such as President, a "
    "compass direction, a sentence start the splitter missed). The model is uncased: it never sees the capital, so "
    "it has to tell a name from its context. Validation and test sentences come from summaries no pretraining "
    "corpus here reads; the landmarks are every word O (F1 0) and per-word memory (the tag each word had most "
    "often in training, unseen words O). Start a run with the settings above (the same starts, seed and budget)."
)


def plot_data(spec: dict) -> str:
    return json.dumps(spec, separators=(",", ":"))


def build(ctx: Any, model_box: gr.Dropdown, owner: gr.Textbox, form: list, form_names: list[str],
          status: gr.Markdown, status_text: Any, user_errors: Any, poll: Any) -> None:
    """Lay out the panel inside the Fine-tune tab and wire it (``form``/``form_names``: the tab's settings and
    their names; ``status``/``status_text``: the tab's status line; ``user_errors``: the tab's error wrapper;
    ``poll``: the tab's :class:`~bertdemo.ui.tab_poll.TabPoll`, which draws the names run's curve and report)."""
    runs, lab, store = ctx.finetune_runs, ctx.finetune, ctx.models

    def names_runs() -> list[tuple[str, str]]:
        return runs.choices(task="names")

    def latest_names(saved: bool = False):
        """The live (or latest) names run; with ``saved``, else the newest saved names run (read at page load)."""
        snap = runs.snapshot()
        if snap is not None and snap.task == "names":
            return snap
        for run_id in runs.ids() if saved else ():
            earlier = runs.load(run_id)
            if earlier.task == "names":
                return earlier
        return None

    def curve_of(snap) -> str:
        return plot_data(viz.curve_spec(snap)) if snap is not None and snap.eval_steps else plot_data(
            {"data": [], "layout": {"height": 60, "xaxis": {"visible": False}, "yaxis": {"visible": False},
                                    "annotations": [{"text": "No names run yet", "showarrow": False}]}})

    def report_of(snap) -> str:
        return viz.report_markdown(snap, RANDOM_REFERENCE) if snap is not None else ""

    with gr.Accordion("Find the names: a label for every word", open=False, elem_id="ft-names-box"):
        gr.Markdown(INTRO)
        start = gr.Button("Fine-tune on Find the names", variant="primary", elem_id="ft-names-start")
        # drawn when the tab is shown (the newest names run, live or saved), then as a live names run goes
        curve = PlotlyFigure(label="Find the names: F1 as the run goes", elem_id="ft-names-curve")
        report = gr.Markdown(elem_id="ft-names-report")
        with gr.Row():
            text = gr.Textbox(EXAMPLE, label="Sentence (no capitals needed: the model never sees them)", scale=4,
                              max_length=MAX_TAG_CHARS, elem_id="ft-tag-text")
            model = gr.Dropdown(names_runs(), label="Fine-tuned names model", scale=2, allow_custom_value=True,
                                elem_id="ft-tag-model")
            tag_btn = gr.Button("Tag the words", scale=1, elem_id="ft-tag")
        tagged = gr.HTML(elem_id="ft-tag-out")
        gr.Markdown("**Which layer knows names?** A linear probe reads each frozen layer's vector of every word (its "
                    "first piece) and says NAME or O; drawn beside the sentence-level probes of the same model (the "
                    "model box at the top) and the random-weight control of its shape.")
        probe_btn = gr.Button("Probe every layer per word", elem_id="ft-names-probe")
        layers = PlotlyFigure(label="Which layer knows what", elem_id="ft-names-layers")
        layers_md = gr.Markdown(elem_id="ft-names-layers-md")
        seen = gr.State(None)

    @user_errors
    def start_names(request: gr.Request, token: str, *values):
        token, visitor = token or secrets.token_urlsafe(24), visitor_of(request)
        settings = {**dict(zip(form_names, values)), "task": "names"}
        outcome = ctx.runs.start_or_queue(token, visitor, f"{runs.label} run",
                                          lambda: runs.start(settings, token, visitor=visitor),
                                          recipe={"kind": runs.name, "settings": settings},
                                          check=lambda: runs.start(settings, token, visitor=visitor, check_only=True))
        return run_starts.answer(outcome, status_text), token

    def check_model(name: str, owner_token: str = "") -> tuple[str, str]:
        if not isinstance(name, str) or not name:
            raise ValueError("Pick a fine-tuned names model (ft:<run id>) from the list.")
        name = name if name.startswith("ft:") else f"ft:{name}"
        folder = runs.model(name, owner_token or "")
        if is_own(name[3:]):  # a run on the learner's own word labels (a sentence-label run is refused by lab.tag)
            return name, folder
        if runs.load(name[3:]).task != "names":
            raise ValueError(f"{name[:60]} was fine-tuned on sentence topics, not names: pick a names run.")
        return name, folder

    def tag_words(text: str, name: str, owner_token: str = "") -> tuple[str, list]:
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TAG_CHARS:
            raise ValueError(f"The sentence must have 1 to {MAX_TAG_CHARS:,} characters.")
        name, folder = check_model(name, owner_token)
        return name, lab.tag(folder, text)

    @user_errors
    def tag_from_page(text: str, name: str) -> str:
        name, words = tag_words(text, name)
        return viz.tagged_html(words, name)

    @user_errors
    def tag(text: str, model: str, owner_token: str = "") -> dict:
        """Each word of `text` with the label a fine-tuned word tagger gives it and that label's probability
        (`model`: ft:<run id> of a run with task "names" (NAME or O), or of a run with task "own" on word labels
        (its own tags); `owner_token`: the token that started an own-data run, on a public server)."""
        name, words = tag_words(text, model, owner_token)
        return {"model": name, "words": [{"word": w, "label": label, "probability": p} for w, label, p in words]}

    @user_errors
    def probe_page(model_name: str, progress=gr.Progress()):
        loaded = store.get(model_name)
        probe = lab.word_probes(loaded, progress=lambda f, m: progress(f, desc=m), budget=current_budget())
        others = lab.cached_layer_probes(loaded)
        return (plot_data(viz.layers_spec(probe, others)),
                viz.layers_markdown(probe, loaded.name, [t for t in others if t != "names"]))

    def names_part(request: gr.Request, seen_key):
        """The newest names run when the tab is first shown (``seen_key`` None), live or saved; then the live
        names run as it goes (its liveness is the tab's run's: a names run is the tab's fine-tuning run)."""
        live = latest_names()
        snap = live if live is not None or seen_key is not None else latest_names(saved=True)
        key = ("none",) if snap is None else (snap.run_id, snap.status, len(snap.eval_steps),
                                              bool(snap.names.get("test")), snap.checkpoint)
        if key == seen_key or (live is None and seen_key is not None):  # nothing new, or no live names run
            return (gr.skip(), gr.skip(), gr.skip(), seen_key), False
        ended = live is not None and not live.active and live.checkpoint
        pick = gr.update(choices=names_runs(), value=f"{live.run_id}") if ended else gr.skip()
        return (curve_of(snap), report_of(snap), pick, key), False

    poll.after(start.click(start_names, [owner, *form], [status, owner], api_visibility="private"), writes=[status])
    poll.add(names_part, [seen], [curve, report, model, seen])
    clear_on_refusal(tag_btn.click(tag_from_page, [text, model], tagged, api_name="tag_from_page",
                                   api_visibility="private"), [tagged], note=tagged)
    model.focus(lambda: gr.update(choices=names_runs()), None, model, api_visibility="private")
    clear_on_refusal(probe_btn.click(probe_page, model_box, [layers, layers_md], api_name="probe_words_from_page",
                                     api_visibility="private", concurrency_limit=1, concurrency_id="ft-heavy"),
                     [layers, layers_md], note=layers_md)
    gr.api(tag, api_name="tag")

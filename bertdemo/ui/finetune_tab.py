"""The Fine-tune tab: what pretraining buys. Fine-tune a BERT on the topic task (a Wikipedia summary's first
sentence -> its topic) from the embedded pretrained model, a pretraining run of yours, or random weights of
the same shape, live and overlaid; then classify sentences with the result, and probe which layer knows what.

Layout and wiring only: runs go through the fine-tuning service (``ctx.finetune_runs``) and the shared run
service (``ctx.runs``: the slot, the owner token, the caps),
the task, its landmarks, the probes and classification through ``ctx.finetune``, drawing through
:mod:`bertdemo.viz.finetune`. The tab reads the run when it is shown (not when the page opens), then polls it
with the tab's one timer while a run is live (:class:`~bertdemo.ui.tab_poll.TabPoll`: the tab's run, the names
panel, the own-data section and the queue line in one request) and redraws what changed.
"""

from __future__ import annotations

import functools
import json
import secrets
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from bertdemo import storage
from bertdemo.finetune.config import (
    EMBEDDED,
    LEARNING_RATES,
    RANDOM,
    FinetuneConfig,
    is_random_start,
    random_like,
    run_of_init,
)
from bertdemo.finetune.probe_tasks import JAWAHAR_NOTE
from bertdemo.finetune.reference import (
    embedded_range_text,
    learning_rate_choice_text,
    load_reference,
    random_range_text,
)
from bertdemo.models.embedded import EMBEDDED_MLM_NAME
from bertdemo.ui import api_answers, common, own_data_section, run_starts
from bertdemo.ui.common import visitor_of
from bertdemo.ui.heavy_requests import current_budget
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.ui.run_queue_panel import QueuePanel
from bertdemo.ui.tab_poll import TabPoll
from bertdemo.viz import finetune as viz
from bertdemo.viz.text import literal

POLL_SECONDS = 1.0
READING = "*Reading this server's fine-tuning runs…*"  # until the tab's first poll answers
D = FinetuneConfig()
MAX_CLASSIFY_CHARS = 1000
PROBE_TASKS = [("sentence length (surface)", "length"), ("bigram shift: two words swapped? (syntax)", "bigram_shift"),
               ("topic (semantics)", "topic")]
def intro() -> str:
    """The tab's introduction; the random-weight figure is the stored reference's (one source everywhere)."""
    return INTRO.format(random=random_range_text(), embedded=embedded_range_text(),
                        lr_choice=learning_rate_choice_text())


INTRO = (
    "BERT's pretraining teaches it language; **fine-tuning** puts it to work. The [CLS] vector goes through a "
    "small new classifier (one Linear layer over the pooler), and every weight is trained a little on a small "
    "labelled task — here 6,323 Wikipedia first sentences, each labelled with its topic (11 topics). Start "
    "from the embedded pretrained model, from a pretraining run of yours, or from **random weights of the same "
    "shape**: the same seed, data order and time budget, so the curves overlay fairly — the gap between them "
    "is what pretraining bought. The embedded model's is not MLM pretraining alone: its base is a "
    "sentence-embedding model (all-MiniLM-L6-v2), and it read this task's validation and test sentences, "
    "without labels, while pretraining. A pretraining run of yours on 'wiki' never sees them.\n\n"
    "The BERT paper's recipe is batch 16 or 32, learning rate 5e-5, 3e-5 or 2e-5, 2–4 epochs. This small model "
    "learns faster with a larger one: {lr_choice}, so it is the default here; the notes' values are offered. On a "
    "2-core machine, 3 minutes of the default recipe take the embedded model to {embedded} test accuracy (3 seeds); "
    "random weights of the same shape, with the same settings, to {random} (the stored reference, drawn dashed "
    "beside every run of the embedded model's shape; a run from your pretraining run has its own control)."
)


def plot_data(spec: dict) -> str:
    """A figure dict as the page's figure receives it: compact JSON."""
    return json.dumps(spec, separators=(",", ":"))


def _init_choices(pretraining) -> list[tuple[str, str]]:
    """The starts: the embedded model and its random control, then each pretraining run and its own control
    (random weights of the run's shape: what the run's pretraining bought is the gap between the two)."""
    runs = [[(f"my pretraining run: {label}", ref),
             (f"random weights, the shape of my run {label} (its control)", random_like(ref))]
            for label, ref in pretraining.model_choices()]
    return ([("the embedded pretrained model (6 layers)", EMBEDDED), ("random weights, same shape (the control)", RANDOM)]
            + [choice for pair in runs for choice in pair])


def build(ctx: Any, model_box: gr.Dropdown, owner: gr.Textbox) -> None:
    """Lay out the tab and wire it to ``ctx.finetune_runs``, ``ctx.runs`` and ``ctx.finetune``; ``owner``: this
    browser's owner token (the Pretrain tab's hidden box, read from and kept in the browser's localStorage)."""
    runs, slot, lab, store, public = ctx.finetune_runs, ctx.runs, ctx.finetune, ctx.models, ctx.settings.is_public
    pretraining = ctx.pretrain_runs  # the checkpoints a fine-tune may start from, the runs the layer probe reads
    user_errors = functools.partial(common.user_errors, public=public)
    export_dir = Path(tempfile.mkdtemp(prefix="bertdemo-finetune-"))
    reference = load_reference()  # the stored random-weight runs, drawn beside every run

    def status_of(snap: Any, busy: bool) -> str:
        """The status line of ``snap``; ``busy``: another run holds the training slot."""
        return viz.status_markdown(snap, busy_with_pretraining=busy, baselines=lab.baselines(),
                                   reference=reference, partner=runs.partner(snap))

    def status_text() -> str:
        held = slot.manager.latest
        return status_of(runs.snapshot(), held is not None and held.active)

    def compared(ids: list[str] | None) -> list[tuple[str, Any]]:
        live = runs.snapshot()
        out = [] if live is None else [(viz.run_label(live.run_id, live.init, live=True), live)]
        ids = list(ids or [])
        partner = runs.partner(live)  # a start from a pretraining run of the learner's and its control: drawn as a pair
        if partner is not None and partner.run_id not in ids:
            ids.append(partner.run_id)
        for run_id in ids:
            if live is None or run_id != live.run_id:
                snap = runs.load(run_id)
                out.append((viz.run_label(run_id, snap.init), snap))
        return out

    def curves(ids):
        live = runs.snapshot()
        # the stored random runs are of the embedded model's shape: no control for a run from a learner's pretraining
        # run (of another shape), whose own control is drawn beside it instead
        stored = None if live is not None and run_of_init(live.init) else reference
        return plot_data(viz.curves_spec(compared(ids), lab.baselines(), stored))

    saved = runs.choices()  # read once for the page's three run lists (each reads every run's history)

    with gr.Tab("Fine-tune", id="finetune") as tab:
        gr.Markdown(intro())
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                init = gr.Dropdown(_init_choices(pretraining), value=EMBEDDED, label="Start from", elem_id="ft-init")
                lr = gr.Dropdown([(f"{D.learning_rate:g} (measured best here)", D.learning_rate), ("1e-4", 1e-4),
                                  *((f"{v:g} (BERT paper)", v) for v in LEARNING_RATES)],
                                 value=D.learning_rate, label="Peak learning rate (AdamW, warm-up then linear decay)")
                batch = gr.Radio([16, 32], value=D.batch_size, label="Batch size")
                epochs = gr.Slider(1, 4, value=D.epochs, step=0.5, label="Epochs (the time budget may end it first)")
                budget = gr.Number(D.time_budget_s, label="Time budget (seconds: training and every evaluation, the final one included; pauses not counted)", minimum=10,
                                   maximum=3600)
                seed = gr.Number(D.seed, label="Seed (head, data order, dropout)", precision=0, minimum=0)
                probe = gr.Textbox(D.probe_text, label="Probe sentence (its topic probabilities are tracked)",
                                   max_length=500)
                then_control = gr.Checkbox(True, label="From my pretraining run: then its control, random weights of "
                                           "the run's shape (the same seed, data order and budget)",
                                           elem_id="ft-then-control")
                with gr.Row():
                    start = gr.Button("Start fine-tuning", variant="primary", elem_id="ft-start")
                    pause = gr.Button("Pause", elem_id="ft-pause")
                    resume = gr.Button("Resume", elem_id="ft-resume")
                    stop = gr.Button("Stop", variant="stop", elem_id="ft-stop")
                queue_panel = QueuePanel(ctx, "ft")  # a start while the slot is busy waits here
                with gr.Accordion("The task and its landmarks", open=False, elem_id="ft-task") as task_box:
                    task_md = gr.Markdown(elem_id="ft-task-md")
                    balance_plot = PlotlyFigure(label="Examples per topic", elem_id="ft-balance")
                    landmarks_btn = gr.Button("Compute the landmarks (once per server, about a minute)",
                                              elem_id="ft-landmarks")
            with gr.Column(scale=2):
                # read when the tab is shown (its poll): a page opened during a run shows it at once
                status = gr.Markdown(READING, elem_id="ft-status")
                new_md = gr.Markdown(elem_id="ft-new")
                compare = gr.Dropdown(saved, value=[], multiselect=True, elem_id="ft-compare",
                                      label="Overlay earlier fine-tuning runs")
                curve_plot = PlotlyFigure(label="Train loss and validation accuracy", elem_id="ft-curves")
                gr.Markdown(f"Accuracy panel — {viz.ACCURACY_KEY}. Dashed grey: random weights of the same "
                            f"shape, the stored reference — "
                            f"{reference.provenance()}.", elem_id="ft-reference")
                probe_plot = PlotlyFigure(label="The probe sentence's topic, as the run goes", elem_id="ft-probe")
                pca_plot = PlotlyFigure(label="Validation sentences' [CLS] vectors (PCA), coloured by topic",
                                        elem_id="ft-pca")
                confusion_plot = PlotlyFigure(label="Where it errs (validation)", elem_id="ft-confusion")
                with gr.Row():
                    run_pick = gr.Dropdown(saved, label="Fine-tuning run", scale=3,
                                           allow_custom_value=True, elem_id="ft-run-pick")
                    csv_button = gr.DownloadButton("Metrics CSV", scale=1, elem_id="ft-csv")
                    delete = gr.Button("Delete run", variant="stop", scale=1, elem_id="ft-delete")
        with gr.Accordion("Classify a sentence with a fine-tuned model", open=True, elem_id="ft-classify-box"):
            with gr.Row():
                classify_text = gr.Textbox("The cello is a bowed string instrument.", label="Sentence", scale=4,
                                           max_length=MAX_CLASSIFY_CHARS)
                classify_model = gr.Dropdown(saved, label="Fine-tuned model", scale=2,
                                             allow_custom_value=True, elem_id="ft-classify-model")
                classify_btn = gr.Button("Classify", scale=1, elem_id="ft-classify")
            classify_out = gr.Markdown(elem_id="ft-classify-out")
        poll = TabPoll(POLL_SECONDS, "ft-status")  # the tab's one timer: on while a run it shows is live
        own_result = own_data_section.build(ctx, owner, export_dir, poll)  # the learner's own sentences (task "own")
        with gr.Accordion("Which layer knows what? Frozen probes", open=False, elem_id="ft-probes-box"):
            gr.Markdown("A linear classifier reads each layer's frozen vectors (mean-pooled, and [CLS]) for three "
                        "tasks whose labels are exact; the random-weight model of the same shape and the majority "
                        "class are the controls. The model is the one in the model box at the top.\n\n*"
                        + JAWAHAR_NOTE + "*")
            with gr.Row():
                probe_task = gr.Radio(PROBE_TASKS, value="bigram_shift", label="Task", scale=3)
                probe_btn = gr.Button("Probe every layer", scale=1, elem_id="ft-probe-layers")
            layer_plot = PlotlyFigure(label="Probe accuracy by layer", elem_id="ft-layer-plot")
            layer_md = gr.Markdown(elem_id="ft-layer-md")
            with gr.Row():
                ckpt_run = gr.Dropdown(pretraining.run_choices(), label="A pretraining run: when did it learn word order?",
                                       scale=3, allow_custom_value=True, elem_id="ft-ckpt-run")
                ckpt_btn = gr.Button("Probe its checkpoints", scale=1, elem_id="ft-ckpt-probe")
            ckpt_plot = PlotlyFigure(label="Bigram shift across the run's checkpoints", elem_id="ft-ckpt-plot")
        with gr.Accordion("What fine-tuning changed, layer by layer", open=False, elem_id="ft-change-box"):
            gr.Markdown("How far fine-tuning moved each layer's weights (‖W_after − W_before‖ / ‖W_before‖), how much "
                        "it changed the validation sentences' vectors at each layer (linear CKA, before vs after: 1 = "
                        "unchanged up to rotation and scale), and whether the encoder still fills a [MASK] with its "
                        "original head (the masked-LM loss before and after: forgetting, measured).")
            with gr.Row():
                change_run = gr.Dropdown(saved, label="Fine-tuning run to measure", scale=3, allow_custom_value=True,
                                         elem_id="ft-change-run")
                change_btn = gr.Button("Measure the change", scale=1, elem_id="ft-change")
            change_plot = PlotlyFigure(label="Weight change and CKA per layer", elem_id="ft-change-plot")
            change_md = gr.Markdown(elem_id="ft-change-md")
        with gr.Accordion("Show the code", open=False) as code_box:
            gr.Markdown("The transformers lines that build the same task, fine-tune the same way — the same time "
                        "budget, evaluations included, so it stops where the view's run stops on the same machine — "
                        "and classify a sentence (a plain loop; `Trainer` does the same with `TrainingArguments`).")
            code = gr.Code(language="python", interactive=False, show_label=False, elem_id="ft-code")
        seen = gr.State(None)

    form = [init, lr, batch, epochs, budget, seed, probe]
    names = ["init", "learning_rate", "batch_size", "epochs", "time_budget_s", "seed", "probe_text"]

    @user_errors
    def start_from_page(request: gr.Request, token: str, *values):
        token, visitor = token or secrets.token_urlsafe(24), visitor_of(request)
        settings = dict(zip(names, values[:len(names)]))

        def start_or_queue(each: dict) -> None:
            ctx.runs.start_or_queue(token, visitor, f"{runs.label} run", lambda: runs.start(each, token, visitor=visitor),
                                    recipe={"kind": runs.name, "settings": each},
                                    check=lambda: runs.start(each, token, visitor=visitor, check_only=True))

        start_or_queue(settings)
        if not (values[len(names)] and run_of_init(str(settings["init"])) == settings["init"]):
            return status_text(), token
        try:  # from my run: its control, random weights of its shape, waits behind it with the same recipe
            start_or_queue({**settings, "init": random_like(str(settings["init"]))})
        except ValueError as exc:  # the run started; the page says why its control did not queue
            return status_text() + f"\n\nIts control (random weights of the run's shape) was not queued: {exc}", token
        return status_text() + "\n\nIts control, random weights of the run's shape, waits behind it.", token

    @user_errors
    def start_finetune(settings: dict, owner_token: str = "", request: gr.Request = None) -> str:
        """Start a fine-tuning run on the topic task. `settings`: init ("embedded", "random", "run:<id>/checkpoint" or
        "random:run:<id>/checkpoint": random weights of that run's shape, its control), learning_rate, batch_size, epochs, time_budget_s, seed, probe_text; anything left
        out keeps its default. It shares the machine's training slot with pretraining. On a public server pass
        an `owner_token` (any secret string): only that token pauses, resumes and stops it (/pause_run, …). When
        the slot is busy the run joins the queue, as /start_run's does (/queue_status, /cancel_queued)."""
        if public and not owner_token:
            raise ValueError("This is a public server: pass an owner_token (any secret string) to start a run.")
        settings, visitor = run_starts.settings_of(settings), visitor_of(request)
        outcome = ctx.runs.start_or_queue(owner_token, visitor, f"{runs.label} run",
                                          lambda: runs.start(settings, owner_token, visitor=visitor),
                                          recipe={"kind": runs.name, "settings": settings},
                                          check=lambda: runs.start(settings, owner_token, visitor=visitor,
                                                                   check_only=True))
        return run_starts.answer(outcome, status_text, api=True)

    @user_errors
    def control(action: str, token: str = "") -> str:
        slot.control(action, token)
        return status_text()

    def draw(seen_key, ids):
        """Everything, the first time (``seen_key`` None: the tab just shown); then only when the run moved on."""
        snap = runs.snapshot()
        held = slot.manager.latest  # the status says when another run holds the slot (another's private run too)
        busy = held is not None and held.active
        key = (("no run", busy) if snap is None else
               ("run", snap.run_id, snap.status, snap.step, len(snap.eval_steps), snap.message, bool(snap.pca_after),
                snap.checkpoint)) + (tuple(ids or ()), tuple(lab.baselines()))
        if key == seen_key:  # the status line at every draw: the page's may be a control's answer (ui/tab_poll.py)
            return (status_of(snap, busy), *(gr.skip() for _ in range(8)), seen_key)
        ended = snap is not None and not snap.active and snap.checkpoint
        choices = runs.choices() if ended else None
        # a run that has just ended (or the latest, on a page's first draw) is selected wherever a model is picked
        drawn_checkpoint = seen_key[7] if seen_key is not None and seen_key[0] == "run" else None
        fresh = (ended and drawn_checkpoint != snap.checkpoint
                 and snap.run_id in {run_id for _, run_id in choices})
        picked = {"value": snap.run_id} if fresh else {}
        return (status_of(snap, busy), viz.new_weights_markdown(snap), curves(ids), plot_data(viz.probe_spec(snap)),
                plot_data(viz.pca_spec(snap)), plot_data(viz.confusion_spec(snap)),
                gr.update(choices=choices) if choices is not None else gr.skip(),
                *(gr.update(choices=choices, **picked) if choices is not None else gr.skip() for _ in range(2)), key)

    def task_view():
        balance = lab.class_balance()
        base = lab.baseline_details()
        lines = [f"**Task:** a summary's first sentence (first 40 words) → one of {len(next(iter(balance.values())))} "
                 "topics; a fixed, seeded, stratified split: " + ", ".join(
                     f"{name} {sum(c.values()):,}" for name, c in balance.items()) + "."]
        if base:
            rows = "\n".join(f"| {literal(base['names'][k])} | {base['val_accuracy'][k]:.1%} | {base['test_accuracy'][k]:.1%} |"
                             for k in base["val_accuracy"])
            lines.append("| landmark | validation | test |\n|---|---|---|\n" + rows)
            lines.append("Every choice a landmark makes is made on validation; the chart draws its **test** accuracy, "
                         "beside each ended run's test accuracy (◆).")
        else:
            lines.append("The landmarks (majority class, bag of words, a probe on the frozen embedded model) are "
                         "not computed on this server yet: press the button below.")
        return "\n\n".join(lines), plot_data(viz.balance_spec(balance))

    @user_errors
    def compute_landmarks(progress=gr.Progress()):
        lab.compute_baselines(store.get(EMBEDDED_MLM_NAME), progress=lambda f, m: progress(f, desc=m),
                              budget=current_budget())
        return (*task_view(), curves([]))

    @user_errors
    def classify(text: str, model: str) -> str:
        """A sentence's topic probabilities from a fine-tuned model (`model`: ft:<run id>, as /run_status names
        the checkpoint)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("Type a sentence to classify.")
        if len(text) > MAX_CLASSIFY_CHARS:
            raise ValueError(f"The sentence has {len(text):,} characters; at most {MAX_CLASSIFY_CHARS:,}.")
        model = model if isinstance(model, str) and model.startswith("ft:") else f"ft:{model}"
        labels, probs = lab.classify(runs.model(model), text, budget=current_budget())
        return viz.probabilities_markdown(labels, probs, model)

    @user_errors
    def classify_api(text: str, model: str, owner_token: str = "") -> dict:
        """Per-label probabilities of `text` from the fine-tuned `model` (ft:<run id>: a topic run, or a run on
        your own data: on a public server pass the `owner_token` that started it)."""
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_CLASSIFY_CHARS:
            raise ValueError(f"text must be a sentence of 1 to {MAX_CLASSIFY_CHARS:,} characters.")
        labels, probs = lab.classify(runs.model(model, owner_token or ""), text, budget=current_budget())
        return {"model": model, "probabilities": dict(zip(labels, probs))}

    @user_errors
    def probe_layers(model: str, task: str) -> dict:
        """Every layer of `model` probed on `task` (length, bigram_shift or topic): test accuracy of a linear
        probe on mean-pooled and [CLS] features, the same on a random-weight model of the same shape, and the
        majority class; `best`: the layer and pooling chosen on validation, with its test accuracy."""
        if task not in {v: k for k, v in PROBE_TASKS}:
            raise ValueError(f"task must be one of {', '.join(v for _, v in PROBE_TASKS)}.")
        loaded = store.get(model)
        result = lab.layer_probes(loaded, task, budget=current_budget())
        return {"model": loaded.name, "task": result.task, "kind": result.kind, "n_train": result.n_train,
                "majority_accuracy": result.majority_accuracy, "mean": list(result.model.mean),
                "cls": list(result.model.cls), "random_mean": list(result.random.mean) if result.random else None,
                "random_cls": list(result.random.cls) if result.random else None,
                "best": dict(zip(("layer", "pooling", "test_accuracy"), result.model.best)),
                "random_best": dict(zip(("layer", "pooling", "test_accuracy"), result.random.best))
                if result.random else None}

    @user_errors
    def probe_layers_page(model: str, task: str, progress=gr.Progress()):
        loaded = store.get(model)
        result = lab.layer_probes(loaded, task, progress=lambda f, m: progress(f, desc=m), budget=current_budget())
        layer, pooling, acc = result.model.best
        text = (f"Answered by {literal(loaded.name)}: the best layer on validation, **{layer}** ({pooling}), has "
                f"**{acc:.1%}** test accuracy; majority class {result.majority_accuracy:.1%}, {result.n_train:,} "
                "training sentences.")
        if result.random is not None:
            r_layer, r_pool, r_acc = result.random.best
            text += f" Random weights of the same shape: {r_acc:.1%} (layer {r_layer}, {r_pool}, chosen the same way)."
        return plot_data(viz.layer_probe_spec(result)), text

    @user_errors
    def probe_checkpoints(run_id: str, progress=gr.Progress()):
        if not run_id:
            raise ValueError("Pick a pretraining run first.")
        folders = pretraining.checkpoint_folders(run_id)
        note = viz.checkpoints_note(len(folders), ctx.settings.disk.kept_per_run)
        return plot_data(viz.checkpoint_probe_spec(lab.checkpoint_probes(folders, lambda f, m: progress(f, desc=m),
                                                                         budget=current_budget()),
                                                   note=note))

    def measured_change(run_id: str, progress=None):
        if not isinstance(run_id, str) or not run_id.strip():
            raise ValueError("Pick a fine-tuning run first.")
        name = run_id if run_id.startswith("ft:") else f"ft:{run_id}"
        return lab.layer_change(name, runs.model(name), progress=progress, budget=current_budget())

    @user_errors
    def layer_change(model: str) -> dict:
        """What fine-tuning changed in `model` (ft:<run id>), per layer: `weight_change` (‖W_after − W_before‖ /
        ‖W_before‖ of the embeddings and each layer), `cka` (linear CKA of the validation sentences' mean-pooled
        vectors at each layer, before vs after), and the masked-LM loss with the original head before and after
        (`mlm_loss_before`, `mlm_loss_after`; null for a random start)."""
        change = measured_change(model)
        return {"model": change.model, "start": change.start, "layers": list(change.layers),
                "weight_change": list(change.weight_change), "cka": list(change.cka), "sentences": change.sentences,
                "mlm_loss_before": change.mlm_loss_before, "mlm_loss_after": change.mlm_loss_after,
                "masked_pieces": change.masked_pieces, "note": change.note}

    @user_errors
    def layer_change_from_page(run_id: str, progress=gr.Progress()):
        change = measured_change(run_id, progress=lambda f, m: progress(f, desc=m))
        return plot_data(viz.layer_change_spec(change)), viz.layer_change_markdown(change)

    @user_errors
    def download_csv(run_id: str):
        if not run_id:
            return None
        path = export_dir / f"{run_id}-finetune.csv"
        storage.write_text(path, runs.csv(run_id))
        return str(path)

    @user_errors
    def delete_run(run_id: str, token: str):
        runs.delete(run_id, token)
        choices = runs.choices()
        return gr.update(choices=choices, value=None), gr.update(choices=choices, value=[]), status_text()

    def delete_finetune_api(run_id: str, owner_token: str = "") -> str:
        """Delete an ended fine-tuning run (public server: its owner_token or the admin token)."""
        delete_run(run_id, owner_token)
        return f"Deleted fine-tuning run {run_id}."

    @user_errors
    def show_code(model_init: str, *values) -> str:
        from bertdemo.snippets.finetune import finetune_code
        from bertdemo.ui.code_panel import model_reference

        settings = dict(zip(names, (model_init, *values)))  # the form's values, init first
        ref = run_of_init(str(model_init)) or EMBEDDED_MLM_NAME  # a random start: the shape of its model
        path, note = model_reference(store, ref, public)
        cfg = FinetuneConfig(init=RANDOM if is_random_start(str(model_init)) else EMBEDDED,
                             learning_rate=float(settings["learning_rate"]), batch_size=int(settings["batch_size"]),
                             epochs=float(settings["epochs"]), seed=int(settings["seed"] or 0),
                             time_budget_s=float(settings["time_budget_s"] or 0),
                             probe_text=str(settings["probe_text"])).validate()
        return note + finetune_code(path, cfg)

    started = start.click(start_from_page, [owner, *form, then_control], [status, owner], api_name="start_finetune_from_page",
                          api_visibility="private")
    for action, button in (("pause", pause), ("resume", resume), ("stop", stop)):  # the poll's draw after each sends
        # the status line again (ui/tab_poll.py): a tick can reach the page before the answer
        poll.after(button.click(lambda t, action=action: control(action, t), owner, status, api_visibility="private"),
                   writes=[status])
    outputs = [status, new_md, curve_plot, probe_plot, pca_plot, confusion_plot, compare, run_pick, classify_model, seen]

    def run_part(request: gr.Request, seen_key, ids):
        """The tab's run (the slot's latest fine-tuning run): live while it trains, prepares or is paused. (A
        pretraining run is the Pretrain tab's to follow: this tab's status says it holds the slot when shown.)"""
        *drawn, key = draw(seen_key, ids)
        run = runs.current  # live while its thread works (the final evaluation and saving included)
        return (*drawn, key), bool(run is not None and run.active)

    poll.add(run_part, [seen, compare], outputs)
    queue_panel.wire(poll, owner, answers=[status, own_result])  # where the page's starts answer (names: status)
    poll.after(started, writes=[status])  # a start draws at once and starts the timer
    compare.change(user_errors(curves), compare, curve_plot, api_visibility="private")
    task_box.expand(user_errors(task_view), None, [task_md, balance_plot], api_visibility="private")
    refused = common.clear_on_refusal  # a refused request leaves no answer of the input before on screen
    refused(landmarks_btn.click(compute_landmarks, None, [task_md, balance_plot, curve_plot], api_visibility="private",
                                concurrency_limit=1, concurrency_id="ft-heavy"),
            [balance_plot, curve_plot])  # the task's description stays: the toast says why
    refused(classify_btn.click(classify, [classify_text, classify_model], classify_out, api_name="classify_from_page",
                               api_visibility="private"), [classify_out], note=classify_out)
    refused(probe_btn.click(probe_layers_page, [model_box, probe_task], [layer_plot, layer_md],
                            api_name="probe_layers_from_page", api_visibility="private",
                            concurrency_limit=1, concurrency_id="ft-heavy"), [layer_plot, layer_md], note=layer_md)
    refused(ckpt_btn.click(probe_checkpoints, ckpt_run, ckpt_plot, api_visibility="private", concurrency_limit=1,
                           concurrency_id="ft-heavy"), [ckpt_plot])
    refused(change_btn.click(layer_change_from_page, change_run, [change_plot, change_md], api_visibility="private",
                             concurrency_limit=1, concurrency_id="ft-heavy"), [change_plot, change_md], note=change_md)
    run_pick.change(download_csv, run_pick, csv_button, api_visibility="private")
    poll.after(delete.click(delete_run, [run_pick, owner], [run_pick, compare, status],
                            api_name="delete_finetune_from_page", api_visibility="private"), writes=[status])
    for pick in (run_pick, classify_model, compare, change_run):
        pick.focus(lambda: gr.update(choices=runs.choices()), None, pick, api_visibility="private")
    init.focus(lambda: gr.update(choices=_init_choices(pretraining)), None, init, api_visibility="private")
    ckpt_run.focus(lambda: gr.update(choices=pretraining.run_choices()), None, ckpt_run, api_visibility="private")
    code_box.expand(show_code, form, code, api_visibility="private")
    with tab:  # Find the names: a label for every word (its own panel, with the settings above)
        from bertdemo.ui import names_panel

        names_panel.build(ctx, model_box, owner, form, names, status, status_text, user_errors, poll)
    poll.follow(owner, ctx.runs.manager.viewing)  # with several runs at once: this page's own run
    poll.wire(tab)  # the tab's select draws it all; its one timer follows what is live
    with tab:
        gr.api(api_answers.plain(start_finetune), api_name="start_finetune")
        gr.api(classify_api, api_name="classify")
        gr.api(probe_layers, api_name="probe_layers", concurrency_limit=1, concurrency_id="ft-heavy")
        gr.api(api_answers.plain(delete_finetune_api), api_name="delete_finetune")
        gr.api(layer_change, api_name="layer_change", concurrency_limit=1, concurrency_id="ft-heavy")

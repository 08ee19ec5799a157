"""The Pretrain tab: configure a small BERT, start masked-LM pretraining, watch it learn live, compare runs.

Layout and wiring only. Every rule of a run — the checks before a start, who may pause, resume, stop
or delete it, uploads, the names of checkpoints — lives in the run service
(:class:`bertdemo.pretrain.service.PretrainService`, ``ctx.pretrain_runs``; the slot's live run of any
kind: ``ctx.runs``); drawing lives in :mod:`bertdemo.viz.run_curves`.
The tab reads the run when it is shown (not when the page opens), then polls its snapshot with the tab's one
timer while a run is live (:class:`~bertdemo.ui.tab_poll.TabPoll`) and redraws what moved on. Every page
watches the same run, and a reloaded page reattaches to it.
"""

from __future__ import annotations

import functools
import json
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import gradio as gr

from bertdemo import compat, storage
from bertdemo.finetune.metrics import FinetuneSnapshot
from bertdemo.lazy import LazyModule
from bertdemo.limits import MAX_EXPECTED_CHARS
from bertdemo.models.device import zero_gpu
from bertdemo.pretrain.config import CUSTOM, OBJECTIVES, PRESETS, TrainConfig
from bertdemo.pretrain.form import UPLOAD
from bertdemo.pretrain.service import PretrainService
from bertdemo.runs.service import RunAction, RunService
from bertdemo.settings import ServerSettings
from bertdemo.snippets import views as snippets
from bertdemo.ui import api_answers, common, run_starts, twins_section
from bertdemo.ui.code_panel import code_panel, engine_tokenizer_reference
from bertdemo.ui.common import labelled_choices, visitor_of
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.ui.run_queue_panel import QueuePanel
from bertdemo.ui.tab_poll import TabPoll
from bertdemo.viz import finetune as finetune_viz, run_curves
from bertdemo.viz.text import html_code, literal

probe_engine = LazyModule("bertdemo.explore.order_probe")

POLL_SECONDS = 1.0
FORM_DEFAULTS = TrainConfig()  # the form starts at the engine's defaults
CORPORA = [
    ("Wikipedia summaries (embedded, offline)", "wiki"),
    ("TinyStories (needs the dataset hub)", "tinystories"),
    ("My file (.txt or .jsonl, upload below)", UPLOAD),
]
LIVE = "live run"
READING = "*Reading this server's pretraining runs…*"  # until the tab's first poll answers (a page opened mid-run)
NO_CHANGE = None  # an output the poll leaves as it is (the page receives nothing for it)


OBJECTIVE_CHOICES = list(OBJECTIVES.items())  # (value, label): "masked LM (BERT): predicts each hidden word…"


def plot_data(spec: dict) -> str:
    """A plotly figure dict as the page's plot receives it: compact JSON, no figure object built."""
    return json.dumps(spec, separators=(",", ":"))


def poll_view(runs: PretrainService, seen: dict | None, compare: list[str] | None, smoothing: float, log_y: bool,
              x_axis: str) -> tuple[dict[str, Any], dict]:
    """What one poll of a page sends: the status line, and {output name: new value} for the parts that changed
    since ``seen`` (the timeline, the curves, the probe ranks and table, ``refresh``: the model lists), and the new
    ``seen``. A part that did not change is left out: the page receives nothing for it."""
    snap = runs.snapshot()
    seen = dict(seen or {})
    if snap is None:
        return {}, seen
    keys = {
        "timeline": (snap.run_id, len(snap.timeline), tuple(snap.landmarks),
                     run_curves.locality_markdown(snap)),  # the locality bias fading (a few words: compared as text)
        "curves": (snap.run_id, snap.active, len(snap.steps), len(snap.eval_steps), len(snap.probe_steps),
                   len(snap.timeline), tuple(snap.landmarks), tuple(compare or ()), smoothing, log_y, x_axis),  # an
        # ended run's curves are drawn once more: its label is no longer "live run"
        "probes": (snap.run_id, len(snap.probe_steps), len(snap.probe), x_axis),
    }
    changed = {name for name, key in keys.items() if seen.get(name) != key}
    updates: dict[str, Any] = {"status": run_curves.status_markdown(snap)}  # at every poll: the page's last value
    # may be a control's answer (ui/tab_poll.py: TabPoll.after), and the poll leaves out a line the page has
    if "timeline" in changed:
        updates["timeline"] = run_curves.timeline_markdown(snap)
    if "curves" in changed:
        drawn = [run_curves.CurveRun(label, s) for label, s in runs.compared(compare, LIVE, live=snap)]
        updates["plot"] = plot_data(run_curves.training_curves_spec(drawn, float(smoothing), bool(log_y), x_axis))
    if "probes" in changed:
        updates["ranks"] = plot_data(run_curves.probe_ranks_spec(snap, x_axis))
        updates["table"] = run_curves.probe_rows(snap)
    if snap.last_checkpoint and snap.last_checkpoint != seen.get("ckpt"):
        updates["refresh"] = True
    return updates, {**seen, **keys, "ckpt": snap.last_checkpoint}


def picked_run(choices: list[tuple[str, str]], value: str | None) -> str | None:
    """What a run picker holds once the run list changes: the learner's pick while it is still offered, else
    the newest run (``choices`` come newest first), so a finished run is ready for its CSV and order probe."""
    offered = [run_id for _label, run_id in choices]
    return value if value in offered else (offered[0] if offered else None)


class TabContext(Protocol):
    """What the tab needs of the app context."""

    settings: ServerSettings
    runs: RunService  # the training slot and the rules every run kind shares
    pretrain_runs: PretrainService
    models: Any  # the model store front: set_extra_choices(provider), choices(), get(name)


def corpus_note(corpus: str, hub_reachable: bool) -> str:
    """What the page says under the corpus choice before Start (TinyStories needs the dataset hub)."""
    if corpus != "tinystories":
        return ""
    if hub_reachable:
        return "*TinyStories streams from the dataset hub (reachable now).*"
    return ("> ⚠️ TinyStories comes from the dataset hub, which this server cannot reach: Start would be refused. "
            "Choose the embedded Wikipedia summaries (offline), or upload a .txt / .jsonl corpus.")


OWNER_KEY = "bertdemo-run-owner-token"  # localStorage: the owner token of this browser's runs
READ_OWNER_JS = f"() => localStorage.getItem({OWNER_KEY!r}) || ''"
KEEP_OWNER_JS = f"(token) => {{ if (token) localStorage.setItem({OWNER_KEY!r}, token); return []; }}"


def build(ctx: TabContext, model_box: gr.Dropdown, demo: gr.Blocks) -> gr.Textbox:
    """Lay out the tab inside the current Blocks context (``demo``) and wire its events to ``ctx.pretrain_runs``
    and ``ctx.runs``.

    On a public server only the browser that started a run (its owner token, kept in the browser's
    localStorage and read when the page opens) may pause, resume or stop it; the service applies that rule."""
    user_errors = functools.partial(common.user_errors, public=ctx.settings.is_public)  # no server path shown
    runs, slot, store = ctx.pretrain_runs, ctx.runs, ctx.models
    if zero_gpu():  # a ZeroGPU Space needs its @spaces.GPU function from startup (a torch-free module)
        import bertdemo.pretrain.gpu_entry  # noqa: F401
    # run checkpoints among every tab's models, as "run:<id>/checkpoint", and fine-tuned encoders as "ft:<id>"
    store.set_extra_choices(lambda: runs.model_choices() + ctx.finetune_runs.model_choices())
    d = FORM_DEFAULTS
    export_dir = Path(tempfile.mkdtemp(prefix="bertdemo-metrics-"))

    def status_text() -> str:
        held = slot.manager.latest
        if runs.snapshot() is None and slot.manager.current is None and held is not None and held.active:
            return slot.stranger_status(held)["message"]  # another visitor's private run: only that the slot is taken
        return run_curves.status_markdown(runs.snapshot())

    def curves(compare: list[str] | None, smoothing: float, log_y: bool, x_axis: str):
        drawn = [run_curves.CurveRun(label, snap) for label, snap in runs.compared(compare, LIVE)]
        return plot_data(run_curves.training_curves_spec(drawn, float(smoothing), bool(log_y), x_axis))

    def probe_ranks(x_axis: str):
        return plot_data(run_curves.probe_ranks_spec(runs.snapshot(), x_axis))

    def draw(seen: dict | None, compare, smoothing, log_y, x_axis, picked: str | None = None,
             probed: str | None = None):
        """Send only what changed since this page's last poll (nothing at all when the run stands still);
        refresh the model and run lists when a new checkpoint appears — the run pickers then offer the
        newest run, already chosen where nothing was."""
        updates, seen = poll_view(runs, seen, compare, smoothing, log_y, x_axis)
        refresh = updates.get("refresh", False)
        choices = runs.run_choices() if refresh else []

        def pick(value: str | None):
            return gr.update(choices=choices, value=picked_run(choices, value)) if refresh else gr.skip()

        return (
            *(updates.get(name, gr.skip()) for name in ("status", "timeline", "plot", "ranks", "table")),
            gr.update(choices=labelled_choices(store)) if refresh else gr.skip(),
            gr.update(choices=runs.checkpoint_choices()) if refresh else gr.skip(),
            gr.update(choices=choices) if refresh else gr.skip(),
            pick(picked), pick(probed),
            seen,
        )

    with gr.Tab("Pretrain", id="pretrain") as tab:
        gr.Markdown(
            "Train a small BERT **from scratch** on masked-word prediction and watch it learn. "
            "The run continues in the background while you use the other tabs; every page open "
            "on this server sees the same run. Every run starts near the loss of a uniform guess, "
            f"ln 30,522 = {run_curves.UNIFORM_LOSS:.2f}; the held-out loss is scored on the same fixed "
            "[MASK]s (15 % of the held-out tokens) for every run, and the lines on the loss chart show what "
            "simple guessers built from the run's own corpus score there. A left-to-right run is scored on the "
            "same held-out words, each predicted from the words before it only (its input has no [MASK]): the "
            "masked LM sees both sides of every blank, the left-to-right LM only the left."
        )
        with gr.Row():
            with gr.Column(scale=1, min_width=320):
                preset = gr.Dropdown([*PRESETS, CUSTOM], value=d.model.preset, label="Model size")
                with gr.Row(visible=False) as custom_row:
                    layers = gr.Number(d.model.num_hidden_layers, label="layers", precision=0, minimum=1, maximum=24)
                    hidden = gr.Number(d.model.hidden_size, label="hidden", precision=0, minimum=8, maximum=1024)
                    heads = gr.Number(d.model.num_attention_heads, label="heads", precision=0, minimum=1, maximum=16)
                    ffn = gr.Number(d.model.intermediate_size, label="FFN", precision=0, minimum=8, maximum=4096)
                params = gr.Markdown(run_curves.shape_markdown(d.model.preset, d.model.num_hidden_layers, d.model.hidden_size,
                                                 d.model.num_attention_heads, d.model.intermediate_size))
                objective = gr.Radio([(label, value) for value, label in OBJECTIVE_CHOICES],
                                     value=d.objective.objective, label="Objective", elem_id="pt-objective",
                                     info="The same model size, data, seed and budget; only what it learns to predict "
                                          "differs (BERT's Table 5: is bidirectional pretraining worth it?).")
                train_both = gr.Checkbox(False, label="Train both (the twins)", elem_id="pt-train-both",
                                         info="The masked LM, then the left-to-right LM, on the same batches in the "
                                              "same order for the same Steps (the time budget is off so both take "
                                              "every step); their curves are overlaid, each named.")
                estimate_box = gr.Markdown(elem_id="pt-estimate")  # filled when the tab opens and the form changes
                corpus = gr.Radio(CORPORA, value="wiki", label="Corpus")
                corpus_note_box = gr.Markdown(elem_id="pt-corpus-note")  # TinyStories offline: said before Start
                upload = gr.File(label="Your text (.txt or .jsonl with a 'text' field)",
                                 file_types=[".txt", ".jsonl"], type="filepath", elem_id="pt-upload")
                with gr.Accordion("Experiments", open=False, elem_id="pt-experiments"):
                    position_embeddings = gr.Checkbox(d.model.position_embeddings, label="Position embeddings",
                                                      elem_id="pt-position-embeddings",
                                                      info="Off: zeroed and frozen — the model cannot see word order. Its loss comes out about "
                                                           "the same or lower (a masked word is guessed far on the bag of "
                                                           "words around it); the order probe below shows the difference.")
                    whole_word = gr.Checkbox(d.objective.whole_word_masking, label="Whole-word masking",
                                             info="All pieces of a word are masked together.")
                    static_masks = gr.Number(d.objective.static_masks, label="Static masks per block (0 = dynamic)",
                                             precision=0, minimum=0, maximum=100,
                                             info="Original BERT: each sequence duplicated 10× with 10 fixed masks.")
                    nsp = gr.Checkbox(d.objective.nsp, label="Next-sentence prediction (NSP) too")
                    neighbour_init = gr.Radio(
                        [("planted neighbour heads (default)", True), ("plain random start", False)],
                        value=d.model.neighbour_init, label="Attention heads at the start", elem_id="pt-neighbour-init",
                        info="Planted: the position embeddings and every head's query and key weights start so that each "
                             "head looks at the word before or the word after (a left-to-right model: 1, 2… words "
                             "before) — a stock BERT whose first minutes are faster. Plain random: BERT's own start; "
                             "watch whether such heads grow on their own.")
                    locality = gr.Dropdown([("fades out", d.model.locality_fade), ("permanent (experiment)", 0.0)],
                                           value=d.model.locality_fade, label="Locality bias on attention",
                                           info="Attention looks at neighbours first. Fading out, the model ends a "
                                                "standard BERT; permanent learns faster: why?")
                    mlm_prob = gr.Slider(0.05, 0.5, value=d.objective.mlm_probability, step=0.01, label="Masking rate")
                    mask_prob = gr.Slider(0, 1, value=d.objective.mask_replace_prob, step=0.05, label="…of which → [MASK]")
                    random_prob = gr.Slider(0, 1, value=d.objective.random_replace_prob, step=0.05,
                                            label="…of which → random token (rest kept)")
                    schedule = gr.Textbox(d.data.seq_len_schedule, label="Block-length schedule (optional)",
                                          elem_id="pt-schedule",
                                          placeholder="e.g. 128:0.9,512:0.1",
                                          info="As BERT: 90 % of steps at 128 tokens, then 512 — attention costs grow "
                                               "with S² (512 costs 16× 128); positions beyond 128 train only in "
                                               "the second phase.")
                    block_starts = gr.Radio(
                        [("anywhere in one stream of texts (default)", "anywhere"), ("at a text's start", "text")],
                        value=d.data.block_starts, label="Where each block begins", elem_id="pt-block-starts",
                        info="Anywhere: the texts are joined into one stream, [SEP] between them, and cut every block "
                             "length (RoBERTa's packing), so a block mostly begins mid-sentence, and one sentence typed "
                             "later looks to the model like the middle of a text. At a text's start: each block begins "
                             "where a text begins, as BERT's inputs begin at a sentence's start; a text too long for the "
                             "rest of a block is cut there and starts the next block again from its first word (its "
                             "opening trained twice); one longer than a whole block runs on into the next.")
                with gr.Accordion("Training settings", open=False):
                    seq_len = gr.Slider(16, 512, value=d.data.seq_len, step=16, label="Block length (tokens)")
                    batch_size = gr.Slider(2, 256, value=d.optim.batch_size, step=2, label="Batch size (blocks per step)")
                    steps = gr.Number(d.optim.steps, label="Steps", precision=0, minimum=1)
                    time_budget = gr.Number(d.optim.time_budget_s, label="Time budget (seconds of training; 0: Steps only)",
                                            minimum=0, info="The run ends at whichever comes first; the learning "
                                                            "rate and the locality bias follow it.")
                    lr = gr.Number(d.optim.lr, label="Peak learning rate (AdamW, linear warmup + decay)")
                    warmup = gr.Number(d.optim.warmup_steps, label="Warmup steps", precision=0, minimum=0)
                    eval_every = gr.Number(d.monitor.eval_every, label="Evaluate every N steps", precision=0, minimum=1)
                    ckpt_every = gr.Number(d.monitor.checkpoint_every, label="Checkpoint every N steps (0: only at the end)",
                                           precision=0, minimum=0)
                    seed = gr.Number(d.system.seed, label="Seed", precision=0)
                    resume = gr.Dropdown(runs.checkpoint_choices(), value="", label="Resume from a checkpoint",
                                         info="Model, corpus and block length come from the checkpoint; Steps is the new total.")
                with gr.Row():
                    start = gr.Button("Start", variant="primary", elem_id="pt-start")
                    pause = gr.Button("Pause", elem_id="pt-pause")
                    resume_btn = gr.Button("Resume", elem_id="pt-resume")
                    stop = gr.Button("Stop", variant="stop", elem_id="pt-stop")
                queue_panel = QueuePanel(ctx, "pt")  # a start while the slot is busy waits here
                with gr.Row(visible=zero_gpu()):  # ZeroGPU Spaces: the run trains on the CPU, bursts on a GPU
                    burst_steps = gr.Number(200, label="GPU burst: steps", precision=0, minimum=1, scale=1,
                                            info="Trains the run on a GPU (your ZeroGPU quota), then back on the CPU.")
                    burst = gr.Button("GPU burst", elem_id="pt-burst", scale=1)
            with gr.Column(scale=2):
                # read when the tab is shown (its poll): a page opened during a run shows that run, never "no run yet"
                status = gr.Markdown(READING, elem_id="pt-status")
                timeline = gr.Markdown(run_curves.timeline_markdown(None), elem_id="pt-timeline")
                with gr.Row():
                    compare = gr.Dropdown(runs.run_choices(), value=[], multiselect=True, label="Compare with earlier runs",
                                          elem_id="pt-compare", scale=3)
                    x_axis = gr.Radio([("step", "step"), ("tokens", "tokens"), ("time", "time")], value="step",
                                      label="x axis", scale=2)
                with gr.Row():
                    smoothing = gr.Slider(0, 0.99, value=0.6, step=0.01, label="Smoothing (debiased EMA)", scale=3)
                    log_y = gr.Checkbox(False, label="Log-scale loss", scale=1)
                plot = PlotlyFigure(curves([], 0.6, False, "step"), label="Live metrics", elem_id="pt-curves")
                ranks_plot = PlotlyFigure(probe_ranks("step"), label=run_curves.PROBE_RANKS_TITLE,
                                     elem_id="pt-probe-ranks")
                with gr.Row():
                    # the default; when the tab is first shown, the live run's probe when there is one
                    probe = gr.Textbox(d.monitor.probe_text, label="Your probe sentence (one or more [MASK])", scale=4)
                    expected = gr.Textbox(d.monitor.probe_expected,
                                          label="Expected word at the first [MASK]", scale=2,
                                          max_length=MAX_EXPECTED_CHARS)
                    set_probe = gr.Button("Use this probe", scale=1)
                probe_table = gr.Dataframe(headers=run_curves.PROBE_HEADERS, interactive=False, wrap=True,
                                           column_widths=["38%", "14%", "12%", "36%"],
                                           label="The probes now: rank of the expected word, top-5 guesses",
                                           elem_id="pt-probe")
                with gr.Accordion("Does the model know word order? The order probe", open=True, elem_id="pt-order-box"):
                    gr.Markdown(run_curves.ORDER_PROBE_NOTE)
                    with gr.Row():
                        # a custom value: the API may name a run created after this page was built
                        order_run = gr.Dropdown(runs.run_choices(), label="Run to probe", elem_id="pt-order-run", scale=3,
                                                allow_custom_value=True)
                        order_text = gr.Textbox("The cat sat on the [MASK] .", label="Sentence with one [MASK]", scale=4)
                        order_button = gr.Button("Shuffle and compare", scale=1, elem_id="pt-order-run-button")
                    order_out = gr.Markdown(elem_id="pt-order")
                poll = TabPoll(POLL_SECONDS, "pt-status")  # the tab's one timer: on while a run it shows is live
                twins_section.build(ctx, runs, store, poll)  # masked LM vs left-to-right, the heads, the cost
                with gr.Accordion("Runs on this server: download, delete", open=False):
                    with gr.Row():
                        # a custom value: the API may name a run created after this page was built
                        run_pick = gr.Dropdown(runs.run_choices(), label="Run to download or delete", elem_id="pt-run-pick", scale=3,
                                               allow_custom_value=True)
                        csv_button = gr.DownloadButton("Metrics CSV", elem_id="pt-csv", scale=1)
                        delete = gr.Button("Delete run", variant="stop", scale=1, elem_id="pt-delete")
                    with gr.Row(visible=False) as confirm_row:  # a delete is asked once more: it cannot be undone
                        question = gr.Markdown(elem_id="pt-delete-question")
                        delete_yes = gr.Button("Yes, delete it", variant="stop", scale=1, elem_id="pt-delete-yes")
                        delete_no = gr.Button("Cancel", scale=1, elem_id="pt-delete-no")
        seen = gr.State(None)
        # this browser's secret for its runs, kept in its localStorage (OWNER_KEY) by the page itself: no key
        # in the page's config, and the same token after a server restart (a BrowserState's key was neither)
        owner = gr.Textbox("", visible=False, elem_id="pt-owner")

    form = dict(preset=preset, num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                intermediate_size=ffn, corpus=corpus, upload=upload, position_embeddings=position_embeddings,
                whole_word_masking=whole_word, static_masks=static_masks, nsp=nsp, locality_fade=locality,
                objective=objective, train_both=train_both, neighbour_init=neighbour_init,
                mlm_probability=mlm_prob,
                mask_replace_prob=mask_prob, random_replace_prob=random_prob, seq_len_schedule=schedule, block_starts=block_starts,
                seq_len=seq_len, batch_size=batch_size, steps=steps, time_budget_s=time_budget, lr=lr,
                warmup_steps=warmup,
                eval_every=eval_every, checkpoint_every=ckpt_every, seed=seed, resume_from=resume, probe_text=probe,
                probe_expected=expected)
    form_names = list(form)

    @user_errors
    def start_from_page(request: gr.Request, token: str, *values):
        """The page's Start: the form, as settings, becomes a run owned by this browser."""
        token, visitor = token or secrets.token_urlsafe(24), visitor_of(request)
        settings, options = dict(zip(form_names, values)), {"upload_root": compat.upload_folder()}
        ctx.runs.start_or_queue(token, visitor, f"{runs.label} run",
                                lambda: runs.start(settings, token, visitor=visitor, **options),
                                recipe={"kind": runs.name, "settings": settings, "options": options},
                                check=lambda: runs.start(settings, token, visitor=visitor, check_only=True, **options))
        return status_text(), token

    @user_errors
    def start_run(settings: dict, owner_token: str = "", request: gr.Request = None) -> str:
        """Start a pretraining run. `settings` uses TrainConfig's setting names (e.g. {"preset": "bert-tiny",
        "steps": 500, "lr": 0.001}); anything left out keeps its default. On a public server pass an
        `owner_token` (any secret string): only that token pauses, resumes and stops the run. When the training
        slot is busy the run joins the queue (one waiting run per visitor): the answer says its place and
        estimated start; /queue_status follows it, /cancel_queued cancels it (the same owner_token)."""
        if ctx.settings.is_public and not owner_token:
            raise ValueError("This is a public server: pass an owner_token (any secret string) to start a run; "
                             "the same token pauses, resumes and stops it.")
        settings, visitor = run_starts.settings_of(settings), visitor_of(request)
        outcome = ctx.runs.start_or_queue(owner_token, visitor, f"{runs.label} run",  # API callers cannot upload
                                          lambda: runs.start(settings, owner_token, visitor=visitor),
                                          recipe={"kind": runs.name, "settings": settings},
                                          check=lambda: runs.start(settings, owner_token, visitor=visitor,
                                                                   check_only=True))
        return run_starts.answer(outcome, status_text, api=True)

    def run_status(owner_token: str = "") -> dict | None:
        """The live run's snapshot: status, step, losses, accuracy, probe predictions (None before any run).
        Checkpoints are named as the model box names them ("run:<id>/checkpoint"), never by their server folder.
        With your `owner_token`: your own run (the one training, else your latest), where several runs train at once
        (--parallel-runs) or another visitor's run started after yours."""
        return slot.status(str(owner_token or ""))

    @user_errors
    def control(action: RunAction, token: str = "") -> str:
        snap = slot.control(action, token)  # the slot's run: a pretraining or a fine-tuning run
        return (finetune_viz.status_markdown(snap) if isinstance(snap, FinetuneSnapshot)
                else run_curves.status_markdown(snap))

    def pause_run(owner_token: str = "") -> str:
        """Pause the live run (on a public server: pass the owner_token it was started with)."""
        return control(RunAction.PAUSE, owner_token)

    def resume_run(owner_token: str = "") -> str:
        """Resume the paused run (on a public server: pass the owner_token it was started with)."""
        return control(RunAction.RESUME, owner_token)

    def stop_run(owner_token: str = "") -> str:
        """Stop the live run and save its checkpoint (public server: its owner_token, or the admin token)."""
        return control(RunAction.STOP, owner_token)

    @user_errors
    def update_probe(text: str, expected: str = "", token: str = "") -> None:
        """The page's Set probe: the run takes it; a note says when it runs (the poll's draw after it shows the run)."""
        runs.set_probe(text, token, expected)
        gr.Info("Probe changed: it runs at the next step.")

    @user_errors
    def metrics_csv_api(run_id: str) -> str:
        """A run's metrics as CSV text (step, tokens, wall_s, train and held-out metrics): the content
        itself, as a notebook wants it (``pd.read_csv(io.StringIO(text))``), not a file on the server."""
        return runs.metrics_csv(run_id)

    @user_errors
    def download_csv(run_id: str) -> str:
        """A run's metrics as a CSV file for the page's download button."""
        text = runs.metrics_csv(run_id)  # ValueError unless run_id names the live run or a run folder
        path = export_dir / f"{run_id}-metrics.csv"
        storage.write_text(path, text)  # atomic: two downloads of one run never interleave
        return str(path)

    @user_errors
    def ask_delete(run_id: str):
        """The page's Delete: name the run and ask once more."""
        if not run_id:
            raise ValueError("Pick a run first.")
        label = {value: label for label, value in runs.run_choices()}.get(run_id, run_id)
        return gr.update(visible=True), (f"Delete run {html_code(run_id)} ({literal(label)})? Its checkpoints "
                                         "and metrics leave this server for good.")

    @user_errors
    def delete_run(run_id: str, token: str = ""):
        runs.delete(run_id, token)
        choices = runs.run_choices()
        return (gr.update(choices=choices, value=None), gr.update(choices=choices, value=[]),
                gr.update(choices=runs.checkpoint_choices(), value=""), gr.update(choices=labelled_choices(store)),
                status_text(), gr.update(visible=False), "")

    def time_estimate(*values) -> str:
        """How long the form's run would take on this machine (and whether a public server allows it)."""
        return runs.time_estimate(dict(zip(form_names, values)))

    def gpu_burst_from_page(token: str, steps: float):
        yield from gpu_burst_api(int(steps or 0), token)

    def gpu_burst_api(steps: int, owner_token: str = "") -> Iterator[str]:
        """Move the run to a GPU for `steps` steps, then on with it on the CPU (ZeroGPU Spaces; only the
        run's owner_token). Streams the run's status."""
        try:
            for snap in runs.gpu_burst(int(steps), owner_token, device="cuda"):
                yield run_curves.status_markdown(snap)
            yield status_text()
        except ValueError as exc:
            raise gr.Error(str(exc), duration=None, print_exception=False) from exc

    def set_probe_api(text: str, owner_token: str = "", expected: str = "") -> str:
        """Use a new probe sentence (one or more [MASK]) in the live run (public server: its owner_token);
        `expected`: the word expected at its first [MASK], whose rank the run then tracks ("" for none)."""
        return update_probe(text, expected, owner_token)

    def delete_run_api(run_id: str, owner_token: str = "") -> str:
        """Delete an ended run's folder (public server: only with the owner_token that started it, or the admin token)."""
        delete_run(run_id, owner_token)
        return f"Deleted run {run_id}."

    @user_errors
    def run_order_probe(run_id: str, text: str):
        if not run_id:
            raise ValueError("Pick a run first.")
        # by its run: name, the one way a public server loads a run (a folder path is refused there)
        result = probe_engine.order_probe(store.get(runs.run_reference(runs.run_checkpoint(run_id))), text)
        return run_curves.order_probe_markdown(result, run_id)

    view = [compare, smoothing, log_y, x_axis]
    outputs = [status, timeline, plot, ranks_plot, probe_table, model_box, resume, compare, run_pick, order_run, seen]
    preset.change(lambda p: gr.update(visible=p == CUSTOM), preset, custom_row, api_visibility="private")
    corpus.change(lambda c: corpus_note(c, runs.hub.reachable()), corpus, corpus_note_box, api_visibility="private")
    gr.on([c.change for c in (preset, layers, hidden, heads, ffn, nsp)], run_curves.shape_markdown,
          [preset, layers, hidden, heads, ffn, nsp], params, api_visibility="private")
    started = start.click(start_from_page, [owner, *form.values()], [status, owner], api_visibility="private")
    demo.load(None, None, owner, js=READ_OWNER_JS, api_visibility="private")  # the token this browser kept
    owner.change(None, owner, None, js=KEEP_OWNER_JS, api_visibility="private")  # a new one is kept
    timed = (preset, layers, hidden, heads, ffn, steps, time_budget, batch_size, seq_len, schedule, eval_every, mlm_prob,
             objective, train_both)
    gr.on([c.change for c in timed], time_estimate, list(form.values()), estimate_box,  # and when the tab is shown
          api_visibility="private", trigger_mode="always_last", show_progress="hidden")
    with tab:  # API-only endpoints live in the tab (a gr.Tabs holds only tabs)
        gr.api(api_answers.plain(start_run), api_name="start_run")
        code_panel(ctx, lambda *shape: snippets.pretrain_code_for(  # the engine's tokenizer, offline too
                       *shape, tokenizer=engine_tokenizer_reference(ctx.models, ctx.settings.is_public)),
                   [preset, layers, hidden, heads, ffn, position_embeddings], elem_id="pt-code", uses_model=False)
        gr.api(run_status, api_name="run_status")
        run_starts.add_queue_api(ctx)  # /queue_status, /cancel_queued: a start the busy slot queued
    # the buttons pass this browser's owner token; API callers pass theirs to the gr.api endpoints below
    # each answers in the status line at once; the poll's draw after it sends the line again (ui/tab_poll.py): a tick
    # can reach the page before the answer, and a paused or stopped run would keep the answer's older line
    for control_event in (
            pause.click(pause_run, owner, status, api_name="pause_from_page", api_visibility="private"),
            resume_btn.click(resume_run, owner, status, api_name="resume_from_page", api_visibility="private"),
            stop.click(stop_run, owner, status, api_name="stop_from_page", api_visibility="private"),
            burst.click(gpu_burst_from_page, [owner, burst_steps], status, api_visibility="private",
                        concurrency_limit=1)):
        poll.after(control_event, writes=[status])
    poll.after(set_probe.click(update_probe, [probe, expected, owner], None, api_name="set_probe_from_page",
                               api_visibility="private"))
    with tab:
        gr.api(api_answers.plain(pause_run), api_name="pause_run")
        gr.api(api_answers.plain(resume_run), api_name="resume_run")
        gr.api(api_answers.plain(stop_run), api_name="stop_run")
        gr.api(api_answers.plain(set_probe_api), api_name="set_probe")
        gr.api(gpu_burst_api, api_name="gpu_burst", concurrency_limit=1)

    def run_part(request: gr.Request, seen_now: dict | None, *values):
        """The tab's run: what moved on since this page's last poll (all of it when the tab is first shown, the
        live run's probe in the probe boxes too); live while the run trains, prepares or is paused."""
        first = seen_now is None
        snap = runs.snapshot()
        *drawn, seen_now = draw(seen_now, *values)
        if snap is None:  # no run (or another visitor's): the words saying so
            drawn[0] = status_text()
        probe_now = (gr.update(value=snap.probe_text or d.monitor.probe_text), gr.update(value=snap.probe_expected)) \
            if first and snap is not None else (gr.skip(), gr.skip())
        run = runs.current  # live while its thread works: between the twins of "Train both" too
        return (*drawn, seen_now, *probe_now), bool(run is not None and run.active)

    def estimate_part(request: gr.Request, *values):
        return (time_estimate(*values),), False

    def status_part(request: gr.Request):
        """The status line alone, answered first when the tab is shown (a snapshot from memory): the placeholder
        gives way at once; the curves and the run lists (read from disk) follow in the tab's next request."""
        return (status_text(),), False

    poll.add(status_part, [], [status], first=True)
    poll.add(run_part, [seen, *view, run_pick, order_run], [*outputs, probe, expected])
    queue_panel.wire(poll, owner)
    poll.add(estimate_part, list(form.values()), [estimate_box], on_show_only=True)  # the form's changes redraw it
    poll.follow(owner, ctx.runs.manager.viewing)  # with several runs at once: this page's own run
    poll.wire(tab)  # the poll shows no progress, not even on its status text
    poll.after(started, writes=[status])  # a start draws at once and starts the timer
    gr.on([c.change for c in view], user_errors(curves), view, plot, api_visibility="private")
    x_axis.change(user_errors(probe_ranks), x_axis, ranks_plot, api_visibility="private")
    run_pick.change(lambda run_id: download_csv(run_id) if run_id else None, run_pick, csv_button,
                    api_visibility="private")
    with tab:
        gr.api(metrics_csv_api, api_name="run_metrics_csv")
    for pick in (run_pick, order_run):  # runs made after the page was built are offered when the list opens
        pick.focus(lambda: gr.update(choices=runs.run_choices()), None, pick, api_visibility="private")
    delete.click(ask_delete, run_pick, [confirm_row, question], api_visibility="private")
    delete_no.click(lambda: gr.update(visible=False), None, confirm_row, api_visibility="private")
    poll.after(delete_yes.click(delete_run, [run_pick, owner],
                                [run_pick, compare, resume, model_box, status, confirm_row, order_out],
                                api_name="delete_from_page", api_visibility="private", show_progress_on=[status]),
               writes=[status])
    with tab:
        gr.api(api_answers.plain(delete_run_api), api_name="delete_run")
    common.clear_on_refusal(order_button.click(run_order_probe, [order_run, order_text], order_out,
                                               api_name="order_probe"), [order_out], note=order_out)
    return owner  # the Fine-tune tab's buttons pass the same token: one browser, one owner

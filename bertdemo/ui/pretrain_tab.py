"""The Pretrain tab: configure a small BERT, start masked-LM pretraining, watch it learn live, compare runs.

The run lives in a background thread owned by :mod:`bertdemo.pretrain`; this module only turns
the form into settings (``pretrain.form``), calls start/pause/resume/stop, and polls
``snapshot()`` with a ``gr.Timer`` to redraw. Every open page watches the same run, and a
reloaded page reattaches to it. Earlier runs (read back from their checkpoints) can be overlaid,
downloaded as CSV and deleted.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo import storage
from bertdemo.models.device import zero_gpu
from bertdemo.pretrain import CUSTOM, PRESETS, TrainConfig, list_checkpoints, param_count
from bertdemo.pretrain import history
from bertdemo.pretrain.checkpoint import kept as checkpoints_kept
from bertdemo.pretrain import limits as run_limits
from bertdemo.pretrain.form import UPLOAD, config_from_settings
from bertdemo.pretrain.metrics import RunSnapshot, metrics_csv
from bertdemo.ui.common import labelled_choices, user_errors
from bertdemo.ui.lazy import Deferred, LazyModule
from bertdemo.viz import run_curves

if TYPE_CHECKING:
    from bertdemo.models.store import ModelStore

RUN_ENGINE = "bertdemo.pretrain.run"  # the training loop (torch): loaded after the page is served
run_engine = LazyModule(RUN_ENGINE)
probe_engine = LazyModule("bertdemo.explore.order_probe")

POLL_SECONDS = 1.0
FORM_DEFAULTS = TrainConfig()  # the form starts at the engine's defaults
CORPORA = [
    ("Wikipedia summaries (embedded, offline)", "wiki"),
    ("TinyStories (needs the dataset hub)", "tinystories"),
    ("My file (.txt or .jsonl, upload below)", UPLOAD),
]
LIVE = "live run"
NOT_YOURS = "This run belongs to another visitor; you can watch it."
ADMIN_ENV = "BERTDEMO_ADMIN_TOKEN"  # holders of this token may stop (and delete) any run on a public server


def is_admin(token: str) -> bool:
    """True when ``token`` is the server's admin token (set in the environment; never when unset)."""
    admin = os.environ.get(ADMIN_ENV, "")
    return bool(admin) and secrets.compare_digest(str(token or ""), admin)


def show_params(preset: str, layers: float, hidden: float, heads: float, ffn: float) -> str:
    """The parameter count of the chosen shape (or why it cannot be built)."""
    try:
        cfg = TrainConfig.from_flat(preset=preset, num_hidden_layers=int(layers), hidden_size=int(hidden),
                                    num_attention_heads=int(heads), intermediate_size=int(ffn))
        cfg.validate()
        n_layers, n_hidden, n_heads, n_ffn = cfg.model_shape()
        return (f"**{param_count(cfg):,} parameters** — {n_layers} layers, hidden {n_hidden}, "
                f"{n_heads} heads, FFN {n_ffn}; uncased WordPiece vocabulary (30,522)")
    except ValueError as exc:
        return f"⚠️ {exc}"


def build(ctx, model_box: gr.Dropdown) -> None:
    """Lay out the tab inside the current Blocks context and wire its events.

    ``public``: this server is public and these are its caps; then only the browser that started a
    run (its owner token, kept in the browser) may pause, resume or stop it."""
    store, runs_dir, public = ctx.models, str(ctx.settings.runs_dir), ctx.settings.public_limits
    policy = store.policy
    manager = Deferred(lambda: run_engine.get_manager(runs_dir))
    if zero_gpu():  # a ZeroGPU Space needs its @spaces.GPU function from startup (a torch-free module)
        import bertdemo.pretrain.gpu_entry  # noqa: F401
    # the run checkpoints among every tab's models: named "run:<id>/checkpoint" (the page never sees a server folder)
    store.set_extra_choices(lambda: [(f"{label} (checkpoint)", policy.run_reference(path))
                                     for label, path in list_checkpoints(runs_dir)])
    d = FORM_DEFAULTS
    export_dir = Path(tempfile.mkdtemp(prefix="bertdemo-metrics-"))

    def snapshot() -> RunSnapshot | None:
        if RUN_ENGINE not in sys.modules:  # no run exists before the engine is loaded
            return None
        run = manager.current
        return None if run is None else run.snapshot()

    def checkpoint_choices() -> list[tuple[str, str]]:
        """Resume choices: "run:<id>/checkpoint" or "run:<id>/previous/step-<n>", never server paths."""
        return [("— start from scratch —", "")] + [(label, policy.run_reference(path))
                                                    for label, path in list_checkpoints(runs_dir, True)]

    def run_path(resume: str) -> str:
        """A resume choice ("run:<id>/checkpoint") as its folder under runs_dir; other values as given."""
        return policy.resolve_run_reference(resume) or resume

    def run_choices() -> list[str]:
        return history.list_runs(runs_dir)

    def curves(compare: list[str] | None, smoothing: float, log_y: bool, x_axis: str):
        snap = snapshot()
        records = [history.load_run(runs_dir, run_id) for run_id in (compare or [])
                   if snap is None or run_id != snap.run_id]
        live = [] if snap is None else [history.RunRecord(snap.run_id, Path(), manager.current.cfg.flat(), snap)]
        labels = history.differing_labels(live + records)
        runs = [run_curves.CurveRun(f"{LIVE} {labels[r.run_id]}" if i == 0 and live else labels[r.run_id], r.snapshot)
                for i, r in enumerate(live + records)]
        return run_curves.training_curves(runs, float(smoothing), bool(log_y), x_axis)

    def draw(seen: dict | None, compare, smoothing, log_y, x_axis):
        """Redraw only when the run moved on; refresh the model and run lists when a new checkpoint appears."""
        snap = snapshot()
        key = None if snap is None else (snap.run_id, snap.status, snap.step, len(snap.eval_steps),
                                         snap.message, round(snap.prepare_fraction, 2), len(snap.probe))
        seen = seen or {}
        if key is not None and key == seen.get("key"):
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), seen
        ckpt = snap.last_checkpoint if snap else ""
        refresh = ckpt and ckpt != seen.get("ckpt")
        return (
            run_curves.status_markdown(snap),
            curves(compare, smoothing, log_y, x_axis),
            run_curves.probe_rows(snap),
            gr.update(choices=labelled_choices(store)) if refresh else gr.skip(),
            gr.update(choices=checkpoint_choices()) if refresh else gr.skip(),
            gr.update(choices=run_choices()) if refresh else gr.skip(),
            {"key": key, "ckpt": ckpt},
        )

    with gr.Tab("Pretrain", id="pretrain") as tab:
        gr.Markdown(
            "Train a small BERT **from scratch** on masked-word prediction and watch it learn. "
            "The run continues in the background while you use the other tabs; every page open "
            "on this server sees the same run. Every run starts near the loss of a uniform guess, "
            f"ln 30,522 = {run_curves.UNIFORM_LOSS:.2f}."
        )
        with gr.Row():
            with gr.Column(scale=1, min_width=320):
                preset = gr.Dropdown([*PRESETS, CUSTOM], value=d.model.preset, label="Model size")
                with gr.Row(visible=False) as custom_row:
                    layers = gr.Number(d.model.num_hidden_layers, label="layers", precision=0, minimum=1, maximum=24)
                    hidden = gr.Number(d.model.hidden_size, label="hidden", precision=0, minimum=8, maximum=1024)
                    heads = gr.Number(d.model.num_attention_heads, label="heads", precision=0, minimum=1, maximum=16)
                    ffn = gr.Number(d.model.intermediate_size, label="FFN", precision=0, minimum=8, maximum=4096)
                params = gr.Markdown(show_params(d.model.preset, d.model.num_hidden_layers, d.model.hidden_size,
                                                 d.model.num_attention_heads, d.model.intermediate_size))
                estimate_box = gr.Markdown(elem_id="pt-estimate")  # filled when the tab opens and the form changes
                corpus = gr.Radio(CORPORA, value="wiki", label="Corpus")
                upload = gr.File(label="Your text (.txt or .jsonl with a 'text' field)",
                                 file_types=[".txt", ".jsonl"], type="filepath", elem_id="pt-upload")
                with gr.Accordion("Experiments", open=False):
                    position_embeddings = gr.Checkbox(d.model.position_embeddings, label="Position embeddings",
                                                      info="Off: zeroed and frozen — the model cannot see word order.")
                    whole_word = gr.Checkbox(d.objective.whole_word_masking, label="Whole-word masking",
                                             info="All pieces of a word are masked together.")
                    static_masks = gr.Number(d.objective.static_masks, label="Static masks per block (0 = dynamic)",
                                             precision=0, minimum=0, maximum=100,
                                             info="Original BERT: each sequence duplicated 10× with 10 fixed masks.")
                    nsp = gr.Checkbox(d.objective.nsp, label="Next-sentence prediction (NSP) too")
                    mlm_prob = gr.Slider(0.05, 0.5, value=d.objective.mlm_probability, step=0.01, label="Masking rate")
                    mask_prob = gr.Slider(0, 1, value=d.objective.mask_replace_prob, step=0.05, label="…of which → [MASK]")
                    random_prob = gr.Slider(0, 1, value=d.objective.random_replace_prob, step=0.05,
                                            label="…of which → random token (rest kept)")
                    schedule = gr.Textbox(d.data.seq_len_schedule, label="Block-length schedule (optional)",
                                          placeholder="128:0.9,512:0.1",
                                          info="As BERT: 90 % of steps at 128 tokens, then 512; positions "
                                               "beyond 128 train only in the second phase.")
                with gr.Accordion("Training settings", open=False):
                    seq_len = gr.Slider(16, 512, value=d.data.seq_len, step=16, label="Block length (tokens)")
                    batch_size = gr.Slider(2, 256, value=d.optim.batch_size, step=2, label="Batch size (blocks per step)")
                    steps = gr.Number(d.optim.steps, label="Steps", precision=0, minimum=1)
                    lr = gr.Number(d.optim.lr, label="Peak learning rate (AdamW, linear warmup + decay)")
                    warmup = gr.Number(d.optim.warmup_steps, label="Warmup steps", precision=0, minimum=0)
                    eval_every = gr.Number(d.monitor.eval_every, label="Evaluate every N steps", precision=0, minimum=1)
                    ckpt_every = gr.Number(d.monitor.checkpoint_every, label="Checkpoint every N steps (0: only at the end)",
                                           precision=0, minimum=0)
                    seed = gr.Number(d.system.seed, label="Seed", precision=0)
                    resume = gr.Dropdown(checkpoint_choices(), value="", label="Resume from a checkpoint",
                                         info="Model, corpus and block length come from the checkpoint; Steps is the new total.")
                with gr.Row():
                    start = gr.Button("Start", variant="primary", elem_id="pt-start")
                    pause = gr.Button("Pause", elem_id="pt-pause")
                    resume_btn = gr.Button("Resume", elem_id="pt-resume")
                    stop = gr.Button("Stop", variant="stop", elem_id="pt-stop")
                with gr.Row(visible=zero_gpu()):  # ZeroGPU Spaces: the run trains on the CPU, bursts on a GPU
                    burst_steps = gr.Number(200, label="GPU burst: steps", precision=0, minimum=1, scale=1,
                                            info="Trains the run on a GPU (your ZeroGPU quota), then back on the CPU.")
                    burst = gr.Button("GPU burst", elem_id="pt-burst", scale=1)
            with gr.Column(scale=2):
                status = gr.Markdown(run_curves.status_markdown(None), elem_id="pt-status")
                with gr.Row():
                    compare = gr.Dropdown(run_choices(), value=[], multiselect=True, label="Compare with earlier runs",
                                          elem_id="pt-compare", scale=3)
                    x_axis = gr.Radio([("step", "step"), ("tokens", "tokens"), ("time", "time")], value="step",
                                      label="x axis", scale=2)
                with gr.Row():
                    smoothing = gr.Slider(0, 0.99, value=0.6, step=0.01, label="Smoothing (debiased EMA)", scale=3)
                    log_y = gr.Checkbox(False, label="Log-scale loss", scale=1)
                plot = gr.Plot(curves([], 0.6, False, "step"), label="Live metrics", elem_id="pt-curves")
                with gr.Row():
                    probe = gr.Textbox(d.monitor.probe_text, label="Probe sentence (one or more [MASK])", scale=4)
                    set_probe = gr.Button("Use this probe", scale=1)
                probe_table = gr.Dataframe(headers=run_curves.PROBE_HEADERS, interactive=False, wrap=True,
                                           column_widths=["64px", "35%", "64px", "50%"],
                                           label="What the model guesses for the probe (newest first)",
                                           elem_id="pt-probe")
                with gr.Accordion("Runs on this server: download, delete, order probe", open=False):
                    with gr.Row():
                        run_pick = gr.Dropdown(run_choices(), label="Run", elem_id="pt-run-pick", scale=3)
                        csv_button = gr.DownloadButton("Metrics CSV", elem_id="pt-csv", scale=1)
                        delete = gr.Button("Delete run", variant="stop", scale=1)
                    gr.Markdown("**Order probe** — the run's guesses for a sentence and for a shuffled copy. "
                                "A model trained without position embeddings gives both the same answer.")
                    with gr.Row():
                        order_text = gr.Textbox("The cat sat on the [MASK] .", label="Sentence with one [MASK]", scale=4)
                        order_button = gr.Button("Shuffle and compare", scale=1)
                    order_out = gr.Markdown(elem_id="pt-order")
        seen = gr.State(None)
        owner = gr.BrowserState("", storage_key="bertdemo-run-owner")  # this browser's secret for its runs
        timer = gr.Timer(POLL_SECONDS)

    form = dict(preset=preset, num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                intermediate_size=ffn, corpus=corpus, upload=upload, position_embeddings=position_embeddings,
                whole_word_masking=whole_word, static_masks=static_masks, nsp=nsp, mlm_probability=mlm_prob,
                mask_replace_prob=mask_prob, random_replace_prob=random_prob, seq_len_schedule=schedule,
                seq_len=seq_len, batch_size=batch_size, steps=steps, lr=lr, warmup_steps=warmup,
                eval_every=eval_every, checkpoint_every=ckpt_every, seed=seed, resume_from=resume, probe_text=probe)
    form_names = list(form)

    @user_errors
    def start_from_page(token: str, *values):
        """The page's Start: the form, as settings, becomes a run owned by this browser."""
        token = token or secrets.token_urlsafe(24)
        return _start(dict(zip(form_names, values)), token, page=True), token

    @user_errors
    def start_run(settings: dict, owner_token: str = "") -> str:
        """Start a pretraining run. `settings` uses TrainConfig's setting names (e.g. {"preset": "bert-tiny",
        "steps": 500, "lr": 0.001}); anything left out keeps its default. On a public server pass an
        `owner_token` (any secret string): only that token pauses, resumes and stops the run."""
        if public is not None and not owner_token:
            raise ValueError("This is a public server: pass an owner_token (any secret string) to start a run; "
                             "the same token pauses, resumes and stops it.")
        return _start(settings, owner_token, page=False)

    def _start(settings: dict, token: str, page: bool) -> str:
        from bertdemo.pretrain import uploads

        manager.check_free()  # a refused start costs nothing: no config, memory, disk or time checks
        upload_root = gr.utils.get_upload_folder() if page else None  # API callers cannot upload here
        if isinstance(settings, dict) and isinstance(settings.get("resume_from"), str):
            settings = {**settings, "resume_from": run_path(settings["resume_from"])}
        cfg = config_from_settings(settings, runs_dir, public=public, upload_root=upload_root)
        if public is not None and cfg.system.resume_from:  # resuming writes into that run's folder
            resumed = Path(cfg.system.resume_from).resolve().relative_to(Path(runs_dir).resolve()).parts[0]
            if not (is_admin(token) or history.is_owner(runs_dir, resumed, token)):
                raise ValueError("Only the browser that started this run (or this server's administrator) may "
                                 "resume it; start a new run, or resume one of yours.")
        run_limits.check_memory(cfg)
        run_limits.check_disk(cfg, runs_dir, checkpoints_kept())
        if public is not None:
            from bertdemo.pretrain import estimate

            _ = manager.current  # the training engine (torch) is in before anything measures this machine
            estimate.check_time(cfg, public.max_seconds)
        received = None
        if page and settings.get("corpus") == UPLOAD and not cfg.system.resume_from:
            received = cfg.data.corpus  # in the web server's upload folder, which serves files back by URL
            cfg = cfg.replace(corpus=str(uploads.adopt(received, runs_dir)))
        try:
            run = manager.start(cfg, owner=token if public is not None else "",
                                max_seconds=public.max_seconds if public is not None else None)
        except ValueError:
            uploads.release(runs_dir, active=_active_corpora())
            raise
        if received:
            uploads.forget_original(received)
        return run_curves.status_markdown(run.snapshot())

    def _active_corpora() -> list[str]:
        run = manager.current
        return [run.cfg.data.corpus] if run is not None and run.active else []

    def run_status() -> dict | None:
        """The live run's snapshot: status, step, losses, accuracy, probe predictions (None before any run).
        Checkpoints are named as the model box names them ("run:<id>/checkpoint"), never by their server folder."""
        snap = snapshot()
        if snap is None:
            return None
        status = dataclasses.asdict(snap)
        status["checkpoints"] = [_shown_checkpoint(p) for p in snap.checkpoints]
        status["last_checkpoint"] = _shown_checkpoint(snap.last_checkpoint)
        return status

    def _shown_checkpoint(path: str) -> str:
        try:
            return policy.run_reference(path) if path else ""
        except ValueError:  # not under runs_dir (cannot happen for the app's runs): its name only
            return Path(path).name

    def check_owner(token: str, action: str) -> None:
        """Public servers: only the run's owner (or, to stop it, the admin) may control it."""
        run = manager.current
        if public is not None and run is not None and not run.may_control(token, admin=action == "stop" and is_admin(token)):
            raise ValueError(NOT_YOURS)

    @user_errors
    def control(action: str, token: str = ""):
        if manager.current is None:
            raise ValueError("There is no run to control; press Start first.")
        check_owner(token, action)
        getattr(manager, action)()
        return run_curves.status_markdown(snapshot())

    def pause_run(owner_token: str = "") -> str:
        """Pause the live run (on a public server: pass the owner_token it was started with)."""
        return control("pause", owner_token)

    def resume_run(owner_token: str = "") -> str:
        """Resume the paused run (on a public server: pass the owner_token it was started with)."""
        return control("resume", owner_token)

    def stop_run(owner_token: str = "") -> str:
        """Stop the live run and save its checkpoint (public server: its owner_token, or the admin token)."""
        return control("stop", owner_token)

    @user_errors
    def update_probe(text: str, token: str = ""):
        if manager.current is None or not manager.current.active:
            raise ValueError("No run is active; the probe is used by the next run you start.")
        check_owner(token, "probe")
        manager.current.set_probe_text(text)
        return run_curves.status_markdown(snapshot()) + "  \nProbe changed: it runs at the next step."

    @user_errors
    def download_csv(run_id: str) -> str:
        """A run's metrics as a CSV file (step, tokens, wall_s, train and held-out metrics)."""
        if not run_id:
            raise ValueError("Pick a run first.")
        snap = snapshot()
        data = snap if snap is not None and snap.run_id == run_id else history.load_run(runs_dir, run_id).snapshot
        path = export_dir / f"{data.run_id}-metrics.csv"
        storage.write_text(path, metrics_csv(data))  # atomic: two downloads of one run never interleave
        return str(path)

    @user_errors
    def delete_run(run_id: str, token: str = ""):
        if not run_id:
            raise ValueError("Pick a run first.")
        if public is not None and not (is_admin(token) or history.is_owner(runs_dir, run_id, token)):
            raise ValueError("Only the browser that started this run (or this server's administrator) may delete it.")
        current = manager.current
        if current is not None and current.active and current.run_id == run_id:
            raise ValueError("That run is still active; stop it before deleting it.")
        history.delete_run(runs_dir, run_id)
        from bertdemo.pretrain import uploads

        uploads.release(runs_dir, active=_active_corpora())  # its uploaded corpus and token cache, if unused now
        choices = run_choices()
        return (gr.update(choices=choices, value=None), gr.update(choices=choices, value=[]),
                gr.update(choices=checkpoint_choices(), value=""), gr.update(choices=labelled_choices(store)))

    def time_estimate(*values) -> str:
        """How long the form's run would take on this machine (and whether a public server allows it)."""
        from bertdemo.pretrain import estimate

        try:
            settings = {name: value for name, value in zip(form_names, values)
                        if name not in ("upload", "corpus", "resume_from", "probe_text")}
            cfg = config_from_settings(settings, runs_dir)
            _ = manager.current  # the training engine (torch) is in before anything measures this machine
            seconds = estimate.estimate_seconds(cfg)
        except ValueError:
            return ""
        text = f"Estimated time on this machine: **{estimate.duration_text(seconds)}**"
        if public is not None and seconds > public.max_seconds:
            text += f" — more than this server's {public.max_minutes:g}-minute limit: lower Steps."
        return text

    def gpu_burst_from_page(token: str, steps: float):
        yield from gpu_burst_api(int(steps or 0), token)

    def gpu_burst_api(steps: int, owner_token: str = "") -> Iterator[str]:
        """Move the run to a GPU for `steps` steps, then on with it on the CPU (ZeroGPU Spaces; only the
        run's owner_token). Streams the run's status."""
        token = owner_token
        try:
            run = manager.current
            if run is None:
                raise ValueError("There is no run yet: start one, then give it a GPU burst.")
            if not run.may_control(token):
                raise ValueError(NOT_YOURS)
            from bertdemo.pretrain import gpu_burst  # torch: loaded only when a burst starts

            for _ in gpu_burst.run_burst(manager, int(steps), device="cuda"):
                yield run_curves.status_markdown(snapshot())
            yield run_curves.status_markdown(snapshot())
        except ValueError as exc:
            raise gr.Error(str(exc), duration=None) from exc

    def set_probe_api(text: str, owner_token: str = "") -> str:
        """Use a new probe sentence (one or more [MASK]) in the live run (public server: its owner_token)."""
        return update_probe(text, owner_token)

    def delete_run_api(run_id: str, owner_token: str = "") -> str:
        """Delete an ended run's folder (public server: only with the owner_token that started it, or the admin token)."""
        delete_run(run_id, owner_token)
        return f"Deleted run {run_id}."

    @user_errors
    def run_order_probe(run_id: str, text: str):
        if not run_id:
            raise ValueError("Pick a run first.")
        loaded = store.get(str(history.run_dir(runs_dir, run_id) / "checkpoint"))
        result = probe_engine.order_probe(loaded, text)

        def top(res) -> str:
            return ", ".join(f"{c.text} {c.prob:.1%}" for c in res.masks[0].candidates)
        verdict = ("the same state: this model is **order-blind**" if result.order_blind
                   else "different states: this model **uses word order**")
        return (f"| | sentence | top-5 at the mask |\n|---|---|---|\n| original | {result.text} | {top(result.original)} |\n"
                f"| shuffled | {result.shuffled} | {top(result.shuffled_result)} |\n\n"
                f"Largest difference of the [MASK]'s final hidden state: {result.max_state_difference:.2e} — "
                f"{verdict}. Model: run {run_id}.")

    view = [compare, smoothing, log_y, x_axis]
    outputs = [status, plot, probe_table, model_box, resume, compare, seen]
    preset.change(lambda p: gr.update(visible=p == CUSTOM), preset, custom_row, api_visibility="private")
    gr.on([c.change for c in (preset, layers, hidden, heads, ffn)], show_params,
          [preset, layers, hidden, heads, ffn], params, api_visibility="private")
    start.click(start_from_page, [owner, *form.values()], [status, owner], api_visibility="private")
    timed = (preset, layers, hidden, heads, ffn, steps, batch_size, seq_len, schedule, eval_every, mlm_prob)
    gr.on([tab.select, *(c.change for c in timed)], time_estimate, list(form.values()), estimate_box,
          api_visibility="private", trigger_mode="always_last", show_progress="hidden")
    with tab:  # API-only endpoints live in the tab (a gr.Tabs holds only tabs)
        gr.api(start_run, api_name="start_run")
        gr.api(run_status, api_name="run_status")
    # the buttons pass this browser's owner token; API callers pass theirs to the gr.api endpoints below
    pause.click(pause_run, owner, status, api_name="pause_from_page", api_visibility="private")
    resume_btn.click(resume_run, owner, status, api_name="resume_from_page", api_visibility="private")
    stop.click(stop_run, owner, status, api_name="stop_from_page", api_visibility="private")
    burst.click(gpu_burst_from_page, [owner, burst_steps], status, api_visibility="private", concurrency_limit=1)
    set_probe.click(update_probe, [probe, owner], status, api_name="set_probe_from_page", api_visibility="private")
    with tab:
        gr.api(pause_run, api_name="pause_run")
        gr.api(resume_run, api_name="resume_run")
        gr.api(stop_run, api_name="stop_run")
        gr.api(set_probe_api, api_name="set_probe")
        gr.api(gpu_burst_api, api_name="gpu_burst", concurrency_limit=1)
    timer.tick(draw, [seen, *view], outputs, api_visibility="private", show_progress="hidden")
    gr.on([c.change for c in view], user_errors(curves), view, plot, api_visibility="private")
    run_pick.change(lambda run_id: download_csv(run_id) if run_id else None, run_pick, csv_button,
                    api_visibility="private")
    with tab:
        gr.api(download_csv, api_name="run_metrics_csv")
    run_pick.focus(lambda: gr.update(choices=run_choices()), None, run_pick, api_visibility="private")
    delete.click(delete_run, [run_pick, owner], [run_pick, compare, resume, model_box], api_name="delete_from_page",
                 api_visibility="private")
    with tab:
        gr.api(delete_run_api, api_name="delete_run")
    order_button.click(run_order_probe, [run_pick, order_text], order_out, api_name="order_probe")

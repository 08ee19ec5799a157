"""The Pretrain tab: configure a small BERT, start masked-LM pretraining, watch it learn live.

The run lives in a background thread owned by :mod:`bertdemo.pretrain`; this module only
builds a ``TrainConfig`` from the form, calls start/pause/resume/stop, and polls
``snapshot()`` with a ``gr.Timer`` to redraw. Every open page watches the same run, and a
reloaded page reattaches to it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gradio as gr

from bertdemo.viz import run_curves
from bertdemo.models.store import ModelStore
from bertdemo.pretrain import (
    CUSTOM, PRESETS, TrainConfig, get_manager, list_checkpoints, param_count, resume_config,
)
from bertdemo.pretrain.checkpoint import read_state
from bertdemo.ui.common import user_errors

POLL_SECONDS = 1.0
D = TrainConfig()  # the form starts at the engine's defaults
CORPORA = [
    ("Wikipedia summaries (embedded, offline)", "wiki"),
    ("TinyStories (needs the dataset hub)", "tinystories"),
    ("My file (.txt or .jsonl, upload below)", "upload"),
]


def _config(values: dict, runs_dir: str) -> TrainConfig:
    """The form's values -> a validated TrainConfig (ValueError with a clear message otherwise).

    Resuming takes the model, corpus and block length from the checkpoint; Steps is the new total.
    """
    if values["resume"]:
        done = int(read_state(values["resume"]).get("step", 0))
        if int(values["steps"]) <= done:
            raise ValueError(f"That checkpoint is at step {done}; set Steps above {done} to continue training.")
        return resume_config(values["resume"], steps=int(values["steps"]), probe_text=values["probe"],
                             runs_dir=runs_dir)
    corpus = values["corpus"]
    if corpus == "upload":
        upload = values["upload"]
        if not upload:
            raise ValueError("Upload a .txt or .jsonl file first, or choose another corpus.")
        path = Path(upload if isinstance(upload, str) else upload.name)
        if path.suffix.lower() not in {".txt", ".jsonl"}:
            raise ValueError(f"{path.name} is not a .txt or .jsonl file.")
        corpus = str(path)
    cfg = TrainConfig(
        preset=values["preset"],
        layers=int(values["layers"]), hidden=int(values["hidden"]),
        heads=int(values["heads"]), ffn=int(values["ffn"]),
        corpus=corpus,
        seq_len=int(values["seq_len"]),
        batch_size=int(values["batch_size"]),
        steps=int(values["steps"]),
        lr=float(values["lr"]),
        warmup_steps=int(values["warmup"]),
        mlm_probability=float(values["mlm_prob"]),
        mask_replace_prob=float(values["mask_prob"]),
        random_replace_prob=float(values["random_prob"]),
        nsp=bool(values["nsp"]),
        eval_every=int(values["eval_every"]),
        checkpoint_every=int(values["ckpt_every"]),
        probe_text=values["probe"],
        seed=int(values["seed"]),
        runs_dir=runs_dir,
    )
    cfg.validate()
    return cfg


def build(store: ModelStore, model_box: gr.Dropdown, runs_dir: str) -> None:
    """Lay out the tab inside the current Blocks context and wire its events."""
    manager = get_manager(runs_dir)

    def snapshot():
        run = manager.current
        return None if run is None else run.snapshot()

    def checkpoint_choices() -> list[tuple[str, str]]:
        return [("— start from scratch —", "")] + [(label, str(path)) for label, path in list_checkpoints(runs_dir)]

    def draw(seen: dict | None):
        """Redraw only when the run moved on; refresh model lists when a new checkpoint appears."""
        snap = snapshot()
        key = None if snap is None else (snap.run_id, snap.status, snap.step, len(snap.eval_steps),
                                         snap.message, round(snap.prepare_fraction, 2), len(snap.probe))
        seen = seen or {}
        if key is not None and key == seen.get("key"):
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), seen
        ckpt = snap.last_checkpoint if snap else ""
        refresh = ckpt and ckpt != seen.get("ckpt")
        new_seen = {"key": key, "ckpt": ckpt}
        return (
            run_curves.status_markdown(snap),
            run_curves.training_curves(snap),
            run_curves.probe_rows(snap),
            gr.update(choices=store.choices()) if refresh else gr.skip(),
            gr.update(choices=checkpoint_choices()) if refresh else gr.skip(),
            new_seen,
        )

    def show_params(preset, layers, hidden, heads, ffn):
        try:
            cfg = TrainConfig(preset=preset, layers=int(layers), hidden=int(hidden), heads=int(heads), ffn=int(ffn))
            cfg.validate()
            n_layers, n_hidden, n_heads, n_ffn = cfg.model_shape()
            return (f"**{param_count(cfg) / 1e6:.2f} M parameters** — {n_layers} layers, hidden {n_hidden}, "
                    f"{n_heads} heads, FFN {n_ffn}; uncased WordPiece vocabulary (30,522)")
        except ValueError as exc:
            return f"⚠️ {exc}"

    with gr.Tab("Pretrain", id="pretrain"):
        gr.Markdown(
            "Train a small BERT **from scratch** on masked-word prediction and watch it learn. "
            "The run continues in the background while you use the other tabs; every page open "
            "on this server sees the same run."
        )
        with gr.Row():
            with gr.Column(scale=1, min_width=320):
                preset = gr.Dropdown([*PRESETS, CUSTOM], value=D.preset, label="Model size")
                with gr.Row(visible=False) as custom_row:
                    layers = gr.Number(D.layers, label="layers", precision=0, minimum=1, maximum=24)
                    hidden = gr.Number(D.hidden, label="hidden", precision=0, minimum=8, maximum=1024)
                    heads = gr.Number(D.heads, label="heads", precision=0, minimum=1, maximum=16)
                    ffn = gr.Number(D.ffn, label="FFN", precision=0, minimum=8, maximum=4096)
                params = gr.Markdown(show_params(D.preset, D.layers, D.hidden, D.heads, D.ffn))
                corpus = gr.Radio(CORPORA, value="wiki", label="Corpus")
                upload = gr.File(label="Your text (.txt or .jsonl with a 'text' field)",
                                 file_types=[".txt", ".jsonl"], type="filepath")
                with gr.Accordion("Training settings", open=False):
                    seq_len = gr.Slider(16, 512, value=D.seq_len, step=16, label="Block length (tokens)")
                    batch_size = gr.Slider(2, 256, value=D.batch_size, step=2, label="Batch size (blocks per step)")
                    steps = gr.Number(D.steps, label="Steps", precision=0, minimum=1)
                    lr = gr.Number(D.lr, label="Peak learning rate (AdamW, linear warmup + decay)")
                    warmup = gr.Number(D.warmup_steps, label="Warmup steps", precision=0, minimum=0)
                    mlm_prob = gr.Slider(0.05, 0.5, value=D.mlm_probability, step=0.01, label="Masking rate")
                    mask_prob = gr.Slider(0, 1, value=D.mask_replace_prob, step=0.05, label="…of which → [MASK]")
                    random_prob = gr.Slider(0, 1, value=D.random_replace_prob, step=0.05, label="…of which → random token (rest kept)")
                    nsp = gr.Checkbox(D.nsp, label="Next-sentence prediction (NSP) too")
                    eval_every = gr.Number(D.eval_every, label="Evaluate every N steps", precision=0, minimum=1)
                    ckpt_every = gr.Number(D.checkpoint_every, label="Checkpoint every N steps (0: only at the end)", precision=0, minimum=0)
                    seed = gr.Number(D.seed, label="Seed", precision=0)
                    resume = gr.Dropdown(checkpoint_choices(), value="", label="Resume from a checkpoint", allow_custom_value=True,
                                         info="Model, corpus and block length come from the checkpoint; Steps is the new total.")
                with gr.Row():
                    start = gr.Button("Start", variant="primary", elem_id="pt-start")
                    pause = gr.Button("Pause", elem_id="pt-pause")
                    resume_btn = gr.Button("Resume", elem_id="pt-resume")
                    stop = gr.Button("Stop", variant="stop", elem_id="pt-stop")
            with gr.Column(scale=2):
                status = gr.Markdown(run_curves.status_markdown(None), elem_id="pt-status")
                curves = gr.Plot(run_curves.training_curves(None), label="Live metrics", elem_id="pt-curves")
                with gr.Row():
                    probe = gr.Textbox(D.probe_text, label="Probe sentence (one or more [MASK])", scale=4)
                    set_probe = gr.Button("Use this probe", scale=1)
                probe_table = gr.Dataframe(headers=run_curves.PROBE_HEADERS, label="What the model guesses for the probe, at each evaluation (newest first)", interactive=False, wrap=True, elem_id="pt-probe")
        seen = gr.State(None)
        timer = gr.Timer(POLL_SECONDS)
        snapshot_json = gr.JSON(visible=False)
        refresh = gr.Button("Refresh", visible=False)

    form = dict(preset=preset, layers=layers, hidden=hidden, heads=heads, ffn=ffn, corpus=corpus, upload=upload,
                seq_len=seq_len, batch_size=batch_size, steps=steps, lr=lr, warmup=warmup, mlm_prob=mlm_prob,
                mask_prob=mask_prob, random_prob=random_prob, nsp=nsp, eval_every=eval_every,
                ckpt_every=ckpt_every, probe=probe, seed=seed, resume=resume)
    names, fields = list(form), list(form.values())

    @user_errors
    def start_run(preset, layers, hidden, heads, ffn, corpus, upload, seq_len, batch_size, steps, lr, warmup,
                  mlm_prob, mask_prob, random_prob, nsp, eval_every, ckpt_every, probe, seed, resume):
        values = dict(locals())
        cfg = _config({name: values[name] for name in names}, runs_dir)
        run = manager.start(cfg)
        return run_curves.status_markdown(run.snapshot())

    @user_errors
    def control(action: str):
        if manager.current is None:
            raise ValueError("There is no run to control; press Start first.")
        getattr(manager, action)()
        return run_curves.status_markdown(snapshot())

    @user_errors
    def update_probe(text: str):
        if manager.current is None or not manager.current.active:
            raise ValueError("No run is active; the probe is used by the next run you start.")
        manager.current.set_probe_text(text)
        return run_curves.status_markdown(snapshot())

    outputs = [status, curves, probe_table, model_box, resume, seen]
    preset.change(lambda p: gr.update(visible=p == CUSTOM), preset, custom_row, api_visibility="private")
    gr.on([c.change for c in (preset, layers, hidden, heads, ffn)], show_params,
          [preset, layers, hidden, heads, ffn], params, api_visibility="private")
    start.click(start_run, fields, status, api_name="start_run")
    pause.click(lambda: control("pause"), None, status, api_name="pause_run")
    resume_btn.click(lambda: control("resume"), None, status, api_name="resume_run")
    stop.click(lambda: control("stop"), None, status, api_name="stop_run")
    set_probe.click(update_probe, probe, status, api_name="set_probe")
    timer.tick(draw, seen, outputs, api_visibility="private", show_progress="hidden")
    refresh.click(
        lambda: None if snapshot() is None else dataclasses.asdict(snapshot()), None, snapshot_json,
        api_name="run_status",
    )

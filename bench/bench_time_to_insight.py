"""Time to insight: what the default live pretraining run shows a learner after 1, 2 and 5 minutes.

    python bench/bench_time_to_insight.py                       # the Pretrain tab's defaults
    python bench/bench_time_to_insight.py --set lr=0.001 --set seq_len=128 --label old

Runs `run_training` with the settings the Pretrain tab starts with (`TrainConfig()`; the app's
thread count: all cores but one, left to the web server), timed from the moment Start is pressed
(corpus preparation included, cache warm as on a second run). At each mark it reads what the page
shows: the latest held-out masked-LM loss and the probe sentence's top-5 at each [MASK].
``--set NAME=VALUE`` overrides a setting (to measure other defaults); ``--json`` keeps the curve.
Prints its figures and, last, the held-out loss at each mark.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertdemo.pretrain.config import TrainConfig, leaf_fields  # noqa: E402
from bertdemo.pretrain.trainer import RunControl, run_training  # noqa: E402
from bertdemo.pretrain.metrics import MetricsBuffer  # noqa: E402

KINDS = {f.name: str(f.type) for _, f in leaf_fields()}


def parse_setting(text: str) -> tuple[str, object]:
    name, _, value = text.partition("=")
    kind = KINDS.get(name)
    if kind is None:
        raise SystemExit(f"unknown setting {name!r}")
    return name, {"int": int, "float": float, "bool": lambda v: v.lower() in ("1", "true", "yes")}.get(kind, str)(value)


def shown(predictions) -> str:
    """Top-5 tokens at each [MASK], as one line ("the , . of and | ...")."""
    return " | ".join(" ".join(token for token, _ in mask) for mask in predictions)


def top5(snap) -> str:
    return shown(snap.probe[-1][1]) if snap.probe else "-"


def ask_probe(metrics: MetricsBuffer, control: RunControl, text: str, timeout: float = 60.0) -> str:
    """The run's top-5 for another probe sentence now: set it and ask, as the page's probe box does."""
    before = len(metrics.get("probe"))
    metrics.update(probe_text=text)
    control.probe_event.set()
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        answers = [preds for _, preds, sentence in metrics.snapshot().probe[before:] if sentence == text]
        if answers:
            return shown(answers[-1])
        time.sleep(0.05)
    return "-"


def plot(json_files: list[str], path: str) -> None:
    """Held-out loss against minutes since Start, one line per --json result, as a PNG."""
    import plotly.graph_objects as go

    from bench.plot import save_png

    fig = go.Figure()
    for name in json_files:
        data = json.loads(Path(name).read_text(encoding="utf-8"))
        curve = data["curve"]
        fig.add_scatter(x=[c["t"] / 60 for c in curve], y=[c["loss"] for c in curve], mode="lines+markers",
                        name=data["label"])
    fig.update_layout(title="Default live run on 2 CPU cores: held-out masked-LM loss",
                      xaxis_title="minutes after Start", yaxis_title="held-out loss")
    save_png(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", default="1,2,5", help="marks, in minutes after Start")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a default")
    parser.add_argument("--label", default="defaults")
    parser.add_argument("--json", default="", help="write the held-out curve and the marks here")
    parser.add_argument("--also-probe", action="append", default=[], metavar="SENTENCE",
                        help="at each mark, also ask the run this probe sentence (as the page's probe box does)")
    parser.add_argument("--keep", default="", help="keep the run's checkpoint (written at the last mark) here")
    parser.add_argument("--plot", nargs="+", metavar=("PNG", "JSON"), help="draw saved --json results, no run")
    args = parser.parse_args()
    if args.plot:
        plot(args.plot[1:], args.plot[0])
        return
    marks = [float(m) * 60 for m in args.minutes.split(",")]
    overrides = dict(parse_setting(s) for s in args.set)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig().replace(runs_dir=tmp, **overrides)
        import torch

        print(f"{args.label}: cpus={os.cpu_count()} torch={torch.__version__} settings: "
              + ", ".join(f"{k}={v}" for k, v in cfg.flat().items()
                          if k in ("preset", "corpus", "seq_len", "batch_size", "steps", "lr", "warmup_steps",
                                   "mlm_probability", "eval_every", "probe_text", "num_threads", "precision")
                          or k in overrides), flush=True)
        metrics = MetricsBuffer(probe_text=cfg.monitor.probe_text)
        control = RunControl()
        start = time.perf_counter()
        thread = threading.Thread(target=run_training, daemon=True, name="pretrain",
                                  kwargs=dict(cfg=cfg, metrics=metrics, checkpoint_dir=Path(args.keep or Path(tmp) / "run"),
                                                  control=control))
        thread.start()
        curve: list[dict] = []
        rows: list[dict] = []
        seen = 0
        for mark in marks:
            while time.perf_counter() - start < mark:
                snap = metrics.snapshot()
                for i in range(seen, len(snap.eval_loss)):
                    curve.append({"t": round(time.perf_counter() - start, 2), "step": snap.eval_steps[i],
                                  "loss": snap.eval_loss[i], "acc": snap.mlm_acc[i]})
                seen = len(snap.eval_loss)
                if snap.status in ("failed", "finished"):
                    break
                time.sleep(0.25)
            snap = metrics.snapshot()
            row = {"minutes": mark / 60, "step": snap.step, "tokens_per_s": round(snap.tokens_per_s),
                   "eval_step": snap.eval_steps[-1] if snap.eval_steps else None,
                   "heldout_loss": round(snap.eval_loss[-1], 3) if snap.eval_loss else None,
                   "mlm_acc": round(snap.mlm_acc[-1], 3) if snap.mlm_acc else None, "probe": top5(snap)}
            row["also"] = {text: ask_probe(metrics, control, text) for text in args.also_probe}
            if args.also_probe:
                metrics.update(probe_text=cfg.monitor.probe_text)
            rows.append(row)
            print(f"{row['minutes']:.0f} min: step {row['step']:5d}, {row['tokens_per_s']:7,d} tokens/s, held-out loss "
                  f"{row['heldout_loss']} (step {row['eval_step']}), accuracy {row['mlm_acc']}; probe top-5: "
                  f"{row['probe']}", flush=True)
            for text, guess in row["also"].items():
                print(f"        {text}: {guess}", flush=True)
        control.stop_event.set()
        thread.join(timeout=120)
    if args.json:
        Path(args.json).write_text(json.dumps({"label": args.label, "settings": cfg.flat(), "marks": rows,
                                               "curve": curve}, indent=1), encoding="utf-8")
    print(f"{args.label}: held-out loss " + ", ".join(f"{r['heldout_loss']} at {r['minutes']:.0f} min" for r in rows))


if __name__ == "__main__":
    main()

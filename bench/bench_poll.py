"""What the Pretrain tab's 1-second poll costs the server and sends, at step 5,000 with two compared runs.

    python bench/bench_poll.py [--runs-dir /tmp/poll-runs] [--steps 5000] [--repeats 30]

Trains three small real runs to ``--steps`` (a 1-layer, hidden-32 model on the first ``--docs`` embedded
Wikipedia summaries, so that its held-out evaluation is short; the tab's logging and evaluation cadence:
train loss every 10 steps, held-out questions and probes every 25; kept in ``--runs-dir`` and reused by
the next call); the newest is then continued for one step as the service's live run, its history
of ``--steps`` steps restored (what a page polls at that step). Then
times the tab's poll (:func:`bertdemo.ui.pretrain_tab.poll_view` plus Gradio's own postprocessing of each
output it sends) on the live run compared with the two earlier ones:

* everything redrawn (a page's first poll, or a change of view): status, timeline, curves, probe ranks
  and probe table;
* a new log point (the curves redrawn, the status line);
* nothing changed (the page receives nothing).

Bytes are the JSON of the outputs as Gradio sends them (before the event stream's framing). Prints the
median and the 10th-90th percentile of the server time, and the bytes, per case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gradio as gr

from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain import TrainConfig
from bertdemo.pretrain.service import PretrainService
from bertdemo.runs.service import RunService
from bertdemo.settings import ServerSettings
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.ui.pretrain_tab import poll_view
from bertdemo.viz import run_curves

VIEW = dict(smoothing=0.6, log_y=False, x_axis="step")
COMPONENTS = {"status": gr.Markdown(), "timeline": gr.Markdown(), "plot": PlotlyFigure(), "ranks": PlotlyFigure(),
              "table": gr.Dataframe(headers=run_curves.PROBE_HEADERS)}


def config(service: PretrainService, corpus: str, steps: int, lr: float, resume_from: str = "") -> TrainConfig:
    return TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                 intermediate_size=64, corpus=corpus, seq_len=64, batch_size=8, steps=steps, lr=lr,
                                 warmup_steps=50, log_every=10, eval_every=25, checkpoint_every=0, device="cpu",
                                 num_threads=1, runs_dir=str(service.runs_dir), resume_from=resume_from)


def train_here(runs_dir: str, corpus: str, steps: int, lr: float) -> str:
    """A run trained in a process of its own (the app's run thread yields the CPU to the page: on a
    busy machine that takes long), saved as a run of ``runs_dir``."""
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training

    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-poll-lr{lr:g}"
    service = PretrainService(RunService(ServerSettings.build(runs_dir=runs_dir)))
    status = run_training(config(service, corpus, steps, lr), metrics=MetricsBuffer(run_id=run_id),
                          run_folder=service.runs_dir / run_id, run_info={"run_id": run_id})
    print(f"  {run_id}: {status}", flush=True)
    return run_id


def train(service: PretrainService, corpus: str, steps: int, lr: float, resume_from: str = "") -> str:
    run = service.start(config(service, corpus, steps, lr, resume_from))
    while not run.join(5.0):
        snap = run.snapshot()
        print(f"  {snap.run_id}: step {snap.step:,}/{steps:,}", end="\r", flush=True)
    print(f"  {run.run_id}: {run.status} at step {run.snapshot().step:,}          ")
    return run.run_id


def sent(updates: dict) -> int:
    """Bytes of the outputs a poll sends, serialised as Gradio serialises them."""
    total = 0
    for name, value in updates.items():
        if name in COMPONENTS:
            out = COMPONENTS[name].postprocess(value)
            payload = out.model_dump() if hasattr(out, "model_dump") else out
            total += len(json.dumps(payload, separators=(",", ":")))
    return total


def measure(service: PretrainService, compare: list[str], seen: dict | None, repeats: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        updates, _ = poll_view(service, seen, compare, **VIEW)
        size = sent(updates)
        times.append((time.perf_counter() - start) * 1000)
    return times, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="/tmp/bertdemo-poll-runs")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--docs", type=int, default=300)
    args = parser.parse_args()
    service = PretrainService(RunService(ServerSettings.build(runs_dir=args.runs_dir)))
    corpus = Path(args.runs_dir) / ".corpus" / "wiki.jsonl"  # a dot folder: not a run
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[: args.docs]), encoding="utf-8")
    done = service.list_runs()  # newest first
    todo = (3e-3, 1e-3, 2e-3)[len(done):]
    if todo:
        print(f"training {len(todo)} runs at once…")
        with ProcessPoolExecutor(len(todo)) as pool:
            list(pool.map(train_here, [args.runs_dir] * len(todo), [str(corpus)] * len(todo),
                          [args.steps] * len(todo), todo))
    live, *earlier = service.list_runs()[:3]
    print(f"continuing {live} as the live run…")
    train(service, str(corpus), args.steps + 1, 2e-3, resume_from=service.run_checkpoint(live))
    snap = service.snapshot()
    print(f"live run at step {snap.step:,}: {len(snap.steps)} train points, {len(snap.eval_steps)} evaluations, "
          f"{len(snap.probe_tracks)} probes; compared with {len(earlier)} earlier runs")
    _, full_seen = poll_view(service, None, earlier, **VIEW)
    cases = {
        "everything redrawn": None,
        "new log point (curves + status)": {k: v for k, v in full_seen.items() if k not in ("curves", "status")},
        "nothing changed": full_seen,
    }
    for name, seen in cases.items():
        times, size = measure(service, earlier, seen, args.repeats)
        q = statistics.quantiles(times, n=10)
        print(f"{name:34s} server {statistics.median(times):6.1f} ms (p10 {q[0]:.1f}, p90 {q[-1]:.1f}) · "
              f"sent {size / 1024:5.1f} KB")


if __name__ == "__main__":
    main()

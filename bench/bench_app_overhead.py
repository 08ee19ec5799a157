"""The app's own overhead on /fill_mask, idle or while a CPU pretraining run trains.

    python bench/bench_app_overhead.py [--repeats 40] [--plot docs/benchmarks/app_overhead.png]
    python bench/bench_app_overhead.py --while-training [--blocks 4 --per-block 15] [--plot ...]
    python bench/bench_app_overhead.py --while-finetuning [--blocks 4 --per-block 15]

Launches ``python app.py --offline`` (its default model is then the embedded masked-LM) and
loads the same model here. Default mode, repeat by repeat in turn: the bare
``fill_mask.predict`` in this process; ``/fill_mask`` through ``gradio_client``; ``/fill_mask``
through the page's own queue protocol (no client-library polling); and ``/run_status``, an
endpoint that does no work, through both — the floor of a round trip. Also timed here: building
the bar chart and Gradio's serialisation of it. Overhead = round trip − bare predict (p50).

``--while-training``: starts a bert-tiny run through ``/start_run`` and alternates blocks of
``/fill_mask`` calls (gradio_client) with the run paused (idle) and resumed (training), so shared
load hits both; the ratio is p95 while training / p95 idle. ``--while-finetuning``: the same with a
fine-tuning run of the embedded model (``/start_finetune``) instead.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import FILL_MASK_ARGS, App, QueueSession, latency_bars, percentile, spread, start_training


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def overhead(app: App, repeats: int) -> dict[str, list[float]]:
    import gradio as gr
    import torch

    from bertdemo.explore import fill_mask
    from bertdemo.models import embedded
    from bertdemo.models.store import load_masked_lm
    from bertdemo.viz import bars

    loaded = load_masked_lm(embedded.EMBEDDED_MLM_NAME, "cpu")
    client = app.client()
    page = QueueSession(app.url)
    a = FILL_MASK_ARGS
    page_args = [a["text"], a["text_pair"], a["model"], a["top_k"], a["targets"], a["second_model"],
                 a["whole_words"], a["fast"]]
    plot = gr.Plot()
    result = fill_mask.predict(loaded, a["text"], top_k=a["top_k"])
    worker = ThreadPoolExecutor(1)  # the app runs predict in a worker thread too (torch threads behave differently
    # in the main thread: on a loaded 2-core machine its 2-thread forwards stall for 100s of ms)
    sides = {
        "bare predict (worker thread)": lambda: worker.submit(fill_mask.predict, loaded, a["text"],
                                                              top_k=a["top_k"]).result(),
        "/fill_mask via gradio_client": lambda: client.predict(**a, api_name="/fill_mask"),
        "/fill_mask via queue protocol": lambda: page.call("fill_mask", page_args),
        "/run_status via gradio_client": lambda: client.predict(api_name="/run_status"),
        "/run_status via queue protocol": lambda: page.call("run_status", []),
        "bar chart build": lambda: bars.fill_mask_figure(result.masks, ["model"]),
        "bar chart serialisation": lambda: plot.postprocess(bars.fill_mask_figure(result.masks, ["model"])),
    }
    print(f"torch threads here {torch.get_num_threads()} (the app's default too); {repeats} calls each")
    for fn in sides.values():  # warm-up
        fn()
    times = {name: [] for name in sides}
    for _ in range(repeats):
        for name, fn in sides.items():
            times[name].append(timed(fn))
    page.close()
    worker.shutdown()
    return times


FINETUNE = {"init": "embedded", "epochs": 20, "time_budget_s": 3600}  # the embedded model on the topic task


def while_training(app: App, blocks: int, per_block: int, finetune: bool = False) -> dict[str, list[float]]:
    client = app.client()
    print(client.predict(FINETUNE, api_name="/start_finetune") if finetune else start_training(client))
    if finetune:  # past loading and the first evaluation: the run is training
        while (client.predict(api_name="/run_status") or {}).get("step", 0) < 2:
            time.sleep(1)
    times = {"idle (run paused)": [], "while training": []}
    try:
        for _ in range(blocks):
            for name, action in (("idle (run paused)", "/pause_run"), ("while training", "/resume_run")):
                client.predict("", api_name=action)
                time.sleep(2)  # let the pause / resume take hold
                for _ in range(per_block):
                    times[name].append(timed(lambda: client.predict(**FILL_MASK_ARGS, api_name="/fill_mask")))
        status = client.predict(api_name="/run_status")
        print(f"the run trained to step {status['step']} ({status['status']})")
    finally:
        client.predict("", api_name="/stop_run")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--while-training", action="store_true", help="idle vs training p95 instead of the overhead")
    parser.add_argument("--while-finetuning", action="store_true",
                        help="as --while-training, with a fine-tuning run of the embedded model")
    parser.add_argument("--blocks", type=int, default=4, help="--while-training: paused/resumed block pairs")
    parser.add_argument("--per-block", type=int, default=15, help="--while-training: calls per block")
    parser.add_argument("--plot", default="", help="save a PNG of the figures here")
    args = parser.parse_args()
    with App() as app:
        app.wait_for_model()
        busy = args.while_training or args.while_finetuning
        times = (while_training(app, args.blocks, args.per_block, args.while_finetuning) if busy
                 else overhead(app, args.repeats))
    print(f"\n{'':32s} {'p50 / p95 ms (min–max)':>28s}")
    for name, values in times.items():
        print(f"{name:32s} {spread(values)}")
    if args.plot:
        save_plot(times, args.plot, "Fill-Mask through the app while a CPU run trains" if args.while_training
                  else "Fill-Mask through the app vs the bare prediction")
        print(f"plot: {args.plot}")
    if args.while_training or args.while_finetuning:
        idle, busy = (percentile(times[k], 95) for k in ("idle (run paused)", "while training"))
        print(f"ratio (p95 while training / p95 idle): {busy / idle:.2f}x (target ≤ 2x)")
        return
    p50 = {name: statistics.median(values) for name, values in times.items()}
    bare = p50["bare predict (worker thread)"]
    print(f"no-work round trip (/run_status): {p50['/run_status via queue protocol']:.1f} ms by the queue protocol, "
          f"{p50['/run_status via gradio_client']:.1f} ms through gradio_client (its result loop polls every 50 ms)")
    print(f"ratio (app overhead at p50 = round trip − bare predict): "
          f"{p50['/fill_mask via queue protocol'] - bare:.1f} ms by the page's queue protocol, "
          f"{p50['/fill_mask via gradio_client'] - bare:.1f} ms through gradio_client (target ≤ 50 ms)")


def save_plot(times: dict[str, list[float]], path: str, title: str) -> None:
    from bench.plot import save_png

    save_png(latency_bars(times, title), path, height=120 + 45 * len(times))


if __name__ == "__main__":
    main()

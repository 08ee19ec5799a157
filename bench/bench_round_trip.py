"""The Fill-Mask round trip a page feels, for two checkouts measured in turns on the same machine.

    python bench/bench_round_trip.py --app-dir OLD --label before --app-dir . --label after [--turns 3 --calls 30]

Each turn launches each checkout's ``python app.py --offline`` (embedded masked-LM), waits for the model,
then times ``--calls`` calls of ``/fill_mask`` through the page's own queue protocol (no client-library
polling). Turns alternate the checkouts so shared load hits both alike. Prints p50 / p95 (min–max) per
checkout and, last, the ratio of the second's p50 to the first's (≤ 1: not slower).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import FILL_MASK_ARGS, App, QueueSession, spread


def fill_mask_times(app_dir: Path, calls: int) -> list[float]:
    with App(app_dir=app_dir) as app:
        app.wait_for_model()
        page = QueueSession(app.url)
        a = FILL_MASK_ARGS
        data = [a["text"], a["text_pair"], a["model"], a["top_k"], a["targets"], a["second_model"],
                a["whole_words"], a["fast"]]
        page.call("fill_mask", data)  # warm-up
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            page.call("fill_mask", data)
            times.append((time.perf_counter() - start) * 1000)
        page.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app-dir", type=Path, action="append", required=True)
    parser.add_argument("--label", action="append", required=True)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    if len(args.app_dir) != len(args.label):
        parser.error("give one --label per --app-dir")
    times: dict[str, list[float]] = {label: [] for label in args.label}
    for turn in range(args.turns):
        for app_dir, label in zip(args.app_dir, args.label):
            this_turn = fill_mask_times(app_dir.resolve(), args.calls)
            times[label] += this_turn
            print(f"turn {turn + 1}: {label:10s} {spread(this_turn)}", flush=True)
    print(f"\n{'':12s} {'/fill_mask p50 / p95 ms (min–max)':>36s}")
    for label, values in times.items():
        print(f"{label:12s} {spread(values)}")
    first, last = (statistics.median(times[label]) for label in (args.label[0], args.label[-1]))
    print(f"ratio (p50 {args.label[-1]} / p50 {args.label[0]}): {last / first:.2f}x (≤ 1: not slower)")


if __name__ == "__main__":
    main()

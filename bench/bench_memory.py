"""Memory: the server's resident memory through the heavy views and a class, and whether it comes back down.

    python bench/bench_memory.py [--clients 10 --seconds 60 --idle 45 --finetune] [--app-dir /other/checkout]
                                 [-- <app.py arguments, e.g. --memory-budget-gb 2>]

Launches ``python app.py --offline --public`` (embedded masked-LM) and samples its RSS (``/proc/<pid>/status``)
every 0.2 s. Phase 1, the heavy views one after another: word in context, the corpus neighbour index of
every layer, attribution (integrated gradients, 50 steps), layer probes (length task), PLL-heavy Fill-Mask
(whole words) and attention on a long text. Phase 2, a class: ``--clients`` visitors each cycling tokenize →
fill-mask → attention → word in context (→ classify once a fine-tune has finished) for ``--seconds``,
with one fine-tune of the embedded model training (``--finetune``, 1 epoch, at most 90 s). Phase 3: once
no run trains, idle for ``--idle`` seconds (the server hands freed memory back on a timer). Prints RSS at the start (default
model loaded), after the heavy views, the peak, and after the idle time, in MB; the last line is the peak.
``--app-dir`` measures another checkout the same way (e.g. the code before a change).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import REPO_ROOT, App
from bench.bench_hostile import rss_mb

SENTENCES = "bank | She sat on the bank of the river.\nbank | The bank raised its interest rates.\n" \
            "bank | They fished from the muddy bank.\nbank | He paid the cheque into the bank."
LONG = " ".join(["The committee discussed the proposal for a new bridge across the river, and the mayor "
                 "said that the [MASK] would be finished before the winter."] * 4)
HEAVY = [  # (endpoint, keyword arguments)
    ("/word_in_context", {"word": "bank", "sentences": SENTENCES}),
    *[("/corpus_neighbours", {"text": "The river bank was muddy.", "position": 3, "layer": layer, "k": 10})
      for layer in range(7)],
    ("/attribution", {"text": "The capital of France is [MASK].", "mask_number": 1, "target": "paris",
                      "method": "integrated gradients", "steps": 50}),
    ("/probe_layers", {"model": "", "task": "length"}),
    ("/fill_mask", {"text": LONG, "text_pair": "", "top_k": 10, "targets": "", "whole_words": True}),
    ("/attention", {"text": LONG, "text_pair": "", "layer": 2, "head": 3}),
]
CLASS = [
    ("/tokenize", {"text": "I love tokenization! Unbelievably, BERT splits rare words into pieces."}),
    ("/fill_mask", {"text": "The capital of France is [MASK].", "text_pair": "", "top_k": 5, "targets": ""}),
    ("/attention", {"text": "The animal didn't cross the street because it was too tired.", "text_pair": "",
                    "layer": 2, "head": 3}),
    ("/word_in_context", {"word": "bank", "sentences": SENTENCES}),
]
FINETUNE = {"init": "embedded", "epochs": 1, "time_budget_s": 90}


class Sampler:
    """The process's RSS every ``interval`` seconds in a thread: the peak, and the latest value."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid, self.interval = pid, interval
        self.peak = self.now = rss_mb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.now = rss_mb(self.pid)
            except OSError:
                return
            self.peak = max(self.peak, self.now)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def heavy_views(app: App) -> list[str]:
    client = app.client()
    notes = []
    for api, kwargs in HEAVY:
        start = time.perf_counter()
        try:
            client.predict(**kwargs, api_name=api)
            notes.append(f"{api} {time.perf_counter() - start:.1f} s")
        except Exception as exc:  # noqa: BLE001 - reported
            notes.append(f"{api} refused: {str(exc)[:120]}")
    return notes


def class_load(app: App, clients: int, seconds: float, finetune: bool) -> tuple[int, list[str]]:
    owner = "bench-memory-owner"
    control = app.client()
    fine_tuned: list[str] = []
    if finetune:
        print(control.predict(FINETUNE, owner, api_name="/start_finetune"))
    stop_at = time.monotonic() + seconds
    calls, errors, lock = [0], [], threading.Lock()

    def watch_finetune() -> None:
        while finetune and time.monotonic() < stop_at and not fine_tuned:
            try:
                status = control.predict(api_name="/run_status") or {}
            except Exception:  # noqa: BLE001 - a busy server: ask again
                status = {}
            if status.get("kind") == "finetune" and str(status.get("checkpoint") or "").startswith("ft:"):
                fine_tuned.append(status["checkpoint"])
            time.sleep(5)

    def visitor(k: int) -> None:
        client = None
        while client is None and time.monotonic() < stop_at:  # a page open can time out on a busy server
            try:
                client = app.client()
            except Exception as exc:  # noqa: BLE001 - counted, then tried again
                with lock:
                    errors.append(f"connect: {str(exc)[:120]}")
                time.sleep(1)  # a refused connection fails at once: do not spin
        j = k
        while time.monotonic() < stop_at:
            requests = CLASS + ([("/classify", {"text": "The cello is a bowed string instrument.",
                                                "model": fine_tuned[0]})] if fine_tuned else [])
            api, kwargs = requests[j % len(requests)]
            j += 1
            try:
                client.predict(**kwargs, api_name=api)
                with lock:
                    calls[0] += 1
            except Exception as exc:  # noqa: BLE001 - counted
                with lock:
                    errors.append(f"{api}: {str(exc)[:120]}")
            time.sleep(2 + (k % 5))  # 2-6 s between a visitor's calls, as a class does

    threads = [threading.Thread(target=watch_finetune)] + [threading.Thread(target=visitor, args=(k,))
                                                            for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 600)
    return calls[0], errors


def wait_for_runs(app: App, timeout_s: float = 300.0) -> None:
    """Until no run is training (or ``timeout_s``)."""
    client = app.client()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = client.predict(api_name="/run_status") or {}
        if status.get("status") not in ("preparing", "running", "paused", "stopping", "gpu burst"):
            return
        time.sleep(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the class works")
    parser.add_argument("--idle", type=float, default=45.0, help="idle time after the class")
    parser.add_argument("--finetune", action="store_true", help="one fine-tune trains during the class")
    parser.add_argument("--app-dir", default=str(REPO_ROOT), help="the checkout whose app.py runs")
    parser.add_argument("app_args", nargs="*", help="more app.py arguments (after --)")
    args = parser.parse_args()
    with App("--public", *args.app_args, app_dir=Path(args.app_dir), timeout_s=300) as app:
        app.wait_for_model()
        rss = Sampler(app.proc.pid)
        start = rss.now
        for note in heavy_views(app):
            print("  ", note)
        after_heavy, peak_heavy = rss.now, rss.peak
        calls, errors = class_load(app, args.clients, args.seconds, args.finetune)
        after_class = rss.now
        wait_for_runs(app)  # the fine-tune's own memory is the run's, not a high-water left behind
        idle_samples = []
        idle_end = time.monotonic() + args.idle
        while time.monotonic() < idle_end:
            time.sleep(1)
            idle_samples.append(rss.now)
        rss.stop()
        load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"class: {args.clients} visitors for {args.seconds:.0f} s, {calls} calls, {len(errors)} errors"
          + (f" (first: {errors[0]})" if errors else "") + f"; load average {' '.join(load)}")
    print(f"RSS MB: start {start:,.0f}, after the heavy views {after_heavy:,.0f} (peak {peak_heavy:,.0f}), "
          f"after the class {after_class:,.0f}, after {args.idle:.0f} s idle {idle_samples[-1]:,.0f} "
          f"(idle median {statistics.median(idle_samples):,.0f})")
    print(f"peak RSS MB: {rss.peak:,.0f}")


if __name__ == "__main__":
    main()

"""Load: 20 concurrent clients x 25 mixed requests to the inference endpoints while a run trains.

    python bench/bench_load.py [--clients 20 --per-client 25] [--no-training] [--plot docs/benchmarks/load.png]

Launches ``python app.py --offline`` (embedded masked-LM), starts a CPU bert-tiny run through
``/start_run``, then ``--clients`` gradio_clients each send ``--per-client`` requests one after
another, cycling through the inference endpoints below (each client from its own starting point,
so every endpoint is busy at once). Prints requests, errors and p50/p95 latency per endpoint; the
last line is the error count (target 0).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import App, all_at_once, latency_bars, percentile, spread, start_training

SENTENCE = "The animal didn't cross the street because it was too [MASK]."
REQUESTS = [  # (endpoint, keyword arguments); the model is each endpoint's default (offline: the embedded one)
    ("/tokenize", {"text": "I love tokenization! Unbelievably, BERT splits rare words into pieces."}),
    ("/fill_mask", {"text": "The capital of France is [MASK].", "text_pair": "", "top_k": 5, "targets": ""}),
    ("/attention", {"text": SENTENCE, "text_pair": "", "layer": 2, "head": 3}),
    ("/lookup", {"token": "love"}),
    ("/fill_mask", {"text": "I drank a cup of [MASK] this morning.", "text_pair": "", "targets": "coffee, tea",
                   "fast": True}),
    ("/attention_rollout", {"text": SENTENCE, "text_pair": ""}),
    ("/head_ablation", {"text": SENTENCE, "text_pair": "", "heads": "0:0, 1:1", "answers": "tired"}),
    ("/inside_embeddings", {"text": "The capital of France is [MASK]."}),
    ("/inside_layer", {"text": "The capital of France is [MASK].", "layer": 1}),
    ("/logit_lens", {"text": "The capital of France is [MASK]."}),
    ("/mlm_loss", {"text": "The capital of France is [MASK].", "words": "paris"}),
    ("/nsp_predict", {}),
    ("/mask_sample", {}),
]


def run_load(app: App, clients: int, per_client: int,
             addresses: bool = False) -> tuple[dict[str, list[float]], list[str], float]:
    """``clients`` clients sending ``per_client`` mixed requests each, all at once (``addresses``: each its own
    visitor address, for an app behind a trusted proxy): latencies by endpoint, errors, wall seconds."""
    pool = [app.client(address=f"10.7.{k // 250}.{k % 250 + 1}" if addresses else "") for k in range(clients)]
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()

    def worker(client, k: int) -> None:
        for j in range(per_client):
            api, kwargs = REQUESTS[(k + j) % len(REQUESTS)]
            start = time.perf_counter()
            try:
                client.predict(**kwargs, api_name=api)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(f"{api}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            with lock:
                latencies[api].append((time.perf_counter() - start) * 1000)

    wall = all_at_once(pool, worker)
    return latencies, errors, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=25)
    parser.add_argument("--no-training", action="store_true", help="leave the machine idle instead")
    parser.add_argument("--plot", default="", help="save a PNG of p50/p95 per endpoint here")
    args = parser.parse_args()
    with App() as app:
        app.wait_for_model()
        client = app.client()
        if not args.no_training:
            print(start_training(client))
        try:
            latencies, errors, wall = run_load(app, args.clients, args.per_client)
        finally:
            if not args.no_training:
                status = client.predict(api_name="/run_status")
                print(f"the run trained to step {status['step']} ({status['status']}) during the load")
                client.predict("", api_name="/stop_run")
    total = args.clients * args.per_client
    print(f"\n{total} requests from {args.clients} clients in {wall:.1f} s ({total / wall:.2f} requests/s), "
          f"{'while a bert-tiny run trained' if not args.no_training else 'machine otherwise idle'}")
    print(f"{'endpoint':20s} {'ok':>4s}   p50 / p95 ms (min–max)")
    for api in sorted(latencies):
        print(f"{api:20s} {len(latencies[api]):4d}   {spread(latencies[api])}")
    for line in errors[:20]:
        print("error:", line)
    if args.plot:
        save_plot(latencies, args.plot, args.clients, args.per_client)
        print(f"plot: {args.plot}")
    print(f"ratio (errors / requests): {len(errors)} / {total} (target 0)")


def save_plot(latencies: dict[str, list[float]], path: str, clients: int, per_client: int) -> None:
    from bench.plot import save_png

    ordered = dict(sorted(latencies.items(), key=lambda item: percentile(item[1], 50)))
    title = f"{clients} clients x {per_client} mixed requests while a run trains"
    save_png(latency_bars(ordered, title), path, height=120 + 40 * len(ordered))


if __name__ == "__main__":
    main()

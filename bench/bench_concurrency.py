"""Fill-Mask throughput with 20 clients at once, batched through the model, vs one client at a time.

    python bench/bench_concurrency.py [--clients 20 --per-client 10] [--plot docs/benchmarks/fill_mask_concurrency.png]

Launches ``python app.py --offline`` (embedded masked-LM) twice: as shipped (requests that meet
in the model share one padded forward, up to 16) and with ``BERTDEMO_FILL_MASK_BATCH=1`` (one
request per forward; the same 16 requests in progress). Against each: one gradio_client sending
its requests one after another, then ``--clients`` gradio_clients sending theirs all at once.
Sentences of different lengths, so batches are padded. Every answer is checked against the one
client's answer for the same sentence (same top-5 tokens, probabilities within 1e-4).
Prints requests/s and latency; the last line is the batched throughput over one at a time.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import FILL_MASK_ARGS, App, all_at_once, spread

SENTENCES = [
    "Nice to [MASK] you.",
    "The capital of France is [MASK].",
    "I drank a cup of [MASK] this morning before I went to work.",
    "The [MASK] barked at the mailman while the children played in the [MASK] after school.",
    "She opened the door and walked into the [MASK].",
    "He plays the [MASK] in a band that tours every summer across the country.",
    "We should [MASK] the meeting until tomorrow.",
    "A doctor works in a [MASK].",
]


def ask(client, text: str) -> list:
    raw = client.predict(**{**FILL_MASK_ARGS, "text": text}, api_name="/fill_mask")[3]
    return [[(p["token"], p["prob"]) for p in mask["predictions"]] for mask in raw]


def same(a: list, b: list) -> bool:
    return all(
        [t for t, _ in x] == [t for t, _ in y] and all(abs(p - q) <= 1e-4 for (_, p), (_, q) in zip(x, y))
        for x, y in zip(a, b, strict=True)
    )


def measure(app: App, clients: int, per_client: int) -> dict:
    one = app.client()
    reference = {text: ask(one, text) for text in SENTENCES}
    n = clients * per_client
    latencies: list[float] = []
    start = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        ask(one, SENTENCES[i % len(SENTENCES)])
        latencies.append((time.perf_counter() - t0) * 1000)
    sequential = {"rps": n / (time.perf_counter() - start), "latency": latencies}

    pool = [app.client() for _ in range(clients)]
    wrong: list[str] = []
    lat: list[float] = []
    lock = threading.Lock()

    def worker(c, k):
        for j in range(per_client):
            text = SENTENCES[(k + j) % len(SENTENCES)]
            t0 = time.perf_counter()
            answer = ask(c, text)
            with lock:
                lat.append((time.perf_counter() - t0) * 1000)
                if not same(answer, reference[text]):
                    wrong.append(text)

    wall = all_at_once(pool, worker)
    together = {"rps": n / wall, "latency": lat, "wrong": wrong}
    return {"one at a time": sequential, f"{clients} at once": together}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=10)
    parser.add_argument("--plot", default="", help="save a PNG of the throughputs here")
    args = parser.parse_args()
    results = {}
    for label, env in (("batched (up to 16 per forward)", {}), ("unbatched (1 per forward)", {"BERTDEMO_FILL_MASK_BATCH": "1"})):
        with App(env=env) as app:
            app.wait_for_model()
            results[label] = measure(app, args.clients, args.per_client)
    print(f"\n{'server':32s} {'clients':14s} {'requests/s':>10s}   latency p50 / p95 ms (min–max)   answers differing")
    for label, runs in results.items():
        for mode, r in runs.items():
            wrong = len(r.get("wrong", []))
            print(f"{label:32s} {mode:14s} {r['rps']:10.2f}   {spread(r['latency'])}   {wrong}")
    if args.plot:
        save_plot(results, args.plot)
        print(f"plot: {args.plot}")
    batched = results["batched (up to 16 per forward)"]
    unbatched = results["unbatched (1 per forward)"]
    together = f"{args.clients} at once"
    print(f"ratio (requests/s, {args.clients} clients batched / one client at a time): "
          f"{batched[together]['rps'] / batched['one at a time']['rps']:.2f}x; "
          f"batched / unbatched at {args.clients} clients: {batched[together]['rps'] / unbatched[together]['rps']:.2f}x")


def save_plot(results: dict, path: str) -> None:
    import plotly.graph_objects as go

    from bench.plot import save_png

    fig = go.Figure()
    for label, color in zip(results, ("#4f46e5", "#9ca3af")):
        modes = list(results[label])
        rps = [results[label][m]["rps"] for m in modes]
        fig.add_bar(name=label, x=modes, y=rps, marker_color=color, text=[f"{v:.1f}" for v in rps],
                    textposition="outside")
    fig.update_layout(title="Fill-Mask throughput through the app (embedded model, CPU)", barmode="group",
                      yaxis_title="requests / s", template="plotly_white")
    save_png(fig, path)


if __name__ == "__main__":
    main()

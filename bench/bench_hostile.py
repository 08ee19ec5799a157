"""A hostile mix beside ordinary visitors, on a public server: does everyone else still get answers?

    python bench/bench_hostile.py [--clients 20 --per-client 10 --hostile 4]

Launches ``python app.py --offline --public`` (embedded masked-LM). Phase 1: ``--clients`` ordinary
clients send ``--per-client`` requests each, cycling through the inference endpoints of
bench_load.py. Phase 2: the same, while ``--hostile`` threads keep sending what the audit used to take
the server down with: 5 MB texts (past the door's body cap), 300,000-character texts to the masking
lab and text_pair fields (past every per-field limit), and the heaviest *legal* Fill-Mask requests
(whole words on five masks, twenty several-piece target words, a second model). Prints p50 / p95 of
the ordinary requests in each phase, their errors, what the hostile requests got back, and the
server's peak resident memory; the last line is the ratio of ordinary p95 with / without the mix.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import App, percentile
from bench.bench_load import run_load

BIG = "word " * 60_000  # 300,000 characters: past every text limit, under the 2 MB body cap
HUGE_BODY = b'{"data": ["' + b"x" * (5 * 2**20) + b'"]}'
HEAVY_MASKS = "The [MASK] of the [MASK] was [MASK] by the [MASK] in [MASK]. " + "Some context here. " * 20
HOSTILE = [  # (label, endpoint, data)
    ("5 MB body", "fill_mask", None),
    ("300k-char masking-lab text", "mask_sample", [BIG, 0.15, 0.8, 0.1, 0, False, True]),
    ("300k-char text_pair", "fill_mask", ["Nice to [MASK] you.", BIG, "", 5, "", "", False, False]),
    ("heaviest legal Fill-Mask", "fill_mask", [HEAVY_MASKS, "", "", 50, ",".join(["tokenizationism"] * 20),
                                               "embedded/bert-explorer-mlm", True, False]),
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def raw_call(base: str, api: str, data: list | None) -> str:
    """One hostile request through gradio's REST API; what it got back, in a few words."""
    body = HUGE_BODY if data is None else json.dumps({"data": data}).encode()
    request = urllib.request.Request(f"{base}gradio_api/call/{api}", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as resp:
            event_id = json.loads(resp.read())["event_id"]
        with urllib.request.urlopen(f"{base}gradio_api/call/{api}/{event_id}", timeout=120) as resp:
            stream = resp.read().decode()
    except urllib.error.HTTPError as err:
        return f"HTTP {err.code}"
    except OSError as err:
        return type(err).__name__
    return "refused (error event)" if "event: error" in stream else "answered"


def ordinary_load(app: App, clients: int, per_client: int) -> tuple[list[float], int]:
    """bench_load's clients: every latency (ms) and the error count; the kinds of error, printed (three at most)."""
    latencies, errors, _ = run_load(app, clients, per_client, addresses=True)  # each its own visitor
    for kind, n in collections.Counter(e.split(": ", 1)[-1][:120] for e in errors).most_common(3):
        print(f"  an ordinary request's error ({n}×): {kind}")
    return [ms for values in latencies.values() for ms in values], len(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=10)
    parser.add_argument("--hostile", type=int, default=4, help="threads sending the hostile mix")
    args = parser.parse_args()
    with App("--public", "--trusted-proxies", "1") as app:  # the ordinary visitors told apart by X-Forwarded-For
        app.wait_for_model()
        pid = app.proc.pid
        peak = [rss_mb(pid)]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mb(pid))
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start_rss = peak[0]
        alone, alone_errors = ordinary_load(app, args.clients, args.per_client)
        outcomes: Counter[str] = Counter()

        def hostile(k: int) -> None:
            j = k
            while not stop.is_set():
                label, api, data = HOSTILE[j % len(HOSTILE)]
                outcomes[f"{label}: {raw_call(app.url, api, data)}"] += 1
                j += 1

        attackers = [threading.Thread(target=hostile, args=(k,), daemon=True) for k in range(args.hostile)]
        for t in attackers:
            t.start()
        time.sleep(2)  # the mix is under way before the ordinary clients start
        mixed, mixed_errors = ordinary_load(app, args.clients, args.per_client)
        stop.set()
        for t in attackers:
            t.join(timeout=150)
        watcher.join(timeout=5)
    print(f"ordinary requests alone:          p50 {percentile(alone, 50):7.0f} ms  p95 {percentile(alone, 95):7.0f} ms"
          f"  errors {alone_errors}")
    print(f"ordinary requests beside the mix: p50 {percentile(mixed, 50):7.0f} ms  p95 {percentile(mixed, 95):7.0f} ms"
          f"  errors {mixed_errors}")
    for outcome, n in sorted(outcomes.items()):
        print(f"  hostile {outcome}: {n}")
    print(f"server resident memory: {start_rss:,.0f} MB at the start, peak {peak[0]:,.0f} MB")
    print(f"ratio (ordinary p95 beside the mix / alone): {percentile(mixed, 95) / percentile(alone, 95):.2f}x")


if __name__ == "__main__":
    main()

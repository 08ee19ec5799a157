"""A class on one public server: visitors clicking every 1–3 s while another visitor's run trains.

    python bench/bench_class.py                                  # 30 visitors, 120 s, the same and new sentences
    python bench/bench_class.py --visitors 30,60                 # where the p95 crosses 1.5 s
    python bench/bench_class.py --sentences unique               # a new sentence at every click (no cache helps)
    python bench/bench_class.py --compare /tmp/base --label-b base   # two checkouts, one after the other, twice
    python bench/bench_class.py --one-address --seconds 60         # the class behind one school address, twice
                                                                 # each: as one visitor, and as class members

Launches ``python app.py --offline --public --trusted-proxies 1`` (embedded masked-LM), starts a CPU bert-tiny
pretraining run through ``/start_run`` (the run of another visitor), then ``--visitors`` visitors, each with its
own address in ``X-Forwarded-For`` (as a proxy in front of a Space writes it), cycle through Tokenizer, Fill-Mask,
Attention and Inside BERT's embeddings, waiting 1–3 s (uniform, seeded) between the answer and the next click.
The visitors are coroutines of one lean asyncio HTTP client calling gradio's REST API (``/gradio_api/call``), so
the clients cost a few percent of one core (printed) and the server, not its clients, is what is measured (30
gradio_client threads needed more CPU than the server they measured). With ``--sentences same`` every visitor
sends the same sentences (the answer caches answer most clicks), with ``unique`` a new sentence at every click
(every click a forward), ``both`` runs the two one after the other. Prints per endpoint the calls, errors and
p50 / p95 / max seconds of the round trip, and, from Gradio's own per-event timings (``GRADIO_PROFILING=1``), the
p50 / p95 of the time each waited in the queue and of its run (pre- and postprocessing included); last, each
class's slowest p95 against the 1.5 s target. With ``--compare`` the two checkouts run alternately (A B B A),
each on a fresh server, so the machine's load falls on both alike.

With ``--one-address`` every visitor comes from one address (a school's NAT, as a Space sees a classroom), in two
settings run alternately (A B B A): no membership (the address is one visitor: one queue share for the class), and
each visitor a member of one class made in the server's class database, sending its member token
(``X-Bertdemo-Class-Member``) with every call — each counted as themselves. Refused calls ("Queue is full") are
counted per setting.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import REPO_ROOT, App, percentile

SENTENCE = "The animal didn't cross the street because it was too [MASK]."
CLICKS = [  # (endpoint, keyword arguments): one visitor's round through four tabs
    ("/tokenize", {"text": "I love tokenization! Unbelievably, BERT splits rare words into pieces."}),
    ("/fill_mask", {"text": SENTENCE, "text_pair": "", "top_k": 5, "targets": ""}),
    ("/attention", {"text": SENTENCE.replace("[MASK]", "tired"), "text_pair": "", "layer": 2, "head": 3}),
    ("/inside_embeddings", {"text": SENTENCE}),
]
RUN = {"preset": "bert-tiny", "corpus": "wiki", "steps": 5000}  # within the public caps; outlasts the class


HTTP = {"timeout": 120}  # a loaded machine answers /config slowly


SCHOOL = "203.0.113.50"  # --one-address: the class's one address


def client_for(app: App, address: str, member_token: str = ""):
    """A gradio_client of one visitor (its address in X-Forwarded-For; a class member's token when given),
    retried while the server is busy."""
    from gradio_client import Client

    from bertdemo.traffic import MEMBER_HEADER

    headers = {"X-Forwarded-For": address} | ({MEMBER_HEADER: member_token} if member_token else {})
    for attempt in range(5):
        try:
            return Client(app.url, verbose=False, headers=headers, httpx_kwargs=HTTP)
        except Exception:  # a busy server: try again
            if attempt == 4:
                raise
            time.sleep(2)


def wait_for_model(app: App, timeout_s: float = 600) -> None:
    client = client_for(app, "10.99.0.2")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.predict(CLICKS[0][1]["text"], api_name="/tokenize")
            return
        except Exception:  # still loading
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def visitor_address(k: int) -> str:
    return f"10.{k // 250}.{k % 250}.{7 + k % 200}"


def start_run(app: App) -> None:
    client = client_for(app, "10.99.0.1")
    client.predict(RUN, "bench-owner", api_name="/start_run")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        status = client.predict(api_name="/run_status") or {}
        if status.get("step", 0) >= 2:
            return
        time.sleep(1)
    raise SystemExit(f"the run did not start training within 180 s: {status}")


def stop_run(app: App) -> int:
    client = client_for(app, "10.99.0.1")
    step = (client.predict(api_name="/run_status") or {}).get("step", 0)
    client.predict("bench-owner", api_name="/stop_run")
    return step


def member_tokens(app: App, visitors: int) -> list[str]:
    """One class in the server's class database (its runs folder) and ``visitors`` members of it: their tokens."""
    from bertdemo.classroom.db import Database
    from bertdemo.classroom.store import ClassStore

    store = ClassStore(Database.in_folder(app.runs_dir))
    try:
        code = store.create_class("Bench class").join_code
        return [store.join(code, f"student-{k}").token for k in range(visitors)]
    finally:
        store.db.close()


UNIQUE_WORDS = ("anna", "the teacher", "my brother", "a farmer", "our neighbour", "the doctor", "paul", "maria",
                "the mayor", "a student", "her friend", "the captain", "grandma", "the pilot", "a nurse", "the chef")


def endpoint_data(url: str) -> dict[str, list]:
    """Each clicked endpoint's positional data for gradio's REST call API: the click's arguments by name, every
    other parameter its default (read from ``/gradio_api/info``, as a client written against the API would)."""
    import httpx

    named = httpx.get(url + "gradio_api/info", timeout=120).json()["named_endpoints"]
    return {api: [kwargs.get(p["parameter_name"], p.get("parameter_default")) for p in named[api]["parameters"]]
            for api, kwargs in CLICKS}


async def lean_call(http, url: str, api: str, data: list, headers: dict[str, str]) -> str:
    """One call through ``POST /gradio_api/call/<api>`` and its event stream: '' when it completed, else the
    error the server sent."""
    posted = await http.post(f"{url}gradio_api/call{api}", json={"data": data}, headers=headers)
    if posted.status_code != 200:
        return f"HTTP {posted.status_code}: {posted.text[:160]}"
    event_id = posted.json()["event_id"]
    event = None
    async with http.stream("GET", f"{url}gradio_api/call{api}/{event_id}", headers=headers) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "complete":
                return ""
            elif line.startswith("data:") and event == "error":
                return line[5:].strip()[:160] or "error"
    return "the stream ended without an answer"


def run_class(app: App, visitors: int, seconds: float, seed: int, one_address: bool = False,
              members: bool = False, unique: bool = False) -> tuple[dict, list[str], dict, float]:
    """Every visitor's calls: ({endpoint: [seconds]}, errors, {visitor: answers}, the clients' CPU seconds).

    The visitors are coroutines of one lean asyncio HTTP client (gradio's REST call API): a class of 60 costs the
    bench a few percent of one core, so the server, not its clients, is measured on a small machine.
    ``one_address``: all behind one address; ``members``: each a member of one class, sending its token;
    ``unique``: a new sentence at every click (no answer cache can help)."""
    import asyncio

    import httpx

    from bertdemo.traffic import MEMBER_HEADER

    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    answers: dict[int, int] = defaultdict(int)
    tokens = member_tokens(app, visitors) if members else [""] * visitors
    data = endpoint_data(app.url)

    async def visitor(http, k: int, end: float) -> None:
        rng = random.Random(seed * 1000 + k)
        headers = {"X-Forwarded-For": SCHOOL if one_address else visitor_address(k)}
        if tokens[k]:
            headers[MEMBER_HEADER] = tokens[k]
        await asyncio.sleep(rng.uniform(0, 3))  # a class does not click in step
        j = k
        while time.monotonic() < end:
            api = CLICKS[j % len(CLICKS)][0]
            j += 1
            args = list(data[api])
            if unique:  # the first parameter is the sentence of every clicked endpoint
                args[0] = f"{rng.choice(UNIQUE_WORDS)} and {rng.choice(UNIQUE_WORDS)} said that {args[0]}"
            t0 = time.perf_counter()
            try:
                error = await lean_call(http, app.url, api, args, headers)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                error = f"{type(exc).__name__}: {str(exc)[:160]}"
            if error:
                errors.append(f"{api}: {error}")
            else:
                latencies[api].append(time.perf_counter() - t0)
                answers[k] += 1
            await asyncio.sleep(rng.uniform(1, 3))

    async def the_class() -> None:
        limits = httpx.Limits(max_connections=visitors * 2, max_keepalive_connections=visitors * 2)
        async with httpx.AsyncClient(timeout=HTTP["timeout"], limits=limits) as http:
            end = time.monotonic() + seconds
            await asyncio.gather(*(visitor(http, k, end) for k in range(visitors)))

    cpu0 = time.process_time()
    asyncio.run(the_class())
    return latencies, errors, answers, time.process_time() - cpu0


def server_phases(app: App) -> dict[str, dict[str, list[float]]]:
    """Per endpoint, Gradio's own timings of each event (ms): its wait in the queue and its whole run."""
    import httpx

    rows = httpx.get(app.url + "gradio_api/profiling/traces", timeout=60).json()
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        api = "/" + str(r.get("fn_name") or "")  # the endpoint's api_name
        if api in dict(CLICKS):
            out[api]["queue"].append(r.get("queue_wait_ms", 0.0))
            out[api]["run"].append(r.get("total_ms", 0.0))
    return out


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def one_class(label: str, app_dir: Path, args, visitors: int, members: bool = False, unique: bool = False) -> dict:
    """One class on a fresh server; prints its table and returns {endpoint: p95 seconds}."""
    env = {"GRADIO_PROFILING": "1"}
    loads = [os.getloadavg()[0]]
    with App("--public", "--trusted-proxies", "1", env=env, app_dir=app_dir) as app:
        wait_for_model(app)
        if not args.no_training:
            start_run(app)
        sampler_stop = threading.Event()

        def sample_load() -> None:
            while not sampler_stop.wait(5):
                loads.append(os.getloadavg()[0])

        threading.Thread(target=sample_load, daemon=True).start()
        t0 = time.monotonic()
        latencies, errors, answers, client_cpu = run_class(app, visitors, args.seconds, args.seed, args.one_address,
                                                           members, unique)
        wall = time.monotonic() - t0
        sampler_stop.set()
        step = stop_run(app) if not args.no_training else 0
        phases = server_phases(app)
        rss = peak_rss_mb(app.proc.pid)
    print(f"\n== {label}: {visitors} visitors, {'a new sentence at every click' if unique else 'the same sentences'}, "
          f"{wall:.0f} s, {f'a bert-tiny run trained beside (to step {step})' if not args.no_training else 'no run beside'}; "
          f"load {min(loads):.1f}–{max(loads):.1f} (median {percentile(loads, 50):.1f}); server peak RSS {rss:.0f} MB; "
          f"the clients' CPU {client_cpu:.1f} s ({100 * client_cpu / wall:.0f} % of one core)", flush=True)
    print(f"  {'endpoint':20s} {'calls':>5s} {'err':>4s}   p50 s   p95 s   max s   | queue p50/p95 ms | run p50/p95 ms")
    p95 = {}
    for api in sorted(latencies):
        xs = latencies[api]
        p95[api] = percentile(xs, 95)
        ph = phases.get(api, {})
        q, f = ph.get("queue") or [0.0], ph.get("run") or [0.0]
        n_err = sum(1 for e in errors if e.startswith(api + ":"))
        print(f"  {api:20s} {len(xs):5d} {n_err:4d}  {percentile(xs, 50):6.2f}  {p95[api]:6.2f}  "
              f"{max(xs):6.2f}   | {percentile(q, 50):6.0f} / {percentile(q, 95):6.0f} | "
              f"{percentile(f, 50):6.0f} / {percentile(f, 95):6.0f}", flush=True)
    per_visitor = [answers.get(k, 0) for k in range(visitors)]
    refused = sum(1 for e in errors if "queue is full" in e.lower())
    print(f"  answers per visitor {min(per_visitor)}–{max(per_visitor)}; calls {sum(per_visitor) + len(errors)}, "
          f"errors {len(errors)}, of them refused \"Queue is full\" {refused}", flush=True)
    for line in errors[:10]:
        print("  error:", line, flush=True)
    return p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", default="30", help="class sizes, comma-separated (e.g. 30,60)")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sentences", choices=("same", "unique", "both"), default="both",
                        help="the same sentences (answer caches help), a new one at every click, or both")
    parser.add_argument("--target-s", type=float, default=1.5, help="the p95 a click should stay under")
    parser.add_argument("--no-training", action="store_true", help="no run beside the class")
    parser.add_argument("--app-dir", default=str(REPO_ROOT))
    parser.add_argument("--compare", default="", help="a second checkout, run alternately (A B B A)")
    parser.add_argument("--label-a", default="this checkout")
    parser.add_argument("--label-b", default="compare")
    parser.add_argument("--one-address", action="store_true",
                        help="every visitor behind one address: as one visitor, then as class members (A B B A)")
    args = parser.parse_args()
    sizes = [int(v) for v in args.visitors.split(",")]
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}", flush=True)
    if args.one_address:
        for members in (False, True, True, False):
            label = "one address, class members with their token" if members else "one address, no membership"
            one_class(label, Path(args.app_dir), args, sizes[0], members=members)
        return
    order = [(args.label_a, Path(args.app_dir))]
    if args.compare:
        b = (args.label_b, Path(args.compare))
        order = [order[0], b, b, order[0]]
    modes = {"same": [False], "unique": [True], "both": [False, True]}[args.sentences]
    worst: list[tuple[int, bool, str, float]] = []
    for size in sizes:
        for unique in modes:
            for label, folder in order:
                p95 = one_class(label, folder, args, size, unique=unique)
                api, slowest = max(p95.items(), key=lambda kv: kv[1])
                worst.append((size, unique, api, slowest))
    print(f"\nThe slowest endpoint's p95 against the {args.target_s} s target:")
    for size, unique, api, slowest in worst:
        verdict = "within" if slowest <= args.target_s else "PAST"
        print(f"  {size:3d} visitors, {'new sentences' if unique else 'same sentences'}: {api} {slowest:.2f} s "
              f"({verdict}; {slowest / args.target_s:.2f}x the target)")


if __name__ == "__main__":
    main()

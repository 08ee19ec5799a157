"""A class on one public server: visitors clicking every 1–3 s while another visitor's run trains.

    python bench/bench_class.py                                  # 30 visitors, 120 s, a pretraining run beside
    python bench/bench_class.py --visitors 15 --seconds 60       # a smaller class (a loaded machine)
    python bench/bench_class.py --compare /tmp/base --label-b base   # two checkouts, one after the other, twice
    python bench/bench_class.py --one-address --seconds 60         # the class behind one school address, twice
                                                                 # each: as one visitor, and as class members
    python bench/bench_class.py --client-nice 19                 # the bench's 30 clients below the server

Launches ``python app.py --offline --public --trusted-proxies 1`` (embedded masked-LM), starts a CPU bert-tiny
pretraining run through ``/start_run`` (the run of another visitor), then ``--visitors`` threads, each one
visitor with its own gradio_client and its own address in ``X-Forwarded-For`` (as a proxy in front of a Space
writes it), cycle through Tokenizer, Fill-Mask, Attention and Inside BERT's embeddings, waiting 1–3 s
(uniform, seeded) between the answer and the next click. Prints per endpoint the calls, errors and
p50 / p95 / max seconds, and, from Gradio's own per-event timings (``GRADIO_PROFILING=1``), the p50 / p95 of
the time each waited in the queue and of its run (pre- and postprocessing included): a tail in the first is the
queue's scheduling, a tail in the second the work itself (or the threads it competes with). With ``--compare`` the two
checkouts run alternately (A B B A), each on a fresh server, so the machine's load falls on both alike.

With ``--one-address`` every visitor comes from one address (a school's NAT, as a Space sees a classroom), in two
settings run alternately (A B B A): no membership (the address is one visitor: one queue share for the class), and
each visitor a member of one class made in the server's class database, sending its member token
(``X-Bertdemo-Class-Member``) with every call — each counted as themselves. Refused calls ("Queue is full") are
counted per setting.
"""

from __future__ import annotations

import argparse
import contextlib
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


def run_class(app: App, visitors: int, seconds: float, seed: int, one_address: bool = False,
              members: bool = False) -> tuple[dict, list[str], dict]:
    """Every visitor's calls: ({endpoint: [seconds]}, errors, {visitor: answers}). ``one_address``: all behind
    one address; ``members``: each a member of one class, sending its token."""
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    answers: dict[int, int] = defaultdict(int)
    lock = threading.Lock()
    tokens = member_tokens(app, visitors) if members else [""] * visitors
    clients = [client_for(app, SCHOOL if one_address else visitor_address(k), tokens[k]) for k in range(visitors)]
    start_gate = threading.Barrier(visitors)
    end = [0.0]

    def visitor(k: int) -> None:
        rng = random.Random(seed * 1000 + k)
        start_gate.wait()
        if k == 0:
            end[0] = time.monotonic() + seconds
        time.sleep(rng.uniform(0, 3))  # a class does not click in step
        j = k
        while time.monotonic() < (end[0] or time.monotonic() + seconds):
            api, kwargs = CLICKS[j % len(CLICKS)]
            j += 1
            t0 = time.perf_counter()
            try:
                clients[k].predict(**kwargs, api_name=api)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(f"{api}: {type(exc).__name__}: {str(exc)[:160]}")
            else:
                with lock:
                    latencies[api].append(time.perf_counter() - t0)
                    answers[k] += 1
            time.sleep(rng.uniform(1, 3))

    threads = [threading.Thread(target=visitor, args=(k,), daemon=True) for k in range(visitors)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 300)
    return latencies, errors, answers


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


@contextlib.contextmanager
def client_priority(nice: int):
    """The bench's own visitor threads (and the threads their clients start) at nice ``nice`` while the class
    runs, so on a small machine the server — started before, at the usual priority — is not measured against
    the 30 clients it shares the cores with (phones have their own). Linux; setting it back needs root."""
    tid = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    if nice:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    try:
        yield
    finally:
        if nice:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, before)
            except PermissionError:
                raise SystemExit("--client-nice: the next server would start at the clients' priority "
                                 "(setting it back needs root)") from None


def one_class(label: str, app_dir: Path, args, members: bool = False) -> None:
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
        with client_priority(args.client_nice):
            latencies, errors, answers = run_class(app, args.visitors, args.seconds, args.seed, args.one_address,
                                                   members)
        wall = time.monotonic() - t0
        sampler_stop.set()
        step = stop_run(app) if not args.no_training else 0
        phases = server_phases(app)
        rss = peak_rss_mb(app.proc.pid)
    print(f"\n== {label}: {args.visitors} visitors, {wall:.0f} s, "
          f"{f'a bert-tiny run trained beside (to step {step})' if not args.no_training else 'no run beside'}; "
          f"load {min(loads):.1f}–{max(loads):.1f} (median {percentile(loads, 50):.1f}); server peak RSS {rss:.0f} MB",
          flush=True)
    print(f"  {'endpoint':20s} {'calls':>5s} {'err':>4s}   p50 s   p95 s   max s   | queue p50/p95 ms | run p50/p95 ms")
    for api in sorted(latencies):
        xs = latencies[api]
        ph = phases.get(api, {})
        q, f = ph.get("queue") or [0.0], ph.get("run") or [0.0]
        n_err = sum(1 for e in errors if e.startswith(api + ":"))
        print(f"  {api:20s} {len(xs):5d} {n_err:4d}  {percentile(xs, 50):6.2f}  {percentile(xs, 95):6.2f}  "
              f"{max(xs):6.2f}   | {percentile(q, 50):6.0f} / {percentile(q, 95):6.0f} | "
              f"{percentile(f, 50):6.0f} / {percentile(f, 95):6.0f}", flush=True)
    per_visitor = [answers.get(k, 0) for k in range(args.visitors)]
    refused = sum(1 for e in errors if "queue is full" in e.lower())
    print(f"  answers per visitor {min(per_visitor)}–{max(per_visitor)}; calls {sum(per_visitor) + len(errors)}, "
          f"errors {len(errors)}, of them refused \"Queue is full\" {refused}", flush=True)
    for line in errors[:10]:
        print("  error:", line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-training", action="store_true", help="no run beside the class")
    parser.add_argument("--app-dir", default=str(REPO_ROOT))
    parser.add_argument("--compare", default="", help="a second checkout, run alternately (A B B A)")
    parser.add_argument("--label-a", default="this checkout")
    parser.add_argument("--label-b", default="compare")
    parser.add_argument("--client-nice", type=int, default=0,
                        help="the bench's visitor threads at this nice value (e.g. 19: the server first)")
    parser.add_argument("--one-address", action="store_true",
                        help="every visitor behind one address: as one visitor, then as class members (A B B A)")
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}", flush=True)
    if args.one_address:
        for members in (False, True, True, False):
            label = "one address, class members with their token" if members else "one address, no membership"
            one_class(label, Path(args.app_dir), args, members=members)
        return
    order = [(args.label_a, Path(args.app_dir))]
    if args.compare:
        b = (args.label_b, Path(args.compare))
        order = [order[0], b, b, order[0]]
    for label, folder in order:
        one_class(label, folder, args)


if __name__ == "__main__":
    main()

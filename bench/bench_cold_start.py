"""Cold start: from ``python app.py --offline`` to a served page, and to the first Fill-Mask answer.

    python bench/bench_cold_start.py [--repeats 5] [--model NAME] [--csv out.csv] [--plot out.png]

Each repeat launches the app as a fresh subprocess (offline, a free port, default model unless
``--model``), then measures from the moment the process is started:

* **page**: the first HTTP 200 on ``/`` (polled every 50 ms);
* **answer**: the first ``/fill_mask`` answer through ``gradio_client`` (connected right after
  the page is served, so the figure includes any model loading the request has to wait for).

Prints each repeat, the median and spread (min-max) of both, and last the ratio of each median
to its target (page <= 6 s, answer <= 10 s; a ratio <= 1 meets it).
"""

from __future__ import annotations

import argparse
import csv
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE_TARGET_S = 6.0
ANSWER_TARGET_S = 10.0
TIMEOUT_S = 180.0
POLL_S = 0.05


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _page_served(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def one_cold_start(model: str | None, log_dir: Path) -> tuple[float, float]:
    """Launch the app once; (seconds to the served page, seconds to the first Fill-Mask answer)."""
    from gradio_client import Client

    port = free_port()
    cmd = [sys.executable, "app.py", "--offline", "--port", str(port)] + (["--model", model] if model else [])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log_path = log_dir / f"app-{port}.log"
    with open(log_path, "wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        while not _page_served(url):
            if proc.poll() is not None:
                raise RuntimeError(f"app.py exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            if time.perf_counter() - start > TIMEOUT_S:
                raise RuntimeError(f"no page within {TIMEOUT_S:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(POLL_S)
        page_s = time.perf_counter() - start
        client = Client(url, verbose=False)
        answer = client.predict("Nice to [MASK] you.", "", "", 5, "", "", False, api_name="/fill_mask")
        answer_s = time.perf_counter() - start
        if not answer[3] or not answer[3][0]["predictions"]:
            raise RuntimeError(f"/fill_mask answered without predictions: {answer[3]!r}")
        return page_s, answer_s
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def summary(name: str, values: list[float]) -> str:
    """'name: median X s (min-max A-B s, n=N)'."""
    return (f"{name:>7s}: median {statistics.median(values):6.2f} s "
            f"(spread {min(values):.2f}-{max(values):.2f} s, n={len(values)})")


def plot(rows: list[tuple[str, list[float], list[float]]], path: str) -> None:
    """Bar chart of the medians (with min-max whiskers) per labelled series of measurements."""
    import plotly.graph_objects as go

    sys.path.insert(0, str(ROOT / "bench"))
    from plot import save_png

    fig = go.Figure()
    for what, idx, target in (("served page", 1, PAGE_TARGET_S), ("first Fill-Mask answer", 2, ANSWER_TARGET_S)):
        meds = [statistics.median(r[idx]) for r in rows]
        fig.add_bar(
            name=what, x=[r[0] for r in rows], y=meds, text=[f"{m:.1f} s" for m in meds], textposition="outside",
            error_y=dict(type="data", symmetric=False,
                         array=[max(r[idx]) - m for r, m in zip(rows, meds)],
                         arrayminus=[m - min(r[idx]) for r, m in zip(rows, meds)]),
        )
        fig.add_hline(y=target, line_dash="dot", annotation_text=f"{what} target {target:g} s",
                      annotation_position="top left")
    fig.update_layout(title="Cold start: python app.py --offline (median, min-max whiskers)",
                      yaxis_title="seconds after launch", barmode="group")
    save_png(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default=None, help="--model passed to app.py (default: the app's default)")
    parser.add_argument("--csv", default=None, help="append the measurements (label, page_s, answer_s) here")
    parser.add_argument("--label", default="now", help="label of these measurements in --csv and the plot")
    parser.add_argument("--plot", default=None, help="PNG of every label found in --csv (needs --csv)")
    args = parser.parse_args()

    pages, answers = [], []
    with tempfile.TemporaryDirectory(prefix="bertdemo-cold-") as tmp:
        for i in range(args.repeats):
            page_s, answer_s = one_cold_start(args.model, Path(tmp))
            pages.append(page_s)
            answers.append(answer_s)
            print(f"run {i + 1}: page {page_s:6.2f} s   first /fill_mask answer {answer_s:6.2f} s", flush=True)
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at the end")
    print(summary("page", pages))
    print(summary("answer", answers))
    if args.csv:
        with open(args.csv, "a", newline="") as handle:
            csv.writer(handle).writerows((args.label, f"{p:.3f}", f"{a:.3f}") for p, a in zip(pages, answers))
        if args.plot:
            series: dict[str, tuple[list[float], list[float]]] = {}
            with open(args.csv, newline="") as handle:
                for label, p, a in csv.reader(handle):
                    series.setdefault(label, ([], []))[0].append(float(p))
                    series[label][1].append(float(a))
            plot([(label, p, a) for label, (p, a) in series.items()], args.plot)
            print(f"plot: {args.plot}")
    page_ratio = statistics.median(pages) / PAGE_TARGET_S
    answer_ratio = statistics.median(answers) / ANSWER_TARGET_S
    print(f"ratio to target (<= 1 meets it): page {page_ratio:.2f}x of {PAGE_TARGET_S:g} s, "
          f"answer {answer_ratio:.2f}x of {ANSWER_TARGET_S:g} s")


if __name__ == "__main__":
    main()

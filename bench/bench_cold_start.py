"""Cold start: from ``python app.py --offline`` to a served page, and to the first Fill-Mask answer.

    python bench/bench_cold_start.py [--repeats 5] [--model NAME] [--app-dir DIR] [--csv out.csv --label L] [--plot out.png]

Each repeat launches the app as a fresh subprocess (offline, a free port, default model unless
``--model``), then measures from the moment the process is started:

* **page**: the first HTTP 200 on ``/`` (polled every 50 ms);
* **answer**: the first ``/fill_mask`` answer through ``gradio_client`` (connected right after
  the page is served, so the figure includes any model loading the request has to wait for).

Also the CPU seconds the app process had used at those two moments: on a machine shared with
other work, wall time stretches with the load while CPU time hardly moves, so it shows what a quiet
machine would see (startup runs on one core; wall ~ CPU there).

Prints each repeat, the median and spread (min-max) of both, and last the ratio of each median
to its target (page <= 6 s, answer <= 10 s; a ratio <= 1 meets it). ``--app-dir`` times another
checkout (e.g. an older commit unpacked with ``git archive``) with this interpreter, so before and
after can be measured in turns on a busy machine; ``--csv`` collects the turns, ``--plot`` draws them.
``--screenshots DIR`` instead starts the app once and photographs the page in the system Chromium
while the model loads (1280 px and 390 px wide) and once it is ready.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from app_harness import free_port  # bench/ is on sys.path when a bench script runs

ROOT = Path(__file__).resolve().parents[1]
PAGE_TARGET_S = 6.0
ANSWER_TARGET_S = 10.0
TIMEOUT_S = 180.0
POLL_S = 0.05



def _page_served(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def cpu_seconds(proc: subprocess.Popen) -> float:
    """User + system CPU time the process (all its threads) has used so far (Linux: /proc/<pid>/stat)."""
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, in clock ticks


def one_cold_start(model: str | None, log_dir: Path, app_dir: Path = ROOT) -> tuple[float, float, float, float]:
    """Launch the app once: wall seconds to the served page and to the first Fill-Mask answer, and
    the app's CPU seconds at those two moments."""
    from gradio_client import Client

    port = free_port()
    cmd = [sys.executable, "app.py", "--offline", "--port", str(port)] + (["--model", model] if model else [])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log_path = log_dir / f"app-{port}.log"
    with open(log_path, "wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        while not _page_served(url):
            if proc.poll() is not None:
                raise RuntimeError(f"app.py exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            if time.perf_counter() - start > TIMEOUT_S:
                raise RuntimeError(f"no page within {TIMEOUT_S:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(POLL_S)
        page_s, page_cpu = time.perf_counter() - start, cpu_seconds(proc)
        client = Client(url, verbose=False)
        answer = client.predict(text="Nice to [MASK] you.", text_pair="", model="", top_k=5, targets="",
                                second_model="", whole_words=False, api_name="/fill_mask")
        answer_s, answer_cpu = time.perf_counter() - start, cpu_seconds(proc)
        if not answer[3] or not answer[3][0]["predictions"]:
            raise RuntimeError(f"/fill_mask answered without predictions: {answer[3]!r}")
        return page_s, answer_s, page_cpu, answer_cpu
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def screenshots(folder: Path, model: str | None, app_dir: Path = ROOT) -> list[Path]:
    """Start the app; photograph the page while it loads (desktop and phone width) and when ready."""
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd = [sys.executable, "app.py", "--offline", "--port", str(port)] + (["--model", model] if model else [])
    proc = subprocess.Popen(cmd, cwd=app_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url, shots = f"http://127.0.0.1:{port}/", []
    try:
        while not _page_served(url):
            time.sleep(POLL_S)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=os.environ.get("BERTDEMO_CHROMIUM", "/usr/bin/chromium"),
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            pages = []
            for width, height in ((1280, 800), (390, 844)):  # both open while the model loads
                pages.append(browser.new_page(viewport={"width": width, "height": height}))
                pages[-1].goto(url, wait_until="commit")
            loading = re.compile("Starting up|Loading")
            for page, name in zip(pages, ("cold_start_loading", "cold_start_loading_phone")):
                page.locator("#model-box", has_text=loading).wait_for(timeout=60_000)
                shots.append(folder / f"{name}.png")
                page.screenshot(path=str(shots[-1]))
            pages[0].locator("#model-status", has_text="Model in use").wait_for(timeout=120_000)
            shots.append(folder / "cold_start_ready.png")
            pages[0].screenshot(path=str(shots[-1]))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return shots


def summary(name: str, values: list[float]) -> str:
    """'name: median X s (spread A-B s, n=N)'."""
    return (f"{name:>10s}: median {statistics.median(values):6.2f} s "
            f"(spread {min(values):.2f}-{max(values):.2f} s, n={len(values)})")


def plot(rows: list[tuple[str, list[float], list[float], list[float], list[float]]], path: str) -> None:
    """Medians with min-max whiskers per label: wall seconds (left, with the targets) and CPU seconds (right).

    ``rows``: (label, page wall, answer wall, page CPU, answer CPU), each a list of measurements.
    """
    from plotly.subplots import make_subplots

    sys.path.insert(0, str(ROOT / "bench"))
    from plot import save_png

    fig = make_subplots(rows=1, cols=2, subplot_titles=("Wall time after python app.py --offline (shared machine)",
                                                        "CPU time of the app process"))
    labels = [r[0] for r in rows]
    for col, offset in ((1, 1), (2, 3)):
        for what, idx, color in (("served page", offset, "#6366f1"), ("first Fill-Mask answer", offset + 1, "#f59e0b")):
            meds = [statistics.median(r[idx]) for r in rows]
            fig.add_bar(
                name=what, x=labels, y=meds, marker_color=color, showlegend=col == 1, legendgroup=what,
                text=[f"{m:.1f} s" for m in meds], textposition="inside", insidetextanchor="middle",
                textfont=dict(color="white"),
                error_y=dict(type="data", symmetric=False, array=[max(r[idx]) - m for r, m in zip(rows, meds)],
                             arrayminus=[m - min(r[idx]) for r, m in zip(rows, meds)]),
                row=1, col=col,
            )
    for target, what in ((PAGE_TARGET_S, "page"), (ANSWER_TARGET_S, "answer")):
        for col in (1, 2):
            fig.add_hline(y=target, line_dash="dot", line_color="#64748b", row=1, col=col,
                          annotation_text=f"{what} target {target:g} s", annotation_position="top left")
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.12, title_text="median, min-max whiskers:"))
    fig.update_yaxes(title_text="seconds", row=1, col=1)
    save_png(fig, path, width=1000, height=480)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default=None, help="--model passed to app.py (default: the app's default)")
    parser.add_argument("--app-dir", type=Path, default=ROOT, help="checkout whose app.py is timed (default: this one)")
    parser.add_argument("--csv", default=None, help="append the measurements here (label, page s, answer s, page CPU s, answer CPU s)")
    parser.add_argument("--label", default="now", help="label of these measurements in --csv and the plot")
    parser.add_argument("--plot", default=None, help="PNG of every label found in --csv (needs --csv)")
    parser.add_argument("--screenshots", type=Path, default=None, help="only photograph the loading page into DIR")
    args = parser.parse_args()
    if args.screenshots:
        for path in screenshots(args.screenshots, args.model, args.app_dir):
            print(f"screenshot: {path}")
        return

    runs: list[tuple[float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="bertdemo-cold-") as tmp:
        for i in range(args.repeats):
            runs.append(one_cold_start(args.model, Path(tmp), args.app_dir))
            page_s, answer_s, page_cpu, answer_cpu = runs[-1]
            print(f"run {i + 1}: page {page_s:6.2f} s (CPU {page_cpu:5.2f} s)   "
                  f"first /fill_mask answer {answer_s:6.2f} s (CPU {answer_cpu:5.2f} s)   "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.csv:
        with open(args.csv, "a", newline="") as handle:
            csv.writer(handle).writerows((args.label, *(f"{v:.3f}" for v in run)) for run in runs)
        if args.plot:
            series: dict[str, list[list[float]]] = {}
            with open(args.csv, newline="") as handle:
                for label, *values in csv.reader(handle):
                    for column, value in zip(series.setdefault(label, [[], [], [], []]), values):
                        column.append(float(value))
            plot([(label, *columns) for label, columns in series.items()], args.plot)
            print(f"plot: {args.plot}")
    if not runs:  # --repeats 0: only the plot of what --csv holds
        return
    pages, answers, page_cpus, answer_cpus = (list(column) for column in zip(*runs))
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at the end")
    print(summary("page", pages))
    print(summary("answer", answers))
    print(summary("page CPU", page_cpus))
    print(summary("answer CPU", answer_cpus))
    page_ratio = statistics.median(pages) / PAGE_TARGET_S
    answer_ratio = statistics.median(answers) / ANSWER_TARGET_S
    print(f"ratio to target (<= 1 meets it): page {page_ratio:.2f}x of {PAGE_TARGET_S:g} s, "
          f"answer {answer_ratio:.2f}x of {ANSWER_TARGET_S:g} s")


if __name__ == "__main__":
    main()

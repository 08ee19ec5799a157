"""What opening a shared link costs the server: server CPU-seconds per page open, and each phone's time until
the view is on screen.

    python bench/bench_deep_link.py                        # 8 opens one after another, then 30 phones at once
    python bench/bench_deep_link.py --opens 5 --phones 10  # a smaller run (a loaded machine)
    python bench/bench_deep_link.py --tab attention --text "The cat sat on the mat."

Launches ``python app.py --offline`` (the embedded masked-LM), opens the link once to warm up, then ``--opens``
times in a fresh headless Chromium context each, one after another, reading the server process's CPU time
(user + system, all its threads, from /proc) before and after: the CPU per open — also given above what the idle
server burns in the same time (measured for ``--idle`` seconds first): on a busy machine an open takes long, and
the server's idle wake-ups then count in it. Then ``--phones`` contexts
open it at once (each at 390 px), each timed from navigation until the view's answer is on screen. The server's
CPU is what the target counts (≤ 0.3 CPU-s per open); the phones' times depend on the browser sharing this
machine too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import App, percentile

CHROMIUM = "/usr/bin/chromium"
ANSWER = {"fill-mask": "#fm-filled", "attention": "#att-heatmap", "tokenizer": "#tok-table", "inside": "#in-summary"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` (every thread), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_once(browser, url: str, answer: str, text: str, width: int = 1280) -> float:
    """Seconds from navigation until the view's answer shows the link's sentence."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        start = time.perf_counter()
        page.goto(url)
        page.wait_for_function("([sel, t]) => { const el = document.querySelector(sel);"
                               " return el && el.innerText.includes(t); }", arg=[answer, text.split()[0]],
                               timeout=180_000)
        return time.perf_counter() - start
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opens", type=int, default=8)
    parser.add_argument("--phones", type=int, default=30)
    parser.add_argument("--tab", default="fill-mask", choices=sorted(ANSWER))
    parser.add_argument("--app-dir", default=None, help="another checkout to measure (e.g. the main branch)")
    parser.add_argument("--text", default="The teacher asked the class to [MASK] the answer.")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds the idle server's CPU is measured")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    app_dir = {"app_dir": Path(args.app_dir)} if args.app_dir else {}
    with App(**app_dir) as app, sync_playwright() as pw:
        app.wait_for_model()
        url = f"{app.url}?tab={args.tab}&text={quote(args.text)}"
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        open_once(browser, url, ANSWER[args.tab], args.text)  # warm-up: the first answer is computed here
        time.sleep(1.0)
        before = cpu_seconds(app.proc.pid)
        time.sleep(args.idle)  # what the server burns with no page open (its loops' wake-ups), per second
        idle = (cpu_seconds(app.proc.pid) - before) / args.idle
        per_open, above_idle, seconds = [], [], []
        for _ in range(args.opens):
            before, start = cpu_seconds(app.proc.pid), time.perf_counter()
            seconds.append(open_once(browser, url, ANSWER[args.tab], args.text))
            time.sleep(1.0)  # the page's trailing events (status polls) end
            per_open.append(cpu_seconds(app.proc.pid) - before)
            above_idle.append(per_open[-1] - idle * (time.perf_counter() - start))
        print(f"one at a time ({args.opens} opens): server CPU per open p50 {percentile(per_open, 50):.2f} s "
              f"({min(per_open):.2f}–{max(per_open):.2f}); above the idle server's {idle:.3f} CPU-s/s: p50 "
              f"{percentile(above_idle, 50):.2f} s ({min(above_idle):.2f}–{max(above_idle):.2f}); on screen after "
              f"p50 {percentile(seconds, 50):.1f} s")
        if args.phones:
            before = cpu_seconds(app.proc.pid)
            # playwright's sync API is not thread-safe: every phone opened from this thread, one context each
            contexts = [browser.new_context(viewport={"width": 390, "height": 800}) for _ in range(args.phones)]
            pages = [c.new_page() for c in contexts]
            start = time.perf_counter()
            for page in pages:
                page.goto(url, wait_until="commit")
            done: dict[int, float] = {}
            while len(done) < len(pages) and time.perf_counter() - start < 300:
                for i, page in enumerate(pages):
                    if i not in done and page.evaluate("([sel, t]) => { const el = document.querySelector(sel);"
                                                       " return !!(el && el.innerText.includes(t)); }",
                                                       [ANSWER[args.tab], args.text.split()[0]]):
                        done[i] = time.perf_counter() - start
                pages[0].wait_for_timeout(100)
            cpu = cpu_seconds(app.proc.pid) - before
            for c in contexts:
                c.close()
            times = sorted(done.values())
            print(f"{args.phones} phones at once: {len(times)} saw the view, p50 {percentile(times, 50):.1f} s, "
                  f"max {max(times):.1f} s; server CPU {cpu:.1f} s in all, {cpu / args.phones:.2f} s per phone")
        browser.close()


if __name__ == "__main__":
    main()

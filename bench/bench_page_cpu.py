"""A page open's own CPU in the browser: the main thread's busy time (V8's sampling profiler, idle left out) from
navigation until the page has settled, by script, for this checkout and optionally another, alternated.

    python bench/bench_page_cpu.py                               # this checkout, 4 opens
    python bench/bench_page_cpu.py --app-dir /tmp/base --opens 4 # a before / after, opens alternated

Launches ``python app.py --offline`` (the embedded model) of each checkout, opens the page once to fill the browser's
HTTP cache (as a returning visitor's), then ``--opens`` times in a new tab of that context: from navigation until
the Learn tab is drawn, the model is reported in use and nothing shows progress, plus 1.5 s. Prints, per open, the
main thread's busy milliseconds and the scripts that took the most; last, the medians (and their ratio with
``--app-dir``). The page's own cost on a visitor's machine (a phone in a class), and in every browser test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import App

CHROMIUM = "/usr/bin/chromium"
READY = ("() => !!document.querySelector('#learn-step') && (document.querySelector('#model-status') || {})"
         ".innerText?.includes('Model in use') && !document.querySelector('.progress-text, .eta-bar')")


def one_open(context, url: str) -> tuple[float, Counter]:
    """Main-thread busy ms of one page open, and the busy ms by script file."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 200})
    cdp.send("Profiler.start")
    page.goto(url)
    page.wait_for_function(READY, timeout=120_000)
    time.sleep(1.5)
    profile = cdp.send("Profiler.stop")["profile"]
    page.close()
    frames = {n["id"]: n["callFrame"] for n in profile["nodes"]}
    by_script: Counter = Counter()
    for node, dt in zip(profile["samples"], profile["timeDeltas"]):
        frame = frames[node]
        key = frame["url"].rsplit("/", 1)[-1] or frame["functionName"]
        by_script[key] += dt / 1000
    busy = sum(ms for key, ms in by_script.items() if key != "(idle)")
    return busy, by_script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opens", type=int, default=4)
    parser.add_argument("--app-dir", default=None, help="another checkout to measure beside this one")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    checkouts = {"this checkout": None}
    if args.app_dir:
        checkouts[f"{args.app_dir}"] = Path(args.app_dir)
    apps = {name: (App(app_dir=path) if path else App()) for name, path in checkouts.items()}
    busy: dict[str, list[float]] = {name: [] for name in apps}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            contexts = {}
            for name, app in apps.items():
                app.wait_for_model()
                contexts[name] = browser.new_context(viewport={"width": 1280, "height": 1000})
                one_open(contexts[name], app.url)  # the HTTP cache filled: a returning visitor's open
            for k in range(args.opens):
                for name, app in apps.items():  # alternated: the machine's drift falls on both
                    ms, by_script = one_open(contexts[name], app.url)
                    busy[name].append(ms)
                    top = ", ".join(f"{key} {v:.0f}" for key, v in by_script.most_common(5) if key != "(idle)")
                    print(f"open {k + 1} {name:>16}: busy {ms:6.0f} ms  ({top})", flush=True)
            browser.close()
    finally:
        for app in apps.values():
            app.stop()
    medians = {name: statistics.median(values) for name, values in busy.items()}
    for name, values in busy.items():
        print(f"{name}: median {medians[name]:.0f} ms (min {min(values):.0f}, max {max(values):.0f}) of {len(values)} opens")
    if args.app_dir:
        other = list(medians)[1]
        print(f"ratio (this checkout / {other}): {medians['this checkout'] / medians[other]:.2f}x")


if __name__ == "__main__":
    main()

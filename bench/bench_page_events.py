"""The queue events a page open sends: every ``queue/join`` from navigation until the page is idle, by event.

    python bench/bench_page_events.py                          # a deep link to Fill-Mask, this checkout
    python bench/bench_page_events.py --app-dir /work/main     # another checkout, for a before / after
    python bench/bench_page_events.py --url-query "?tab=pretrain" --quiet 8

Launches ``python app.py --offline`` (the embedded model), opens the link once to warm up, then ``--opens``
times in a fresh headless Chromium context each, counting the page's ``queue/join`` requests (a wrapped
``fetch``) from navigation until none came for ``--quiet`` seconds after the first (a poll that keeps coming, a timer's tick,
is counted until ``--max`` seconds). Printed: the joins per open, and per event (its trigger and its outputs,
by the components' elem_id or type) how many times it was sent in the last open. Each join is a round trip the
server queues, processes and streams back: the events are what a page open costs beyond its files.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import App, percentile

CHROMIUM = "/usr/bin/chromium"
JOINS = """(() => {
  window.__joins = [];
  const orig = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = typeof input === 'string' ? input : (input.url || String(input));
    if (url.includes('/queue/join')) {
      try { window.__joins.push([JSON.parse(init.body).fn_index, performance.now()]); } catch (e) {} }
    return orig(input, init);
  };
})();"""


def describe(config: dict) -> dict[int, str]:
    """Each event's id -> "trigger(s) -> outputs", components named by elem_id, else type and label."""
    names = {}
    for c in config["components"]:
        props = c.get("props", {})
        names[c["id"]] = props.get("elem_id") or f"{c.get('type')}:{str(props.get('label') or '')[:24]}#{c['id']}"
    out = {}
    for dep in config["dependencies"]:
        targets = ",".join(f"{names.get(t, t)}.{ev}" for t, ev in dep["targets"]) or "(then)"
        outputs = ",".join(names.get(o, str(o)) for o in dep["outputs"][:4]) + ("…" if len(dep["outputs"]) > 4 else "")
        out[dep["id"]] = f"{targets} -> {outputs}"
    return out


def open_and_count(browser, url: str, quiet_s: float, max_s: float) -> list[tuple[int, float]]:
    """(event id, ms since navigation) of every queue/join the page sent until ``quiet_s`` passed with none."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(JOINS)
        start = time.monotonic()
        page.goto(url)
        seen, last = 0, time.monotonic()
        while time.monotonic() - start < max_s:
            page.wait_for_timeout(250)
            n = page.evaluate("() => window.__joins.length")
            if n != seen:
                seen, last = n, time.monotonic()
            elif seen and time.monotonic() - last >= quiet_s:  # the page's first event may come late
                break
        return [tuple(j) for j in page.evaluate("() => window.__joins")]
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opens", type=int, default=3)
    parser.add_argument("--app-dir", default=None, help="another checkout to measure (e.g. the main branch)")
    parser.add_argument("--url-query", default="?tab=fill-mask&text=The+teacher+asked+the+class+to+%5BMASK%5D+the+answer.")
    parser.add_argument("--quiet", type=float, default=6.0, help="seconds without a join that end an open")
    parser.add_argument("--max", type=float, default=90.0, help="seconds an open is followed at most")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    app_dir = {"app_dir": Path(args.app_dir)} if args.app_dir else {}
    with App(**app_dir) as app, sync_playwright() as pw:
        app.wait_for_model()
        names = describe(httpx.get(app.url + "config", timeout=30).json())
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        url = app.url + args.url_query
        open_and_count(browser, url, args.quiet, args.max)  # warm-up
        counts, last = [], []
        for _ in range(args.opens):
            last = open_and_count(browser, url, args.quiet, args.max)
            counts.append(len(last))
        browser.close()
    print(f"queue/join per open: p50 {percentile(counts, 50):.0f} ({min(counts)}–{max(counts)}) over {args.opens} opens")
    for fn, n in sorted(Counter(fn for fn, _ in last).items(), key=lambda kv: -kv[1]):
        first = min(t for f, t in last if f == fn)
        print(f"  {n:3d} × #{fn:<4d} first at {first / 1000:5.1f} s  {names.get(fn, '?')}")


if __name__ == "__main__":
    main()

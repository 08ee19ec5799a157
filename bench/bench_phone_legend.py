"""What a phone pays for a figure's legend fix: the first draw and the one relayout after it (plotly_figure.js's
``settle``) of the twins' held-out curve at 340 px, timed in headless Chromium from call to resolved.

    python bench/bench_phone_legend.py --loads 6

Prints the median and range of each over the page loads. Desktop draws do no relayout (the fix runs below 640 px).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import gradio as gr
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertdemo.models.twin_curve import read_curve
from bertdemo.ui.plotly_figure import PlotlyFigure, file_aliases
from bertdemo.viz.twin_curve import curve_spec

# wraps Plotly.react and Plotly.relayout as the page's plotly.js is set, and keeps each call's time
TIMER = """(() => { window.__t = {react: [], relayout: []}; let P;
  const wrap = (obj, name) => { const f = obj[name]; obj[name] = function () { const t0 = performance.now();
    return Promise.resolve(f.apply(this, arguments)).then(r => { window.__t[name].push(performance.now() - t0); return r; }); }; };
  Object.defineProperty(window, 'Plotly', {configurable: true, get() { return P; },
    set(v) { P = v; if (v && v.react && !v.__w) { v.__w = 1; wrap(v, 'react'); wrap(v, 'relayout'); } }}); })()"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=6)
    parser.add_argument("--width", type=int, default=340)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    with gr.Blocks() as demo:
        PlotlyFigure(curve_spec(read_curve()), elem_id="curve")
    demo.launch(prevent_thread_lock=True, quiet=True, app_kwargs={"middleware": [file_aliases()]})
    times: dict[str, list[float]] = {"react": [], "relayout": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"])
            for _ in range(args.loads):
                page = browser.new_page(viewport={"width": args.width, "height": 900})
                page.add_init_script(TIMER)
                page.goto(demo.local_url)
                page.wait_for_function("() => window.__t.react.length >= 1", timeout=60_000)
                page.wait_for_timeout(1500)  # the relayout follows the first draw
                drawn = page.evaluate("() => window.__t")
                times["react"] += drawn["react"][:1]
                times["relayout"] += drawn["relayout"]
                page.close()
            browser.close()
    finally:
        demo.close()
    for name, values in times.items():
        if values:
            print(f"{name}: {len(values)} calls, median {statistics.median(values):.0f} ms "
                  f"({min(values):.0f}-{max(values):.0f})")
        else:
            print(f"{name}: no calls")


if __name__ == "__main__":
    main()

"""Save a benchmark's plotly figure as a PNG for docs/lab/benchmarks.md.

Plotly's own ``write_image`` needs the kaleido package; the project already drives the
system Chromium through Playwright for its browser tests, so this renders the figure's HTML
in that browser and screenshots it. ``BERTDEMO_CHROMIUM`` overrides the browser path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import plotly.graph_objects as go

DEFAULT_CHROMIUM = "/usr/bin/chromium"


def save_png(fig: go.Figure, path: str | Path, width: int = 900, height: int = 450) -> Path:
    """Render ``fig`` at ``width`` × ``height`` CSS pixels into the PNG file ``path``."""
    from playwright.sync_api import sync_playwright

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = go.Figure(fig)
    fig.update_layout(width=width, height=height, margin=dict(l=60, r=20, t=50, b=50))
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "figure.html"
        page_file.write_text(fig.to_html(full_html=True, include_plotlyjs=True), encoding="utf-8")
        executable = os.environ.get("BERTDEMO_CHROMIUM", DEFAULT_CHROMIUM)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=executable,
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(page_file.as_uri())
            page.wait_for_selector(".main-svg")
            page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": width, "height": height})
            browser.close()
    return path

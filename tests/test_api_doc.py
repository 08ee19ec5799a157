"""docs/api.md lists exactly the endpoints a client can call; the page's own plumbing is not among them."""

from __future__ import annotations

import re
from pathlib import Path

from bertdemo.context import AppContext
from bertdemo.ui import build_app
from bertdemo.ui.api_surface import page_load_ids, public_endpoints

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def documented() -> list[str]:
    """Every ``/name`` in backticks in the doc's endpoint table."""
    table = [line for line in API_DOC.read_text(encoding="utf-8").splitlines() if line.startswith("| `/")]
    return sorted({name for line in table for name in re.findall(r"`/([a-z_0-9]+)`", line.split(" | ")[0])})


def test_the_api_doc_lists_every_public_endpoint_and_no_other(tmp_path):
    demo = build_app(AppContext.for_tests(tmp_path, public=True))
    assert documented() == public_endpoints(demo)


def test_page_load_values_are_not_api_endpoints(tmp_path):
    """A status line or figure read at page load gave gradio a public ``/lambda_17`` endpoint. The app has none
    left (the run tabs read their runs when shown: tests/test_page_open_events.py); one added is made private."""
    import gradio as gr

    from bertdemo.ui.api_surface import hide_page_loads

    demo = build_app(AppContext.for_tests(tmp_path))
    assert not [n for n in public_endpoints(demo) if n.startswith("lambda")]
    assert {h.api_visibility for h in demo.fns.values() if h._id in page_load_ids(demo)} <= {"private"}
    with gr.Blocks() as page:
        gr.Markdown(lambda: "read at page load")
    assert len(page_load_ids(page)) == 1 and [n for n in public_endpoints(page) if n.startswith("lambda")]
    hide_page_loads(page)
    assert {h.api_visibility for h in page.fns.values() if h._id in page_load_ids(page)} == {"private"}
    assert not [n for n in public_endpoints(page) if n.startswith("lambda")]

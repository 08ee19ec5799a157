"""An API caller reads plain text: the run endpoints answered with the page's status Markdown, so a start on a
learner's lines read "2 labels &#40;30 copies of an earlier one, held out with it&#41;" and the run id came in
<code> tags (the audit's re-run, 2026-12-03). The page keeps its escaped Markdown."""

from __future__ import annotations

import pytest

from bertdemo import compat
from bertdemo.context import AppContext
from bertdemo.ui import build_app
from bertdemo.viz.text import literal, plain_text
from tests.helpers import run_coroutine

LINES = "\n".join(f"{'pos' if i % 2 else 'neg'}\tit's line {i % 10} (a copy)" for i in range(40))  # 30 copies


def test_plain_text_is_what_the_page_shows():
    shown = f"**RUNNING** · run <code>{literal('a_b')}</code> · 2 labels {literal('(it’s <b>)')}<br>next"
    assert plain_text(shown) == "**RUNNING** · run a_b · 2 labels (it’s <b>)next"


@pytest.fixture(scope="module")
def app(tmp_path_factory, tiny_mlm_dir):
    ctx = AppContext.for_tests(tmp_path_factory.mktemp("api-answers"), default_model=str(tiny_mlm_dir))
    demo = build_app(ctx)
    yield ctx, {f.api_name: f for f in compat.event_handlers(demo)}, demo
    ctx.runs.shutdown(timeout=60)


def _call(demo, handler, *inputs) -> str:
    return run_coroutine(demo.call_function(handler, list(inputs), None, None))["prediction"]


def test_a_run_started_and_stopped_through_the_api_answers_plain_text(app, monkeypatch):
    import threading

    from bertdemo.finetune.own_run import OwnRun

    ctx, handlers, demo = app
    # the run's thread waits before its work: the answer to the start reads the run's first message whatever the
    # machine's load (its work replaces it with "Loading the starting model…" as soon as it begins)
    go, work = threading.Event(), OwnRun.work
    monkeypatch.setattr(OwnRun, "work", lambda run: go.wait(timeout=120) and work(run))
    try:
        started = _call(demo, handlers["start_finetune"], {"task": "own", "lines": LINES, "init": "random",
                                                            "epochs": 20, "time_budget_s": 0}, "")
    finally:
        go.set()
    stopped = _call(demo, handlers["stop_run"], "")
    for answer in (started, stopped):
        assert "&#" not in answer and "<code>" not in answer, answer
    assert "2 labels (30 copies of an earlier one, held out with it)" in started
    assert ctx.runs.manager.latest.run_id in started

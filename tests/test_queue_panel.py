"""A queued run cancelled from the page leaves no queue text behind (issue 54): the start's own answer box (here the
own-data section's result, which said "… is number 1 in the queue … about 2 min") says it was cancelled, so a
later refusal's "Error" never sits above a stale place; and the tab's poll, which skips what it believes the page
already shows, shows the queue line again when the same start is queued again after the cancel.

The page is simulated over the built app's own handlers (called as gradio calls them), no browser."""

from __future__ import annotations

import gradio as gr
import pytest
from gradio.helpers import special_args

from bertdemo import compat
from bertdemo.context import AppContext
from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE
from bertdemo.ui import build_app

TOKEN = "tok-queue-panel"


class Page:
    """What one browser holds: each component's value as the handlers last set it (else as built)."""

    def __init__(self, demo: gr.Blocks) -> None:
        self.demo = demo
        self.values: dict[int, object] = {}

    def value(self, component) -> object:
        return self.values.get(component._id, getattr(component, "value", None))

    def run(self, handler, **by_elem_id: object) -> dict[str, object]:
        """Call ``handler`` with the page's values (``by_elem_id`` set first); keep what it returns; its outputs by
        elem_id (or id)."""
        for component in handler.inputs:
            if getattr(component, "elem_id", None) in by_elem_id:
                self.values[component._id] = by_elem_id[component.elem_id]
        args, *_ = special_args(handler.fn, [self.value(c) for c in handler.inputs], request=None)
        out = handler.fn(*args)
        out = out if isinstance(out, tuple) and len(handler.outputs) > 1 else (out,)
        sent = {}
        for component, value in zip(handler.outputs, out):
            if isinstance(value, dict) and value.get("__type__") == "update":
                if "value" not in value:
                    continue
                value = value["value"]
            self.values[component._id] = value
            sent[getattr(component, "elem_id", None) or component._id] = value
        return sent


def _drawn_after(demo, handler):
    """The poll's draw the app chains after ``handler`` (TabPoll.after)."""
    handler_id = next(i for i, h in compat.event_handlers_by_id(demo) if h is handler)
    return next(h for h in compat.event_handlers(demo) if h.trigger_after == handler_id)


def _handler(demo, name: str, output: str):
    """The handler named ``name`` whose outputs include the element ``output``."""
    return next(h for h in compat.event_handlers(demo) if getattr(h.fn, "__name__", "") == name
                and output in [getattr(c, "elem_id", None) for c in h.outputs])


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    ctx = AppContext.for_tests(tmp_path_factory.mktemp("queue-panel"))
    try:
        yield ctx, build_app(ctx)
    finally:
        ctx.runs.shutdown(timeout=30)


def test_a_cancelled_queued_run_leaves_no_queue_text_behind(app):
    ctx, demo = app
    page = Page(demo)
    own_start = next(h for h in compat.event_handlers(demo) if h.api_name == "own_start")
    shown = _handler(demo, "tab_shown", "ft-queue")  # the Fine-tune tab's poll, drawn after a start
    cancel = _handler(demo, "cancel_queued_run", "ft-queue")
    try:
        with ctx.runs.manager.hold():  # the slot is busy: the start waits in the queue
            answer = page.run(own_start, **{"pt-owner": TOKEN, "own-lines": SENTIMENT_EXAMPLE})["own-result"]
            assert "is number 1 in the queue" in answer
            assert "is number 1 in the queue" in page.run(shown)["ft-queue"]
            after = page.run(cancel)
            assert ctx.runs.queued(TOKEN, "") is None and after["ft-queue"] == ""
            # the poll's draw after it sends the line (now gone) again
            assert page.run(_drawn_after(demo, cancel))["ft-queue"] == ""
            assert "in the queue" not in str(page.value(own_start.outputs[0]))  # the answer box no longer says so
            assert "cancelled" in str(page.value(own_start.outputs[0]))
            # queued again: the poll shows the same line again (it is not skipped as "already on the page")
            page.run(own_start)
            assert "is number 1 in the queue" in str(page.run(shown).get("ft-queue"))
    finally:
        for _, key, _, _ in ctx.runs.queue.waiting():
            ctx.runs.queue.cancel(key)


def test_a_run_that_ended_before_its_starts_answer_reached_the_page_is_drawn_again(app):
    """Own data's Start answers in the result box ("Started run …"); its run may end at once (stopped here) and a
    tick draw the ending before that answer reaches the page. The answer, arriving last, then stood until the
    learner picked another run: the poll believed the box showed the ending. The draw chained after the start sends
    the run's ending again."""
    ctx, demo = app
    page = Page(demo)
    own_start = next(h for h in compat.event_handlers(demo) if h.api_name == "own_start")
    tick = _handler(demo, "tab_tick", "own-result")
    page.run(tick, **{"pt-owner": TOKEN})  # the page was open: its first tick lists the visitor's runs
    started = page.run(own_start, **{"own-lines": SENTIMENT_EXAMPLE})
    assert started["own-result"].startswith("Started run")
    run = ctx.runs.manager.current
    run.stop()
    assert run.join(timeout=120)
    ending = page.run(tick)["own-result"]  # the tick that left after the run ended reaches the page first…
    assert "Stopped after" in ending
    for component in own_start.outputs:  # …then the start's answer
        page.values[component._id] = started[getattr(component, "elem_id", None) or component._id]
    assert page.run(_drawn_after(demo, own_start))["own-result"] == ending
    assert page.run(tick).get("own-result") is None  # and a tick after that sends nothing new

"""Every endpoint that starts a run — the page's Start buttons and the API's start endpoints alike — joins the
fair queue when the training slot is busy, instead of refusing: the test enumerates the built app's endpoints
against :data:`bertdemo.ui.run_starts.RUN_STARTS`, then, with the slot held busy, calls each one as a visitor
would and checks the start was queued under that visitor's token (its place readable with that token alone,
cancellable with it, never with a stranger's)."""

from __future__ import annotations

import re

import gradio as gr
import pytest

from bertdemo import compat
from bertdemo.context import AppContext
from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE
from bertdemo.ui import build_app
from bertdemo.ui.heavy_requests import declaration
from bertdemo.ui.run_starts import RUN_STARTS

_NUMBERED = re.compile(r"_\d+$")
# a name that reads as a start: what a new run-starting endpoint would be called (it must then be declared)
LOOKS_LIKE_A_START = re.compile(r"(^|_)start(_|$)|_cell_from_page$")


def _stem(name: str) -> str:
    return _NUMBERED.sub("", name or "")


def _page_args(handler, token: str, **replace: object) -> list:
    """A page event's arguments as its inputs hold them now (the page's defaults), the browser's owner token
    where the event takes one (the hidden owner box, or a State), and ``replace`` by input index."""
    args: list = [None]  # the gr.Request gradio injects first (a handler called in-process has none)
    for i, comp in enumerate(handler.inputs):
        if str(i) in replace:
            args.append(replace[str(i)])
        elif getattr(comp, "elem_id", None) == "pt-owner" or isinstance(comp, gr.State):
            args.append(token)
        else:
            args.append(comp.value)
    return args


# how a visitor calls each run start (in-process: its handler with the visitor's arguments)
CALLS = {
    "start_run": lambda h, token: [{"preset": "bert-tiny", "steps": 50}, token],
    "start_from_page": _page_args,
    "start_finetune": lambda h, token: [{"init": "random", "time_budget_s": 30}, token],
    "start_finetune_from_page": _page_args,
    "start_names": _page_args,
    "own_start": lambda h, token: _page_args(h, token, **{"1": SENTIMENT_EXAMPLE}),
    "start_table5_cell": lambda h, token: ["mlm", "topic", 0, token],
    "table5_cell_from_page": _page_args,
}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """A public app (its context, its run-start handlers by name, every named endpoint)."""
    ctx = AppContext.for_tests(tmp_path_factory.mktemp("starts"), public=True)
    demo = build_app(ctx)
    named = [h for h in compat.event_handlers(demo) if h.api_name and h.fn is not None]
    try:
        yield ctx, {_stem(h.api_name): h for h in named if _stem(h.api_name) in RUN_STARTS}, named
    finally:
        ctx.runs.shutdown(timeout=30)


def test_every_start_of_the_app_is_declared_and_has_a_visitors_call_here(app):
    _ctx, handlers, named = app
    starts = {_stem(h.api_name) for h in named if LOOKS_LIKE_A_START.search(_stem(h.api_name))}
    assert starts == set(RUN_STARTS)  # an endpoint named as a start is declared (and each declared one exists)
    assert set(handlers) == RUN_STARTS
    assert set(CALLS) == RUN_STARTS  # a new run start needs its call here, so the test below reaches it
    assert all(declaration(name) is not None for name in RUN_STARTS)  # and each has its request rule


@pytest.mark.parametrize("name", sorted(RUN_STARTS))
def test_a_start_that_finds_the_slot_busy_is_queued_for_its_visitor_not_refused(app, name):
    ctx, handlers, _ = app
    handler = handlers[name]
    token, stranger = f"tok-{name}", f"stranger-{name}"
    try:
        with ctx.runs.manager.hold():  # the slot is busy (as during a GPU burst): no run may start now
            answer = handler.fn(*CALLS[name](handler, token))
            text = str(answer[0] if isinstance(answer, tuple) else answer)
            assert "stop it" not in text.lower()
            if handler.api_visibility == "public":  # an API caller reads its place in the answer (a page: its line)
                assert re.search(r"is number 1 in the queue for the training slot.*Follow it with /queue_status",
                                 text), text
            place = ctx.runs.queued(token, "")
            assert (place.position, place.run_id, place.error) == (1, "", "")
            assert ctx.runs.queued(stranger, "") is None  # a stranger reads nothing of it
            assert not ctx.runs.cancel_queued(stranger, "")
            assert [key for _, key, _, _ in ctx.runs.queue.waiting()] == [token]
            assert ctx.runs.cancel_queued(token, "")
            assert ctx.runs.queue.waiting() == []
    finally:  # one start's failure leaves nothing queued for the next
        for _, key, _, _ in ctx.runs.queue.waiting():
            ctx.runs.queue.cancel(key)


@pytest.mark.parametrize("name, settings, refusal", [
    ("start_run", {"objective": "gpt"}, "objective must be one of"),
    ("start_finetune", {"learning_rate": 5}, "learning_rate 5 is outside"),
])
def test_a_start_that_could_never_run_is_refused_at_once_not_queued(app, name, settings, refusal):
    ctx, handlers, _ = app
    with ctx.runs.manager.hold(), pytest.raises(gr.Error, match=refusal):  # the slot is busy
        handlers[name].fn(settings, f"tok-bad-{name}")
    assert ctx.runs.queue.waiting() == []

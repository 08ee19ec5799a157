"""A visitor's share of the queue and of page-session memory, on gradio's own queue and state holder:
one client's flood is told to wait while another visitor is still queued, a client that opens a
session per call drops its own oldest sessions (not other visitors'), and the memory for sessions
stays within the stated bound (``--max-sessions`` × the measured size of one session)."""

from __future__ import annotations

import tracemalloc

import gradio as gr
import pytest
from gradio.data_classes import PredictBodyInternal
from gradio.state_holder import StateHolder
from starlette.requests import Request

from bertdemo.traffic import VISITOR_HEADER, TrafficRules
from bertdemo.ui.visitor_shares import share_per_visitor
from tests.helpers import run_coroutine

SESSION_MB = 1.5  # the most one page session of the app may take (measured about 1.23 MB)


def _request(visitor: str) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "query_string": b"",
                    "headers": [(VISITOR_HEADER.encode(), visitor.encode())]})


def _small_app(rules: TrafficRules) -> gr.Blocks:
    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(lambda text: text, box, out, api_name="echo")
    demo.queue(max_size=64)
    StateHolder().set_blocks(demo)  # what launch does
    share_per_visitor(demo, rules)
    return demo


async def _join(demo: gr.Blocks, visitor: str, session: str | None):
    """Join the queue as ``visitor``; the answer, and the session gradio keeps the event's state under
    (an API call that names none gets one made by gradio)."""
    body = PredictBodyInternal(data=["hi"], fn_index=0, session_hash=session)
    answer = await demo._queue.push(body=body, request=_request(visitor), username=None)
    return answer, body.session_hash


def test_one_visitors_flood_is_told_to_wait_while_others_are_queued():
    demo = _small_app(TrafficRules(queue_per_visitor=3))

    async def scenario():
        flood = [(await _join(demo, "10.0.0.1", f"f{i}"))[0] for i in range(5)]
        other = (await _join(demo, "10.0.0.2", "o1"))[0]
        return flood, other

    flood, other = run_coroutine(scenario())  # the queue is not started: every joined event stays waiting
    assert [ok for ok, _, _ in flood] == [True, True, True, False, False]
    assert flood[3][1:] == ("You have 3 requests waiting or running; this server computes at most 3 at once for one "
                            "visitor, so others are served too. Wait for those to finish, then try again.", "queue_full")
    assert other[0] is True and other[2] == "success"
    assert len(demo._queue.event_ids_to_events) == 4


def test_an_event_that_does_not_exist_is_refused_in_words_not_as_a_server_fault():
    """The public audit's ``fn_index`` of 10**30 or -1: gradio looked it up unguarded, answered HTTP 500 and wrote
    a traceback to the log (about 3 KB a request, 15 times what was sent)."""
    demo = _small_app(TrafficRules(queue_per_visitor=3))

    async def join(fn_index: int):
        body = PredictBodyInternal(data=["hi"], fn_index=fn_index, session_hash="s1")
        return await demo._queue.push(body=body, request=_request("10.0.0.1"), username=None)

    for fn_index in (10**30, -1, 7):
        assert run_coroutine(join(fn_index)) == (False, f"This server has no event {fn_index}.", "error")
    assert run_coroutine(join(0))[0] is True


def test_a_client_opening_a_session_per_call_drops_its_own_oldest_sessions_only():
    demo = _small_app(TrafficRules(queue_per_visitor=0, sessions_per_visitor=2))
    holder = demo.state_holder

    async def scenario():
        await _join(demo, "10.0.0.2", "learner")
        holder["learner"]  # what running the event does: gradio keeps the page's state for the session
        made = []
        for i in range(6):
            _, session = await _join(demo, "10.0.0.1", f"api-{i}" if i % 2 else None)  # REST calls name none
            holder[session]
            made.append(session)
        return made

    made = run_coroutine(scenario())
    assert list(holder.session_data) == ["learner", *made[-2:]] and made[-1] == "api-5"


@pytest.mark.slow  # hundreds of page sessions opened and measured
def test_page_sessions_stay_within_the_stated_memory(tmp_path):
    """Gradio copies every block's config per session; the app's is measured here, and ``--max-sessions``
    (500 by default) of them fit the bound the README states: 500 × 1 MB."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path, public=True))
    demo.state_session_capacity = 4
    holder = StateHolder()
    holder.set_blocks(demo)
    holder["warm-up"]
    tracemalloc.start()  # each session copies the config under tracemalloc: about 0.8 CPU-s
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(10):
            holder[f"session-{i}"]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(holder.session_data) == 4  # the oldest were dropped
    per_session_mb = (after - before) / 4 / 2**20  # what is kept: 4 sessions
    assert 0.1 < per_session_mb < SESSION_MB, per_session_mb
    assert TrafficRules().max_sessions * SESSION_MB <= 500

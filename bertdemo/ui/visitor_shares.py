"""One visitor's share of the queue and of the server's memory for page sessions.

Gradio's queue takes ``--max-queue`` requests from anyone: one client with 70 requests in flight kept
ordinary visitors waiting seconds, and some were told "Queue is full". Gradio also keeps a copy of the
page's state for every session that sends an event (about 0.6 MB each, measured in
``tests/test_visitor_shares.py``), and an API client can open a new session with every call.

:func:`share_per_visitor` wraps the queue's ``push`` (the one door every event passes, page or API; gradio
internals reached through :mod:`bertdemo.compat`):

- a visitor with ``queue_per_visitor`` events waiting or running is told to wait for them, while others
  keep being served; a class member who joined is a visitor of their own (the door says so), and every
  visitor behind one address together — a class behind its school's one address — has at most
  ``queue_per_address`` (so tokens a stranger mints by joining classes do not buy a larger share);
- a visitor's sessions beyond ``sessions_per_visitor`` drop their oldest one from gradio's state holder,
  so a client making a session per call uses its own share and does not push out other visitors' pages;
- an event that does not exist (an API caller's ``fn_index``) is refused in words (gradio's look-up of it failed
  as a server fault, its traceback in the log).

The total stays within gradio's ``state_session_capacity`` (``launch`` gets ``max_sessions``), so the
memory for sessions is at most about ``max_sessions`` × 1.25 MB. Who the visitor is comes from the HTTP
door (:data:`bertdemo.traffic.VISITOR_HEADER`). The per-visitor bookkeeping lives in the closure made
for one app, bounded like the sessions themselves.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import gradio as gr

from bertdemo import compat
from bertdemo.traffic import ADDRESS_HEADER, VISITOR_HEADER, TrafficRules


def busy_message(waiting: int, most: int) -> str:
    return (f"You have {waiting} requests waiting or running; this server computes at most {most} at once for "
            "one visitor, so others are served too. Wait for those to finish, then try again.")


def address_busy_message(waiting: int, most: int) -> str:
    return (f"Your network's address has {waiting} requests waiting or running; this server computes at most {most} "
            "at once for one address, so others are served too. Try again in a moment.")


def share_per_visitor(demo: gr.Blocks, rules: TrafficRules) -> None:
    """Limit each visitor's events in ``demo``'s queue and sessions in its state (see the module).
    Call after ``demo.queue()``; a limit of 0 turns that limit off."""
    sessions: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()  # visitor -> their session hashes, oldest first

    def remember(visitor: str, session_hash: str | None) -> None:
        if not session_hash or rules.sessions_per_visitor <= 0:
            return
        own = sessions.setdefault(visitor, OrderedDict())
        sessions.move_to_end(visitor)
        own[session_hash] = None
        own.move_to_end(session_hash)
        while len(own) > rules.sessions_per_visitor:
            oldest, _ = own.popitem(last=False)
            compat.drop_session(demo, oldest)
        while len(sessions) > max(rules.max_sessions, 1):  # visitors with no session left in gradio's holder
            sessions.popitem(last=False)

    def visitor_of(request: Any) -> str | None:
        return request.headers.get(VISITOR_HEADER) if request is not None else None

    def address_of(request: Any) -> str | None:
        return request.headers.get(ADDRESS_HEADER) or visitor_of(request) if request is not None else None

    def limited(push: Callable) -> Callable:
        async def limited_push(body: Any, request: Any, username: str | None):
            visitor = visitor_of(request)
            if visitor is None:  # not through the door (a test's own queue): gradio's rules only
                return await push(body=body, request=request, username=username)
            if rules.queue_per_visitor > 0 or rules.queue_per_address > 0:
                address = address_of(request)
                queued = [compat.event_request(event) for event in compat.queued_events(demo)]
                waiting = sum(1 for other in queued if visitor_of(other) == visitor)
                if 0 < rules.queue_per_visitor <= waiting:
                    return False, busy_message(waiting, rules.queue_per_visitor), "queue_full"
                behind = sum(1 for other in queued if address_of(other) == address)
                if 0 < rules.queue_per_address <= behind:
                    return False, address_busy_message(behind, rules.queue_per_address), "queue_full"
            try:
                answer = await push(body=body, request=request, username=username)
            except KeyError:  # gradio's look-up of the event (an API caller's fn_index): an HTTP 500 and a traceback
                return False, f"This server has no event {getattr(body, 'fn_index', None)}.", "error"
            if answer[0]:  # joined: its session is the page's, or (an API call without one) the one gradio made
                remember(visitor, getattr(body, "session_hash", None))
            return answer

        return limited_push

    compat.wrap_queue_push(demo, limited)

"""One door for every start of a run, from the page or the API
(:meth:`bertdemo.runs.service.RunService.start_or_queue`): a start that finds the training slot busy joins the
fair queue (:mod:`bertdemo.runs.queue`: one waiting run per visitor, its place and estimated start, cancellable
by the token that queued it) instead of being refused, and nobody is told to stop a run that is not theirs; a
start that could never run (its settings, the visitor's quota) is refused at once, not queued. :data:`RUN_STARTS` names every endpoint that starts a run;
``tests/test_run_starts.py`` enumerates the built app's endpoints against it and, with the slot busy, calls
each one and fails for one that refuses instead of queueing. The API's own queue endpoints
(``/queue_status``, ``/cancel_queued``) are added by :func:`add_queue_api`. Wiring only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gradio as gr

from bertdemo.runs.queue import Place
from bertdemo.ui import api_answers
from bertdemo.ui.common import user_errors, visitor_of

if TYPE_CHECKING:
    from bertdemo.context import AppContext

# every endpoint (page event or API) that starts a run: each goes through RunService.start_or_queue
RUN_STARTS = frozenset({
    "start_run", "start_from_page",  # pretraining
    "start_finetune", "start_finetune_from_page", "start_names", "own_start",  # fine-tuning
    "start_table5_cell", "table5_cell_from_page",  # Table 5 in miniature (a fine-tuning run)
})
API_FOLLOW = " Follow it with /queue_status and your owner_token; /cancel_queued with the same token cancels it."


def settings_of(value: Any) -> dict:
    """An API caller's ``settings`` as a dict (checked before a start is queued: ValueError otherwise)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("settings must be a JSON object (a dict of setting names and values).")
    return dict(value)


def answer(outcome: Any, started: Callable[[], str], api: bool = False) -> str:
    """What a start answers: ``started()`` (the live run's status) when it started, else its place in the queue
    (``api``: with the endpoints that follow and cancel it)."""
    if isinstance(outcome, Place):
        return outcome.sentence() + (API_FOLLOW if api else "")
    return started()


def place_dict(place: Place | None) -> dict | None:
    """A queued run's place as plain values for the API (None when the caller has none)."""
    if place is None:
        return None
    waiting = not place.run_id and not place.error
    return {"waiting": waiting, "position": place.position if waiting else 0,
            "estimated_start_s": place.ahead_s if waiting else None, "label": place.label,
            "run_id": place.run_id, "error": place.error, "message": place.sentence()}


def add_queue_api(ctx: AppContext) -> None:
    """The API's view of the queue: ``/queue_status`` and ``/cancel_queued`` (build inside a tab)."""
    runs = ctx.runs

    def queue_status(owner_token: str = "", request: gr.Request = None) -> dict | None:
        """Your queued run (the one a start queued while the training slot was busy): `waiting`, `position`
        (1 = next), `estimated_start_s` (null when unknown), `run_id` once it has started, `error` when it could
        not start, `message` in words; null when you have none. Pass the owner_token you started it with."""
        return place_dict(runs.queued(str(owner_token or ""), visitor_of(request)))

    @user_errors
    def cancel_queued(owner_token: str = "", request: gr.Request = None) -> str:
        """Cancel your queued run before it starts (the owner_token you started it with)."""
        if not runs.cancel_queued(str(owner_token or ""), visitor_of(request)):
            raise ValueError("You have no run waiting in the queue (pass the owner_token you started it with).")
        return "Your queued run is cancelled."

    gr.api(queue_status, api_name="queue_status")
    gr.api(api_answers.plain(cancel_queued), api_name="cancel_queued")

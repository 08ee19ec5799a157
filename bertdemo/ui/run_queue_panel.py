"""The queue line under a run tab's Start button (:class:`QueuePanel`): when the training slot was busy, the
visitor's run waits in the fair queue (:mod:`bertdemo.runs.queue`); the line says its place and estimated
start, refreshed by the tab's poll while it waits (:class:`~bertdemo.ui.tab_poll.TabPoll`: the tab's one timer), with a
button to cancel it. A cancel leaves no queue text behind: the line goes, and a start's own answer box that still
says the run's place (a section's result) says it was cancelled, so a later refusal's "Error" never sits above a
stale "number 1 in the queue … about 2 min". Wiring only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.runs.queue import is_place_sentence
from bertdemo.ui.common import user_errors, visitor_of

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.ui.tab_poll import TabPoll

CANCELLED = "Your queued run is cancelled."
NOT_WAITING = "You have no run waiting in the queue."


class QueuePanel:
    """Build inside the tab, under its Start button (``prefix``: the tab's elem_id prefix); then :meth:`wire`."""

    def __init__(self, ctx: AppContext, prefix: str) -> None:
        self.ctx = ctx
        with gr.Row(visible=False) as self.row:
            self.line = gr.Markdown(elem_id=f"{prefix}-queue")
            self.cancel = gr.Button("Cancel my queued run", size="sm", scale=0, min_width=180,
                                    elem_id=f"{prefix}-queue-cancel")

    def wire(self, poll: TabPoll, owner: gr.Textbox, answers: Sequence[gr.components.Component] = ()) -> None:
        """The visitor's place, or nothing: a part of the tab's ``poll`` (live while the run waits; the tab's Start
        is chained to the poll with :meth:`TabPoll.after`), and after a cancel. ``answers``: the tab's boxes where
        a start from the page writes its answer (which is the run's place when the slot was busy)."""
        runs = self.ctx.runs
        outputs = [self.row, self.line, self.cancel]
        answers = list(answers)

        def place_now(token: str, request: gr.Request):
            place = runs.queued(token or "", visitor_of(request))
            waiting = place is not None and not place.run_id and not place.error
            return (gr.update(visible=place is not None), place.sentence() if place else "",
                    gr.update(visible=waiting)), waiting

        def queue_place(request: gr.Request, token: str):
            return place_now(token, request)

        @user_errors
        def cancel_queued_run(token: str, request: gr.Request, *shown: object):
            """Cancel this visitor's queued run; the line and every answer box that still says its place follow
            (then the tab's poll draws them again: a tick that left before the cancel may reach the page after it)."""
            cancelled = runs.cancel_queued(token or "", visitor_of(request))
            if cancelled:
                gr.Info(CANCELLED)
            panel, _ = place_now(token, request)
            now = panel[1] or (CANCELLED if cancelled else NOT_WAITING)  # a place that started or failed says so
            return (*panel, *(now if is_place_sentence(text) else gr.skip() for text in shown))

        poll.add(queue_place, [owner], outputs)
        poll.after(self.cancel.click(cancel_queued_run, [owner, *answers], [*outputs, *answers],
                                     api_visibility="private"), writes=[*outputs, *answers])

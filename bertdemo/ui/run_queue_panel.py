"""The queue line under a run tab's Start button (:class:`QueuePanel`): when the training slot was busy, the
visitor's run waits in the fair queue (:mod:`bertdemo.runs.queue`); the line says its place and estimated
start, refreshed by the tab's poll while it waits (:class:`~bertdemo.ui.tab_poll.TabPoll`: the tab's one timer), with a
button to cancel it. Wiring only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr

from bertdemo.ui.common import user_errors, visitor_of

if TYPE_CHECKING:
    from bertdemo.context import AppContext
    from bertdemo.ui.tab_poll import TabPoll


class QueuePanel:
    """Build inside the tab, under its Start button (``prefix``: the tab's elem_id prefix); then :meth:`wire`."""

    def __init__(self, ctx: AppContext, prefix: str) -> None:
        self.ctx = ctx
        with gr.Row(visible=False) as self.row:
            self.line = gr.Markdown(elem_id=f"{prefix}-queue")
            self.cancel = gr.Button("Cancel my queued run", size="sm", scale=0, min_width=180,
                                    elem_id=f"{prefix}-queue-cancel")

    def wire(self, poll: TabPoll, owner: gr.Textbox) -> None:
        """The visitor's place, or nothing: a part of the tab's ``poll`` (live while the run waits; the tab's Start
        is chained to the poll with :meth:`TabPoll.after`), and after a cancel."""
        runs = self.ctx.runs
        outputs = [self.row, self.line, self.cancel]

        def place_now(token: str, request: gr.Request):
            place = runs.queued(token or "", visitor_of(request))
            waiting = place is not None and not place.run_id and not place.error
            return (gr.update(visible=place is not None), place.sentence() if place else "",
                    gr.update(visible=waiting)), waiting

        def queue_place(request: gr.Request, token: str):
            return place_now(token, request)

        @user_errors
        def cancel_queued_run(token: str, request: gr.Request):
            if runs.cancel_queued(token or "", visitor_of(request)):
                gr.Info("Your queued run is cancelled.")
            return place_now(token, request)[0]

        poll.add(queue_place, [owner], outputs)
        self.cancel.click(cancel_queued_run, owner, outputs, api_visibility="private")

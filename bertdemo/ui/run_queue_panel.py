"""The queue line under a run tab's Start button (:class:`QueuePanel`): when the training slot was busy, the
visitor's run waits in the fair queue (:mod:`bertdemo.runs.queue`); the line says its place and estimated
start, refreshed every few seconds while it waits, with a button to cancel it. Wiring only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gradio as gr

from bertdemo.ui.common import user_errors, visitor_of

if TYPE_CHECKING:
    from bertdemo.context import AppContext

QUEUE_POLL_S = 3.0


class QueuePanel:
    """Build inside the tab, under its Start button (``prefix``: the tab's elem_id prefix); then :meth:`wire`."""

    def __init__(self, ctx: AppContext, prefix: str) -> None:
        self.ctx = ctx
        with gr.Row(visible=False) as self.row:
            self.line = gr.Markdown(elem_id=f"{prefix}-queue")
            self.cancel = gr.Button("Cancel my queued run", size="sm", scale=0, min_width=180,
                                    elem_id=f"{prefix}-queue-cancel")
        self.timer = gr.Timer(QUEUE_POLL_S, active=False)

    def wire(self, started: Any, owner: gr.Textbox) -> None:
        """After ``started`` (the Start click's event) and on its timer: the visitor's place, or nothing."""
        runs = self.ctx.runs
        outputs = [self.row, self.line, self.cancel, self.timer]

        def queue_place(token: str, request: gr.Request):
            place = runs.queued(token or "", visitor_of(request))
            waiting = place is not None and not place.run_id and not place.error
            return (gr.update(visible=place is not None), place.sentence() if place else "",
                    gr.update(visible=waiting), gr.Timer(active=waiting))

        @user_errors
        def cancel_queued_run(token: str, request: gr.Request):
            if runs.cancel_queued(token or "", visitor_of(request)):
                gr.Info("Your queued run is cancelled.")
            return queue_place(token, request)

        started.then(queue_place, owner, outputs, api_visibility="private", show_progress="hidden")
        self.timer.tick(queue_place, owner, outputs, api_visibility="private", show_progress="hidden",
                        show_progress_on=[])
        self.cancel.click(cancel_queued_run, owner, outputs, api_visibility="private")

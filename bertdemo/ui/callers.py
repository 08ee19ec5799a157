"""Every event of a public server runs as its visitor: the one place the run-access rule learns who asks.

:func:`serve_as_visitors` wraps the app's step that runs a handler (gradio's ``call_function``, through
:func:`bertdemo.compat.wrap_call_function`): before each answer — each step of a streaming handler too — it enters
:func:`bertdemo.models.run_access.acting_as` with the visitor the HTTP door wrote into the request
(:func:`bertdemo.ui.common.visitor_of`), so every name or run id the handler turns into a folder, and every list of
runs it shows, obeys the rule (:mod:`bertdemo.models.run_access`) without a line in the handler. The handler's
thread sees it: gradio runs a plain handler in a worker thread that copies the event's context. A local server
serves every request as its operator: nothing is set there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gradio as gr

from bertdemo import compat
from bertdemo.models.run_access import Caller, acting_as
from bertdemo.ui.common import visitor_of


def serve_as_visitors(demo: gr.Blocks, public: bool) -> bool:
    """On a public server, run every event of the built ``demo`` as the visitor whose request it serves; True when
    wrapped (a local server: False, nothing changed)."""
    if not public:
        return False

    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        async def call_function(*args: Any, **kwargs: Any) -> Any:
            request = compat.call_request(original, args, kwargs)
            with acting_as(Caller(visitor_of(request))):
                return await original(*args, **kwargs)

        return call_function

    compat.wrap_call_function(demo, make)
    return True

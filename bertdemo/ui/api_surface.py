"""The app's API surface: which events a client may call by name.

Gradio gives every component whose value is a function (a status line read at page load, a figure
drawn from the live run) a page-load event, and publishes it as an API endpoint named after the
function (``lambda_17``…). Those are the page's own plumbing, not an API: :func:`hide_page_loads`
makes them private (the page still runs them; ``gradio_client`` cannot call them and the API page
does not list them). What stays public is what ``docs/api.md`` documents, and a test holds the two
equal.
"""

from __future__ import annotations

from typing import Any

from bertdemo import compat


def page_load_ids(blocks: Any) -> set[int]:
    """The ids of the events gradio attached to components whose value is a function."""
    return {c.load_event["id"] for c in blocks.blocks.values()
            if isinstance(getattr(c, "load_event", None), dict) and "id" in c.load_event}


def hide_page_loads(blocks: Any) -> None:
    """Make every page-load event of a function-valued component private (not callable by API clients)."""
    hidden = page_load_ids(blocks)
    for handler in compat.event_handlers(blocks):
        if handler._id in hidden:
            handler.api_visibility = "private"


def public_endpoints(blocks: Any) -> list[str]:
    """The names a client may call (``/name``), sorted."""
    return sorted(h.api_name for h in compat.event_handlers(blocks)
                  if h.api_name and h.fn is not None and h.api_visibility == "public")

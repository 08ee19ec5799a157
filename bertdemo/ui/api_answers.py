"""An API caller reads plain text: the run endpoints answer with the page's status, which is Markdown written for
the page (a learner's text as HTML entities, run ids in <code>); :func:`plain` gives the caller that text as it reads.
Refusals are plain text already, for the page's toasts and every caller alike (``frontend_patch.TOAST_TEXT``; MCP's: :func:`bertdemo.compat.plain_mcp_refusals`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from bertdemo.viz.text import plain_text


def plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (an endpoint function, its signature and docstring kept for the API page) answering plain text where it
    answers a string."""
    @functools.wraps(fn)
    def answer(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        return plain_text(out) if isinstance(out, str) else out

    return answer

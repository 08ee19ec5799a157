"""Links too long to work, shortened at the door (:class:`LongLinks`, ASGI) before the page opens.

The page's own requests carry the page's query again (``POST /gradio_api/queue/join?tab=…&text=…``, and the
``Referer`` header), so a page opened by a 100 KB ``?text=`` link had every later action refused by the server
("Invalid HTTP request", the URL too long), with no word of why. No link value the app reads is longer than
:data:`MAX_VALUE_CHARS` (a deep link's text: ``bertdemo.ui.deep_links.MAX_LINK_TEXT``), so a ``GET`` whose query
holds a longer value, or is longer than :data:`MAX_QUERY_CHARS` in all, is answered with a redirect to the same
address without those values, naming each one dropped and its length in :data:`TOO_LONG` (``text:100000``): the
page opens, its deep-link warning says what was left out, and it works. Standard library only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]

MAX_VALUE_CHARS = 2_000  # the longest value a link holds (a deep link's text; a model name is at most 1,000)
MAX_QUERY_CHARS = 32 * 1024  # a legal link, percent-encoded (2,000 characters of CJK: 18 KB); a page's requests
# carry it again, and about 64 KB of URL is refused
TOO_LONG = "too_long"  # the parameter naming what was dropped: "name:characters", comma-separated
MAX_NAME_CHARS = 40  # a dropped parameter's name, as named


def shortened(query: str) -> str | None:
    """``query`` without its values over :data:`MAX_VALUE_CHARS` (all of it when it is still over
    :data:`MAX_QUERY_CHARS`), each dropped one named in :data:`TOO_LONG`; None when nothing is dropped."""
    pairs = parse_qsl(query, keep_blank_values=True)
    kept = [(name, value) for name, value in pairs if len(value) <= MAX_VALUE_CHARS and len(name) <= MAX_NAME_CHARS]
    dropped = [f"{name[:MAX_NAME_CHARS]}:{len(value)}" for name, value in pairs
               if len(value) > MAX_VALUE_CHARS or len(name) > MAX_NAME_CHARS]
    if len(urlencode(kept)) > MAX_QUERY_CHARS:
        kept, dropped = [], [f"query:{len(query)}"]
    if not dropped:
        return None if len(query) <= MAX_QUERY_CHARS else urlencode(kept)
    return urlencode([*kept, (TOO_LONG, ",".join(dropped[:10]))])


class LongLinks:
    """ASGI middleware: a ``GET`` whose query :func:`shortened` shortens is redirected (303) to the shorter one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" and scope.get("method") == "GET" else b""
        short = shortened(query.decode("latin-1")) if len(query) > MAX_VALUE_CHARS else None
        if short is None:
            await self.app(scope, receive, send)
            return
        location = "?" + short  # the same path (behind a proxy too), the shorter query
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", location.encode("latin-1", "replace")), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

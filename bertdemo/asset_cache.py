"""The page's script, style and font files, served from memory (:class:`AssetCache`, ASGI): a page open fetches
about 120 of them (the web framework's script chunks, its fonts, the theme's style sheet and plotly.js, 4.6 MB),
and each was read from disk and compressed again for every visitor — more than half of the server's CPU for
one open of a shared link. The files do not change while the server runs (the framework's names carry a hash
of their content; plotly.js is the installed package's own), so each answer is made once, compressed once,
and sent again from memory.

Kept: a plain ``GET`` (no ``Range``, no ``If-None-Match``/``If-Modified-Since``: those pass through, and the
framework answers them as before) of a path under :data:`PREFIXES` or one of the ``files`` named (served at
``/gradio_api/file=<path>``), answered 200 without cookies; keyed by path, query and whether the browser
takes brotli. Bounded: at most :data:`MAX_BYTES` in all, least recently used first out; a larger answer is
sent as it is. A server with a login (``--auth``) passes ``enabled=False``. Standard library and brotli only.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from bertdemo.page_cache import run_capturing

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]

PREFIXES = ("/assets/", "/static/", "/theme.css")  # the framework's built files, fonts and theme
FILE_ROUTE = "/gradio_api/file="  # where the framework serves a file of a static path
MAX_BYTES = 48 * 2**20  # every kept answer together (the page's files: about 3 MB compressed, 12 MB plain)
MAX_ENTRY_BYTES = 16 * 2**20
QUALITY = 6  # compressed once: plotly.js 1.27 MB (quality 4: 1.41 MB) in 0.3 CPU-s, each phone then sent less
CHUNK = 64 * 2**10  # sent in pieces, as a file is: one large write makes the event loop move its buffer per send
MIN_COMPRESS = 400  # the framework's own threshold: smaller answers are sent plain
COMPRESSIBLE = (".html", ".htm", ".js", ".mjs", ".css", ".json", ".md", ".txt", ".csv", ".tsv", ".xml", ".svg")
PASS_HEADERS = (b"range", b"if-none-match", b"if-modified-since", b"authorization")


class AssetCache:
    """ASGI middleware (see the module docstring); ``files``: the static files served at ``/gradio_api/file=``
    that are kept too (plotly.js)."""

    def __init__(self, app: ASGIApp, enabled: bool = True, files: Iterable[str] = (),
                 max_bytes: int = MAX_BYTES) -> None:
        self.app = app
        self.enabled = enabled
        self.paths = {FILE_ROUTE + str(f) for f in files}
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple, tuple[int, list, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._making: dict[tuple, asyncio.Event] = {}  # a key being made: later requests for it wait for it
        self.made = 0  # answers made by the framework and kept (the rest were sent from memory)

    def key(self, scope: Scope) -> tuple | None:
        """The cache key of a request for a kept file; None when it is not one to keep."""
        if not self.enabled or scope.get("type") != "http" or scope.get("method") != "GET":
            return None
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        if not (path.startswith(PREFIXES) or path in self.paths):
            return None
        headers = dict(scope.get("headers") or [])
        if any(h in headers for h in PASS_HEADERS):
            return None
        brotli_ok = b"br" in headers.get(b"accept-encoding", b"") and path.lower().endswith(COMPRESSIBLE)
        return path, scope.get("query_string", b""), brotli_ok

    def _get(self, key: tuple) -> tuple[int, list, bytes] | None:
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                self._kept.move_to_end(key)
            return hit

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        key = self.key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        hit = self._get(key)
        while hit is None and key in self._making:  # another request is making it: wait (this loop's requests)
            await self._making[key].wait()
            hit = self._get(key)
            if hit is None:
                break  # that one was not kept (not a 200, too large): make this one itself
        if hit is not None:
            await _send(send, *hit)
            return
        making = self._making.setdefault(key, asyncio.Event())
        try:
            await self._make(key, scope, receive, send)
        finally:
            if self._making.get(key) is making:
                del self._making[key]
            making.set()

    async def _make(self, key: tuple, scope: Scope, receive: Callable, send: Callable) -> None:
        async def keep(start: dict, body: bytes) -> None:
            await _send(send, *self._keep(key, start, body))

        await run_capturing(self.app, scope, receive, send, keep, max_bytes=MAX_ENTRY_BYTES)

    def _keep(self, key: tuple, start: dict, body: bytes) -> tuple[int, list, bytes]:
        """The answer as it is kept and sent (compressed when the browser takes brotli), kept."""
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"vary")]
        if key[-1] and len(body) >= MIN_COMPRESS:  # compressed once, here (the framework passes an encoded body on)
            import brotli

            body = brotli.compress(body, quality=QUALITY)
            headers.append((b"content-encoding", b"br"))
        headers += [(b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding")]
        with self._lock:
            old = self._kept.pop(key, None)
            self._bytes -= len(old[2]) if old else 0
            self._kept[key] = (200, headers, body)
            self._bytes += len(body)
            while self._bytes > self.max_bytes and len(self._kept) > 1:
                _, (_, _, dropped) = self._kept.popitem(last=False)
                self._bytes -= len(dropped)
            self.made += 1
        return 200, headers, body


async def _send(send: Callable, status: int, headers: list, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    view = memoryview(body)
    for at in range(0, max(len(body), 1), CHUNK):
        more = at + CHUNK < len(body)
        await send({"type": "http.response.body", "body": bytes(view[at:at + CHUNK]), "more_body": more})

"""The page itself, served from memory (:class:`PageCache`, ASGI): every open of the app's address — a class
of phones opening a shared link at once — used to make the web framework copy and walk the whole page's
configuration, render it into HTML and compress it again (about 0.4 CPU-seconds of a 1.6 s page open); the
bytes are the same for every visitor of one address (the framework fixes the configuration at launch), so they
are made once and sent again for ``CACHE_S`` seconds.

Only a plain ``GET`` of the page (``/``) is kept, keyed by what the framework builds it from: the address the
visitor used (``Host``, the forwarding headers and ``X-Gradio-Server``: the page names that address, and loads its
scripts from it), the framework's own query values (``deep_link``, ``page``, ``view``, ``__theme``,
``all_endpoints``; the app's deep links — ``tab``, ``text``, ``model`` — are read by the page's script and change
nothing in these bytes) and whether the browser takes brotli (kept compressed, so the compression runs once too).
A request that carries one of those headers twice is not kept: the framework reads the first line, and a proxy
that appends its own after a visitor's would otherwise key a visitor's address as its own. A server with a login
(``--auth``) varies the page per user: pass ``enabled=False``. Only a 200 without cookies is kept. At most
``MAX_PAGES`` are kept; when full, the least opened goes first, so pages asked for under made-up hosts or query values
push out each other, not the page a class opens. Standard library and brotli only.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]

CACHE_S = 600.0  # a page is made again at least this often (making it costs about 1 CPU-s: the config walked)
MAX_PAGES = 16  # addresses kept at once (each about a megabyte); when full, the least opened goes (the oldest of those)
FRAMEWORK_QUERY = ("deep_link", "page", "view", "__theme", "all_endpoints")
# every header the framework works the page's own address out of (a visitor can send any of them)
KEY_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-prefix", b"x-forwarded-port",
               b"x-gradio-server")
BROTLI_QUALITY = 4  # the framework's own choice


class PageCache:
    """ASGI middleware (see the module docstring); ``clock``: seconds, monotonic (a test passes its own)."""

    def __init__(self, app: ASGIApp, enabled: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.enabled = enabled
        self.clock = clock
        self._pages: OrderedDict[tuple, tuple[float, int, list, bytes]] = OrderedDict()
        self._opens: dict[tuple, int] = {}  # per kept page: how often it was sent from memory
        self._lock = threading.Lock()
        self.made = 0  # pages made (the rest were sent from memory)

    def key(self, scope: Scope) -> tuple | None:
        """The cache key of a request for the page; None when it is not one to keep."""
        if not self.enabled or scope.get("type") != "http" or scope.get("method") != "GET" or scope.get("path") != "/":
            return None
        lines: dict[bytes, list[bytes]] = {}
        for name, value in scope.get("headers") or []:
            lines.setdefault(name.lower(), []).append(value)
        if b"authorization" in lines or any(len(lines.get(name, ())) > 1 for name in KEY_HEADERS):
            return None
        headers = {name: values[0] for name, values in lines.items()}
        query = tuple(sorted((k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"))
                             if k in FRAMEWORK_QUERY))
        brotli_ok = b"br" in headers.get(b"accept-encoding", b"")
        return (scope.get("scheme"), scope.get("root_path", ""), tuple(headers.get(h) for h in KEY_HEADERS), query,
                brotli_ok)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        key = self.key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        with self._lock:
            hit = self._pages.get(key)
            if hit is not None and self.clock() - hit[0] > CACHE_S:
                del self._pages[key]
                self._opens.pop(key, None)
                hit = None
            if hit is not None:
                self._pages.move_to_end(key)
                self._opens[key] = self._opens.get(key, 0) + 1
        if hit is not None:
            _, status, headers, body = hit
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await run_capturing(self.app, scope, receive, send, lambda start, body: self._keep_and_send(key, start, body, send))

    async def _keep_and_send(self, key: tuple, start: dict, body: bytes, send: Callable) -> None:
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"vary")]
        if key[-1]:  # the browser takes brotli: compressed once, here (the framework passes an encoded body on)
            import brotli

            body = brotli.compress(body, quality=BROTLI_QUALITY)
            headers.append((b"content-encoding", b"br"))
        headers += [(b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding")]
        with self._lock:
            self._pages[key] = (self.clock(), 200, headers, body)
            self._pages.move_to_end(key)
            self._opens.setdefault(key, 0)
            while len(self._pages) > MAX_PAGES:
                # the least opened of the others (the oldest of those): a class's page, opened by every phone, is not
                # pushed out by one-off pages under made-up hosts or query values
                others = [k for k in self._pages if k != key]
                gone = min(others, key=lambda k: self._opens.get(k, 0))  # min keeps the first (oldest) of a tie
                del self._pages[gone]
                self._opens.pop(gone, None)
            self.made += 1
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def run_capturing(app: ASGIApp, scope: Scope, receive: Callable, send: Callable,
                        keep: Callable[[dict, bytes], Awaitable[None]], max_bytes: float = math.inf) -> None:
    """Run ``app``: a 200 answer without cookies or an encoding, of at most ``max_bytes``, is collected whole and
    handed to ``keep(its start message, its body)``, which sends it; any other answer is sent as it comes."""
    start: dict = {}
    chunks: list[bytes] = []
    passed, size = False, 0

    async def capture(message: dict) -> None:
        nonlocal passed, size
        if passed:
            await send(message)
        elif message["type"] == "http.response.start":
            start.update(message)
            names = {name.lower() for name, _ in message.get("headers", [])}
            if message.get("status") != 200 or b"set-cookie" in names or b"content-encoding" in names:
                passed = True  # not one to keep: sent as it is
                await send(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > max_bytes:  # too large to keep: sent as it comes
                passed = True
                await send(start)
                await send({**message, "body": b"".join(chunks)})
            elif not message.get("more_body"):
                await keep(start, b"".join(chunks))

    await app(scope, receive, capture)

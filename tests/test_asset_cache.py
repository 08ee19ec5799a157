"""The page's script, style and font files served from memory: each made (read, compressed) once however many
pages open, the same bytes as the framework's, kept only for the page's files and plain 200 answers, within a
byte bound; conditional and range requests pass through."""

from __future__ import annotations

import brotli

from bertdemo.asset_cache import CHUNK, FILE_ROUTE, AssetCache
from tests.helpers import asgi_get, run_coroutine

SCRIPT = b"export const answer = 42;\n" * 8_000  # about 200 kB: sent in several pieces


class Framework:
    """An ASGI app that counts the files it serves (the real one reads the file and compresses it each time)."""

    def __init__(self, status: int = 200, cookie: bool = False, body: bytes = SCRIPT) -> None:
        self.made = 0
        self.status, self.cookie, self.body = status, cookie, body

    async def __call__(self, scope, receive, send):
        self.made += 1
        headers = [(b"content-type", b"text/javascript"), (b"content-length", str(len(self.body)).encode()),
                   (b"etag", b'"abc"')] + ([(b"set-cookie", b"a=b")] if self.cookie else [])
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        half = len(self.body) // 2  # a file is sent in pieces
        await send({"type": "http.response.body", "body": self.body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": self.body[half:]})


def _get(cache, path: str = "/assets/index-abc.js", br: bool = True, extra: list | None = None):
    scope = {"type": "http", "method": "GET", "path": path, "query_string": b"", "scheme": "http",
             "headers": [(b"host", b"school.example")] + ([(b"accept-encoding", b"gzip, br")] if br else [])
             + (extra or [])}
    return asgi_get(cache, scope)


def test_thirty_opens_make_each_file_once_with_the_framework_s_bytes():
    app = Framework()
    cache = AssetCache(app, files=["/site/plotly/plotly.min.js"])
    answers = [_get(cache) for _ in range(30)]
    assert app.made == 1 and cache.made == 1
    status, headers, body = answers[0]
    assert status == 200 and body == SCRIPT and headers[b"content-encoding"] == b"br"
    assert int(headers[b"content-length"]) < len(SCRIPT) // 10 and headers[b"etag"] == b'"abc"'
    assert all(a == answers[0] for a in answers)
    _, plain_headers, plain = _get(cache, br=False)  # a browser without brotli: its own copy, plain
    assert plain == SCRIPT and b"content-encoding" not in plain_headers
    assert _get(cache, path=FILE_ROUTE + "/site/plotly/plotly.min.js")[2] == SCRIPT  # the named static file
    assert app.made == 3  # one per (file, encoding)


def test_a_large_answer_goes_out_in_pieces():
    cache = AssetCache(Framework(body=bytes(range(256)) * 1_000), files=[])  # binary: kept plain
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/static/font.woff2", "query_string": b"", "headers": []}
    for _ in range(2):
        sent.clear()
        run_coroutine(cache(scope, None, send))
        bodies = [m for m in sent if m["type"] == "http.response.body"]
        assert len(bodies) == -(-256_000 // CHUNK) and all(m["more_body"] for m in bodies[:-1])
        assert not bodies[-1]["more_body"] and b"".join(m["body"] for m in bodies) == bytes(range(256)) * 1_000


def test_only_the_page_s_files_and_plain_answers_are_kept():
    for path in ("/gradio_api/file=/tmp/upload.js", "/gradio_api/queue/join", "/", "/gradio_api/info"):
        app = Framework()
        cache = AssetCache(app)
        _get(cache, path=path), _get(cache, path=path)
        assert app.made == 2, path
    for app in (Framework(cookie=True), Framework(status=404)):
        cache = AssetCache(app)
        _get(cache), _get(cache)
        assert app.made == 2
    app = Framework()
    cache = AssetCache(app, enabled=False)  # a server with a login
    _get(cache), _get(cache)
    assert app.made == 2


def test_conditional_and_range_requests_pass_through():
    app = Framework()
    cache = AssetCache(app)
    _get(cache)
    for header in ((b"if-none-match", b'"abc"'), (b"range", b"bytes=0-9")):
        _get(cache, extra=[header])
    assert app.made == 3


def test_the_kept_files_stay_within_their_byte_bound():
    app = Framework()
    cache = AssetCache(app, max_bytes=2 * len(brotli.compress(SCRIPT, quality=6)) + 10)
    for name in ("a", "b", "c"):
        _get(cache, path=f"/assets/{name}.js")
    assert cache._bytes <= cache.max_bytes and len(cache._kept) == 2
    _get(cache, path="/assets/c.js")  # kept: the newest
    _get(cache, path="/assets/a.js")  # the oldest went first: made again
    assert app.made == 4


def test_phones_asking_at_once_wait_for_the_one_file_being_made():
    import asyncio

    class Slow(Framework):
        async def __call__(self, scope, receive, send):
            await asyncio.sleep(0.01)  # the file is read while the other phones ask for it
            await super().__call__(scope, receive, send)

    app = Slow()
    cache = AssetCache(app)
    scope = {"type": "http", "method": "GET", "path": "/assets/index-abc.js", "query_string": b"",
             "headers": [(b"accept-encoding", b"br")]}
    bodies: list[list[bytes]] = [[] for _ in range(30)]

    async def phone(i: int) -> None:
        async def send(message):
            bodies[i].append(message.get("body", b""))
        await cache(scope, None, send)

    async def class_of_30() -> None:
        await asyncio.gather(*(phone(i) for i in range(30)))

    run_coroutine(class_of_30())
    assert app.made == 1
    assert all(brotli.decompress(b"".join(b)) == SCRIPT for b in bodies)

"""The page served from memory: the same bytes for every open of one address, made again after CACHE_S, per
Host and per the framework's own query values; never kept with a cookie, a login or another status."""

from __future__ import annotations

from bertdemo.page_cache import CACHE_S, PageCache
from tests.helpers import FakeClock, asgi_get

PAGE = b"<html>" + b"the page " * 200 + b"</html>"


class Framework:
    """An ASGI app that counts the pages it makes (the real one copies and renders its whole config)."""

    def __init__(self, status: int = 200, cookie: bool = False) -> None:
        self.made = 0
        self.status, self.cookie = status, cookie

    async def __call__(self, scope, receive, send):
        self.made += 1
        headers = [(b"content-type", b"text/html"), (b"content-length", str(len(PAGE)).encode())]
        headers += [(b"set-cookie", b"a=b")] if self.cookie else []
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": PAGE + str(self.made).encode()})


def _get(cache, query: bytes = b"tab=attention&text=hi", host: bytes = b"school.example", br: bool = True):
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query, "scheme": "http",
             "headers": [(b"host", host)] + ([(b"accept-encoding", b"gzip, br")] if br else [])}
    return asgi_get(cache, scope)


def test_every_open_of_one_address_gets_the_same_page_made_once():
    app, clock = Framework(), FakeClock()
    cache = PageCache(app, clock=clock)
    first = _get(cache)
    assert first[2] == PAGE + b"1" and first[1][b"content-encoding"] == b"br"
    assert int(first[1][b"content-length"]) < len(PAGE)
    assert _get(cache, query=b"tab=fill-mask&text=other") == first  # the app's deep links change no byte
    assert app.made == 1
    assert _get(cache, br=False)[2] == PAGE + b"2"  # a browser without brotli: its own copy
    assert _get(cache, host=b"other.example")[2] == PAGE + b"3"  # the page names its address: per Host
    assert _get(cache, query=b"deep_link=abc")[2] == PAGE + b"4"  # the framework's own query: its own page
    clock.now += CACHE_S + 1
    assert _get(cache)[2] == PAGE + b"5"  # made again after a minute
    assert app.made == 5


def test_a_cookie_another_status_or_a_login_is_never_kept():
    for app in (Framework(cookie=True), Framework(status=500)):
        cache = PageCache(app)
        _get(cache), _get(cache)
        assert app.made == 2
    app = Framework()
    cache = PageCache(app, enabled=False)
    _get(cache), _get(cache)
    assert app.made == 2

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


class RootEcho:
    """An ASGI app whose page names its own address the way the web framework works it out (gradio's own
    ``get_root_url`` on the request: the first Host, X-Forwarded-Host, X-Gradio-Server, X-Forwarded-Proto), and
    lists every endpoint when ``all_endpoints`` is asked for, as the framework's page does."""

    async def __call__(self, scope, receive, send):
        from gradio import route_utils
        from starlette.requests import Request

        request = Request(scope)
        root = route_utils.get_root_url(request=request, route_path="/", root_path=None)
        body = f"root={root} all={bool(request.query_params.get('all_endpoints'))}".encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
        await send({"type": "http.response.body", "body": body})


def _open(cache, headers: list[tuple[bytes, bytes]], query: bytes = b"") -> bytes:
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query, "scheme": "http",
             "server": ("127.0.0.1", 7860), "headers": [(b"host", b"school.example")] + headers}
    return asgi_get(cache, scope)[2]


def test_a_visitor_who_names_another_address_never_changes_the_page_the_others_get():
    """The page's scripts load from the address it names: a request that makes the framework name another one
    (its own X-Gradio-Server, a second X-Forwarded-Host line before the proxy's) gets its page, never kept for
    the honest key; the framework's ``all_endpoints`` gets its own page too."""
    behind_proxy = [(b"x-forwarded-host", b"bert.school.example"), (b"x-forwarded-proto", b"https")]
    attacks = [
        ([(b"x-gradio-server", b"http://evil.example")], b""),
        ([(b"x-forwarded-host", b"evil.example")] + behind_proxy, b""),  # a client's line, then the proxy's
        ([(b"x-forwarded-host", b"evil.example, bert.school.example"), (b"x-forwarded-proto", b"https")], b""),
        ([(b"x-forwarded-proto", b"https"), (b"x-forwarded-proto", b"http")] + behind_proxy[:1], b""),
        ([], b"all_endpoints=true"),
    ]
    for attack, query in attacks:
        cache = PageCache(RootEcho())
        honest_direct, honest_proxied = _open(cache, []), _open(cache, behind_proxy)
        assert honest_direct == b"root=http://school.example all=False"
        assert honest_proxied == b"root=https://bert.school.example all=False"
        for _ in range(2):  # made, then (if kept) from memory
            _open(cache, attack, query)
        assert (_open(cache, []), _open(cache, behind_proxy)) == (honest_direct, honest_proxied), attack
        cache = PageCache(RootEcho())  # the attack first, while nothing is kept yet
        for _ in range(2):
            _open(cache, attack, query)
        assert (_open(cache, []), _open(cache, behind_proxy)) == (honest_direct, honest_proxied), attack


def test_a_page_many_visitors_open_stays_when_one_off_pages_fill_the_cache():
    """A visitor who asks for the page under made-up hosts fills the cache's places; the page the class opens
    stays in memory (the least opened page goes first), and the made-up ones push out each other."""
    from bertdemo.page_cache import MAX_PAGES

    app = Framework()
    cache = PageCache(app)
    honest = _get(cache)
    for _ in range(3):
        assert _get(cache) == honest  # three phones of the class, from memory
    for n in range(3 * MAX_PAGES):
        _get(cache, host=b"x%d.example" % n)
    made = app.made
    assert _get(cache) == honest and app.made == made  # still kept
    assert _get(cache, host=b"x0.example")[2] != PAGE + b"2" and app.made == made + 1  # the first made-up one went

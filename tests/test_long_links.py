"""A link too long to work: the page's own requests carry the page's query again (``queue/join?…``), and past
some tens of kilobytes the server refuses them, so a 100 KB ``?text=`` broke every later action of the page. The
door answers such a page open with a redirect to the link without the values no link holds, naming what it
dropped, so the page opens with the link's warning and works."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from bertdemo.long_links import MAX_QUERY_CHARS, MAX_VALUE_CHARS, TOO_LONG, LongLinks
from bertdemo.ui.deep_links import parse_link
from tests.helpers import run_coroutine


def _client() -> TestClient:
    async def page(request: Request):
        return PlainTextResponse(f"query of {len(request.url.query):,} characters")

    app = Starlette(routes=[Route("/", page, methods=["GET", "POST"])], middleware=[Middleware(LongLinks)])
    return TestClient(app)


def _open(query: str) -> tuple[int, dict[str, str]]:
    """The door's answer to a page open with ``query`` (straight to the ASGI app: a test client refuses so long
    a URL itself): its status and headers."""
    sent: list[dict] = []

    async def page(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"the page"})

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "root_path": "", "query_string": query.encode(),
             "headers": []}
    run_coroutine(LongLinks(page)(scope, receive, send))
    return sent[0]["status"], {k.decode(): v.decode() for k, v in sent[0]["headers"]}


def test_a_100_kb_text_is_dropped_by_a_redirect_that_names_it_and_the_page_warns():
    status, headers = _open("tab=tokenizer&text=" + "a" * 100_000 + "&__theme=dark")
    assert status == 303
    target = urlsplit(headers["location"])  # the same path, a shorter query
    assert target.path == "" and dict(parse_qsl(target.query)) == {"tab": "tokenizer", "__theme": "dark",
                                                                     TOO_LONG: "text:100000"}
    link = parse_link(dict(parse_qsl(target.query)))
    assert link.tab == "tokenizer" and link.text is None
    assert link.problems == ["the text must be 1 to 2,000 characters (it has 100,000)"]
    assert _client().get("/" + headers["location"]).text == f"query of {len(target.query):,} characters"


def test_a_link_any_view_takes_is_left_as_it_is():
    client = _client()
    text = "猫" * MAX_VALUE_CHARS  # the longest legal text, 18 KB once percent-encoded
    answer = client.get("/", params={"tab": "attention", "text": text, "model": "m" * 1000}, follow_redirects=False)
    assert answer.status_code == 200
    assert client.post("/?text=" + "a" * 50_000).status_code == 200  # only a page open is redirected


def test_a_query_of_many_short_values_is_dropped_whole():
    query = "&".join(f"k{i}=v" for i in range(MAX_QUERY_CHARS // 5))
    answer = _client().get("/?" + query, follow_redirects=False)
    assert answer.status_code == 303
    assert dict(parse_qsl(urlsplit(answer.headers["location"]).query)) == {TOO_LONG: f"query:{len(query)}"}
    assert parse_link({TOO_LONG: f"query:{len(query)}"}).problems == [
        f"the link has {len(query):,} characters, more than a link here holds; it was left out"]

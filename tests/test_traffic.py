"""The HTTP door: request bodies over their cap get 413 without reaching the app, uploads past the
per-visitor or per-server hourly budget get 429, the budget frees up as the hour passes, and who the
visitor is comes from the network (the peer, or what a trusted proxy appended), never from what the client
writes in its headers."""

from __future__ import annotations

import json

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from bertdemo.traffic import VISITOR_HEADER, RequestLimits, TrafficRules, UploadBudget, visitor_address
from tests.helpers import run_coroutine

RULES = TrafficRules(max_body_bytes=1000, max_upload_request_bytes=5000, upload_bytes_per_client_hour=8000,
                     upload_bytes_per_hour=12000, window_s=3600)
BEHIND_A_PROXY = TrafficRules(**{**RULES.__dict__, "trusted_proxies": 1})


def _client(seen: list, rules: TrafficRules = RULES) -> TestClient:
    async def endpoint(request: Request):
        body = await request.body()
        seen.append(len(body))
        return JSONResponse({"bytes": len(body), "visitors": request.headers.getlist(VISITOR_HEADER)})

    app = Starlette(routes=[Route("/gradio_api/queue/join", endpoint, methods=["POST"]),
                            Route("/gradio_api/upload", endpoint, methods=["POST"])],
                    middleware=[Middleware(RequestLimits, rules=rules)])
    return TestClient(app)


def _scope(peer: str, *forwarded: str) -> dict:
    return {"type": "http", "client": (peer, 5555),
            "headers": [(b"x-forwarded-for", value.encode()) for value in forwarded]}


def test_the_visitor_is_the_peer_unless_proxies_are_trusted():
    assert visitor_address(_scope("10.1.1.1", "6.6.6.6")) == "10.1.1.1"  # no proxy: the header is the client's own
    assert visitor_address(_scope("10.1.1.1"), trusted_proxies=1) == "10.1.1.1"  # no header: the peer


def test_behind_a_proxy_the_visitor_is_what_the_proxy_appended():
    # the proxy appends the address it received from; entries to its left are whatever the client sent
    assert visitor_address(_scope("10.0.0.9", "203.0.113.5"), trusted_proxies=1) == "203.0.113.5"
    assert visitor_address(_scope("10.0.0.9", "1.2.3.4, 203.0.113.5"), trusted_proxies=1) == "203.0.113.5"
    assert visitor_address(_scope("10.0.0.9", "1.2.3.4", "203.0.113.5"), trusted_proxies=1) == "203.0.113.5"
    # two proxies: the outer one's entry is second from the right
    assert visitor_address(_scope("10.0.0.9", "1.2.3.4, 203.0.113.5, 10.0.0.7"), trusted_proxies=2) == "203.0.113.5"
    # a request that passed only the inner proxy is what that proxy saw
    assert visitor_address(_scope("10.0.0.9", "198.51.100.3"), trusted_proxies=2) == "198.51.100.3"


def test_an_ipv6_visitor_is_their_64_network_whichever_of_its_addresses_they_use():
    # a host holds a whole /64 (2^64 addresses it may pick from): 41 addresses of one were 41 shares of the queue
    same = {visitor_address(_scope("10.0.0.9", f"2001:db8:99:1::{n:x}"), trusted_proxies=1) for n in range(1, 42)}
    assert same == {"2001:db8:99:1::/64"}
    assert visitor_address(_scope("2001:DB8:99:1:aaaa:bbbb:cccc:dddd")) == "2001:db8:99:1::/64"  # the peer too
    assert visitor_address(_scope("2001:db8:99:2::1")) == "2001:db8:99:2::/64"  # the next network is another visitor
    assert visitor_address(_scope("::ffff:203.0.113.5")) == "203.0.113.5"  # IPv4 written as IPv6 is that IPv4
    assert visitor_address(_scope("203.0.113.5")) == "203.0.113.5"
    assert visitor_address(_scope("10.0.0.9", "not-an-address"), trusted_proxies=1) == "not-an-address"


def test_the_door_tells_handlers_the_visitor_and_drops_the_clients_own_claim():
    client = _client([], BEHIND_A_PROXY)
    answer = client.post("/gradio_api/queue/join", content=b"{}",
                         headers={"x-forwarded-for": "1.2.3.4, 203.0.113.5", VISITOR_HEADER: "someone-else"})
    assert answer.json()["visitors"] == ["203.0.113.5"]
    assert _client([]).post("/gradio_api/queue/join", content=b"{}").json()["visitors"] == ["testclient"]


def test_a_body_over_its_cap_never_reaches_the_app():
    seen = []
    client = _client(seen)
    assert client.post("/gradio_api/queue/join", content=b"x" * 900).status_code == 200
    refused = client.post("/gradio_api/queue/join", content=b"x" * 5000)
    assert refused.status_code == 413
    assert refused.json()["error"].startswith("This request is 5 KB; this server takes at most 1 KB per request.")

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(10):
            yield b"x" * 500

    assert client.post("/gradio_api/queue/join", content=chunks()).status_code == 413
    assert seen == [900]


def test_a_refused_request_says_it_counts_bytes_not_characters_and_what_to_do():
    """5,000 lines of Japanese are under the paste's 1,000,000 characters but over the door's bytes: the sizes named
    must differ as printed, and the learner told why and what to do."""
    client = _client([], TrafficRules(**{**RULES.__dict__, "max_body_bytes": 2 * 2**20}))
    refused = client.post("/gradio_api/queue/join", content=("猫" * 710_000).encode())  # 2,130,000 bytes
    assert refused.status_code == 413
    said = refused.json()["error"]
    assert said.startswith("This request is 2.03 MB; this server takes at most 2.00 MB per request.")
    assert "2 to 4 bytes a character" in said and "upload them as a CSV / TSV file" in said


def test_the_longest_paste_the_page_takes_passes_the_door_in_any_script():
    """The audit's 714,999 Japanese characters (under the paste's 1,000,000) met a 413 and the page's answer box
    said "Error": every paste the page's box holds passes the door as the page sends it, whatever its characters
    (Japanese: 3 bytes each; an emoji 4; a control character 6, escaped in JSON)."""
    from bertdemo.finetune.own_data import MAX_PASTE_CHARS

    seen: list[int] = []
    client = _client(seen, TrafficRules())
    sizes = []
    for char in ("猫", "😀", "\x01"):
        body = json.dumps({"data": [char * MAX_PASTE_CHARS, "", "", ""], "fn_index": 99, "session_hash": "s" * 11,
                           "event_data": None, "trigger_id": 99}, ensure_ascii=False).encode()
        sizes.append(len(body))
        assert client.post("/gradio_api/queue/join", content=body).status_code == 200
    assert seen == sizes and max(sizes) > 6_000_000


def test_uploads_past_a_visitors_hourly_budget_are_refused():
    seen = []
    client = _client(seen, BEHIND_A_PROXY)

    def upload(size: int, forwarded: str) -> int:
        return client.post("/gradio_api/upload", content=b"x" * size,
                           headers={"x-forwarded-for": forwarded}).status_code

    for _ in range(2):
        assert upload(4000, "203.0.113.5") == 200
    refused = client.post("/gradio_api/upload", content=b"x" * 10, headers={"x-forwarded-for": "203.0.113.5"})
    assert refused.status_code == 429 and "from one visitor" in refused.json()["error"]
    assert upload(10, "10.9.9.9, 203.0.113.5") == 429  # a made-up address in front changes nothing
    assert upload(3000, "203.0.113.6") == 200  # another visitor still may…
    assert upload(3000, "203.0.113.7") == 429  # …until the server's hour is full
    assert seen == [4000, 4000, 3000]


def test_without_a_trusted_proxy_a_forwarded_header_does_not_make_a_new_visitor():
    client = _client([])
    for _ in range(2):
        assert client.post("/gradio_api/upload", content=b"x" * 4000).status_code == 200
    assert client.post("/gradio_api/upload", content=b"x" * 10,
                       headers={"x-forwarded-for": "10.0.0.2"}).status_code == 429


def test_a_refused_upload_is_read_to_its_end_before_the_answer():
    """A server that answers before reading the body closes on a client still sending: it sees a broken pipe,
    never the 429 and its message."""
    import asyncio
    import threading

    chunks = [b"x" * 1000] * 5
    read, sent = [], []

    async def receive() -> dict:
        read.append(1)
        return {"type": "http.request", "body": chunks[len(read) - 1], "more_body": len(read) < len(chunks)}

    async def send(message: dict) -> None:
        sent.append((len(read), message))

    async def never_reached(scope, receive, send):
        raise AssertionError("a refused upload reached the app")

    door = RequestLimits(never_reached, rules=RULES)
    door.budget.refusal("127.0.0.1", 8000)  # this visitor's hour is used up
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "client": ("127.0.0.1", 1),
             "headers": [(b"content-length", b"5000")]}
    # its own thread and loop: the test may share its thread with a running loop (a browser test's)
    worker = threading.Thread(target=asyncio.run, args=(door(scope, receive, send),))
    worker.start()
    worker.join(timeout=30)
    assert [m["status"] for _, m in sent if m["type"] == "http.response.start"] == [429]
    assert sent[0][0] == len(chunks)  # every chunk was read before the answer began


def test_the_budget_frees_up_as_the_hour_passes():
    now = [0.0]
    budget = UploadBudget(RULES, clock=lambda: now[0])
    assert budget.refusal("a", 8000) is None and budget.refusal("a", 1) is not None
    now[0] = 3601.0
    assert budget.refusal("a", 8000) is None


def test_a_local_server_only_caps_request_sizes():
    local, public = TrafficRules.for_server(False, 20 * 2**20), TrafficRules.for_server(True, 20 * 2**20, 1)
    assert (local.trusted_proxies, public.trusted_proxies) == (0, 1)
    assert local.max_upload_request_bytes == public.max_upload_request_bytes == 21 * 2**20
    assert local.upload_bytes_per_client_hour > 2**40 and public.upload_bytes_per_client_hour == 200 * 2**20


def test_a_loopback_client_cannot_pose_as_another_visitor_through_the_server_gradio_starts(monkeypatch):
    """uvicorn (as gradio starts it: ``uvicorn.Config(app=…)``, proxy headers on) trusted X-Forwarded-For
    from 127.0.0.1 and rewrote the peer before the door read it: 6 runs past a quota of 3 from one client.
    The app's environment makes the visitor follow ``--trusted-proxies`` only."""

    import uvicorn

    import app

    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")  # uvicorn's default; put back after the test
    app.configure_environment(app.parse_args([]))

    def visitor_seen(rules: TrafficRules, peer: str, forwarded: str) -> str:
        seen = []

        async def inner(scope, receive, send):
            seen.append(dict(scope["headers"])[VISITOR_HEADER.encode()].decode())

        config = uvicorn.Config(app=RequestLimits(inner, rules=rules), log_level="warning")
        config.load()
        scope = {"type": "http", "method": "GET", "path": "/", "client": (peer, 5555), "query_string": b"",
                 "headers": [(b"x-forwarded-for", forwarded.encode())]}
        run_coroutine(config.loaded_app(scope, None, None))
        return seen[0]

    assert visitor_seen(RULES, "127.0.0.1", "10.0.0.6") == "127.0.0.1"
    assert visitor_seen(RULES, "::1", "10.0.0.6") == "::1"
    assert visitor_seen(BEHIND_A_PROXY, "127.0.0.1", "10.0.0.6, 203.0.113.5") == "203.0.113.5"

"""Bounds at the HTTP door, before gradio parses anything: a cap on every request body, a budget on
what the upload route may write — per visitor and for the whole server, per hour — and who the visitor is.

Gradio caps each uploaded file (``max_file_size``) but not how many files or requests a client sends,
and keeps uploads for an hour; a JSON body of any size is parsed in full before a handler can look at
it. :class:`RequestLimits` is a plain ASGI middleware (``app.py`` passes it to ``launch`` through
``app_kwargs``): a body over its cap is answered 413 without being read, and an upload past the
budget 429, each with a sentence saying what to do. Its counters belong to the one middleware
object of this server. Standard library only (it sits outside bertdemo.ui, which imports gradio).

Who the visitor is (:func:`visitor_address`) must be something the visitor cannot choose: a token or a
header they write themselves would let one visitor pass for many. It is the address of the peer that
connected, or — behind ``trusted_proxies`` reverse proxies that each append the address they received
from to ``X-Forwarded-For`` (a Space's proxy, the ``--share`` tunnel) — the entry the outermost trusted
proxy appended, counted from the right: entries to its left are whatever the client sent. An IPv6 visitor is
their /64 network (:func:`share_address`): one host holds all of one, and could otherwise pick a new address, and
a new share, for every request; IPv4 written as IPv6 (``::ffff:…``) is that IPv4 address. The door
writes the result into :data:`VISITOR_HEADER` on every request (dropping any copy the client sent), so
handlers read one value computed in one place.

A class member is a name inside their address, never a new share: a request carrying a member token (the
:data:`MEMBER_COOKIE` cookie the page sets once its browser joined a class, or the :data:`MEMBER_HEADER` header an
API client sends) that the server verifies (``members``: the class service's check of its signature,
:meth:`bertdemo.classroom.service.Classroom.visitor_key`) is the visitor ``member:<id>@<address>``
(:func:`member_visitor`): the member has their own requests in flight, their own queued run to follow and their
class's gallery, while whatever one address holds — queued starts and kept runs of every kind
(:mod:`bertdemo.runs.service`), requests in flight together — is counted on the address the key carries
(:func:`address_of`). A token nobody signed — invented, altered, another server's — changes nothing: the visitor
is the address. The address itself goes on in :data:`ADDRESS_HEADER` (the upload budget, the class store's
bounds).
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
UPLOAD_SUFFIX = "/upload"
VISITOR_HEADER = "x-bertdemo-visitor"  # set by the door on every request; handlers read who the visitor is here
ADDRESS_HEADER = "x-bertdemo-address"  # set by the door on every request: the address, member or not
MEMBER_COOKIE = "bertdemo-class-member"  # the page's class membership (a signed member token)
MEMBER_HEADER = "x-bertdemo-class-member"  # the same, as an API client sends it
MEMBER_PREFIX = "member:"  # a visitor key naming a class member (never an address: no address holds "m:")
MEMBER_AT = "@"  # a member's visitor key: member:<id>@<address> (member ids are hex: the first "@" ends the id)
# a 413 counts bytes, a text box characters: an API caller's settings (up to 2,000,000 characters of JSON) in a
# non-Latin script can pass the body cap before their character limit
BYTES_ADVICE = ("Text in most non-Latin scripts takes 2 to 4 bytes a character, so fewer characters fit: send less, "
                "or, for many labelled lines, upload them as a CSV / TSV file.")
DRAIN_BYTES = 256 * 2**20  # an oversized body is read and dropped up to this much, so its sender gets the 413


NO_CAP = 2**50


@dataclass(frozen=True)
class TrafficRules:
    """The door's limits (bytes). A local server keeps only the body cap (:meth:`for_server`)."""

    # any request but an upload: the page's longest field (the own-data paste, MAX_PASTE_CHARS characters) fits as
    # the page's JSON carries it at worst (a control character: 6 bytes; most non-Latin scripts 3), with room
    max_body_bytes: int = 8 * 2**20
    max_upload_request_bytes: int = 21 * 2**20  # one upload request: the largest file plus the form around it
    upload_bytes_per_client_hour: int = 200 * 2**20
    upload_bytes_per_hour: int = 2 * 2**30  # every client together
    window_s: float = 3600.0
    trusted_proxies: int = 0  # reverse proxies in front of this server that append to X-Forwarded-For
    # shares of one visitor (bertdemo/ui/visitor_shares.py); 0 = no limit
    queue_per_visitor: int = 16  # events waiting or running at once
    queue_per_address: int = 48  # events of every visitor behind one address (class members each counted) together
    sessions_per_visitor: int = 32  # page sessions kept (each ~0.6 MB of gradio state)
    max_sessions: int = 320  # page sessions kept in all (gradio's state_session_capacity): ~400 MB at most

    @classmethod
    def for_server(cls, public: bool, max_upload_bytes: int, trusted_proxies: int = 0, **shares: int) -> TrafficRules:
        """A public server budgets uploads per visitor and in all; localhost only caps request sizes.
        ``shares``: ``queue_per_visitor`` (default: none locally, where a benchmark's clients are all one
        address), ``sessions_per_visitor``, ``max_sessions`` where not the defaults."""
        per_request = max_upload_bytes + 2**20
        if public:
            return cls(max_upload_request_bytes=per_request, trusted_proxies=trusted_proxies, **shares)
        return cls(max_upload_request_bytes=per_request, upload_bytes_per_client_hour=NO_CAP,
                   upload_bytes_per_hour=NO_CAP, trusted_proxies=trusted_proxies,
                   **({"queue_per_visitor": 0, "queue_per_address": 0} | shares))


class UploadBudget:
    """Bytes uploaded in the last ``window_s`` seconds, per client and in all (thread-safe)."""

    def __init__(self, rules: TrafficRules, clock: Callable[[], float] = time.monotonic) -> None:
        self.rules = rules
        self._clock = clock
        self._lock = threading.Lock()
        self._events: deque[tuple[float, str, int]] = deque()  # (when, client, bytes), oldest first
        self._per_client: dict[str, int] = {}
        self._total = 0

    def _expire(self, now: float) -> None:
        while self._events and now - self._events[0][0] > self.rules.window_s:
            _, client, size = self._events.popleft()
            self._total -= size
            left = self._per_client[client] - size
            if left > 0:
                self._per_client[client] = left
            else:
                del self._per_client[client]

    def refusal(self, client: str, size: int) -> str | None:
        """Why ``size`` more bytes from ``client`` would pass the budget (None: they fit, and are counted)."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if self._per_client.get(client, 0) + size > self.rules.upload_bytes_per_client_hour:
                return (f"You have uploaded {self._per_client.get(client, 0) / 2**20:.0f} MB in the last hour; "
                        f"this server takes at most {self.rules.upload_bytes_per_client_hour / 2**20:.0f} MB an hour "
                        "from one visitor. Try again later.")
            if self._total + size > self.rules.upload_bytes_per_hour:
                return "This server has taken all the uploads it takes in an hour. Try again later."
            self._events.append((now, client, size))
            self._per_client[client] = self._per_client.get(client, 0) + size
            self._total += size
            return None


IPV6_SHARE_PREFIX = 64  # an IPv6 visitor is this network: a home's or a school's network, any of whose addresses a host may take


def share_address(address: str) -> str:
    """``address`` as the share it counts on: an IPv6 address as its /:data:`IPV6_SHARE_PREFIX` network
    (``2001:db8:99:1::/64``), an IPv4-mapped one as its IPv4 address, the loopback (``::1``) and an IPv4 address
    as they are; what is no address at all (a test client's name) as it came."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if ip.is_loopback:  # this machine: one address ("::1")
            return str(ip)
        return str(ipaddress.IPv6Network((ip, IPV6_SHARE_PREFIX), strict=False))
    return str(ip)


def visitor_address(scope: Scope, trusted_proxies: int = 0) -> str:
    """Who sent a request, as nobody but the network can say (see the module): the peer's address, or
    behind ``trusted_proxies`` proxies the ``trusted_proxies``-th X-Forwarded-For entry from the right.
    A request that passed fewer proxies than that (a shorter header) is keyed on its leftmost entry: it
    still cannot pose as anyone but what the nearest proxy saw, so several such requests stay one visitor.
    The address as its share (:func:`share_address`: an IPv6 visitor is their /64)."""
    client = scope.get("client")
    peer = client[0] if client else "?"
    if trusted_proxies <= 0:
        return share_address(peer)
    hops: list[str] = []
    for name, value in scope.get("headers") or []:
        if name == b"x-forwarded-for":  # several header lines read as one list, in order
            hops += [hop.strip() for hop in value.decode("latin-1").split(",") if hop.strip()]
    if not hops:
        return share_address(peer)
    return share_address(hops[-trusted_proxies] if len(hops) >= trusted_proxies else hops[0])


def member_token(scope: Scope) -> str:
    """The class member token a request carries (:data:`MEMBER_HEADER`, else the :data:`MEMBER_COOKIE`
    cookie); "" when none. Unverified: only what the door's ``members`` check accepts counts."""
    cookie = ""
    for name, value in scope.get("headers") or []:
        if name == MEMBER_HEADER.encode():
            return value.decode("latin-1").strip()
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, text = part.strip().partition("=")
                if key == MEMBER_COOKIE:
                    cookie = text.strip()
    return cookie


def member_visitor(member: str, address: str) -> str:
    """The visitor key of the class member ``member`` (``member:<id>``) at ``address``: the member by name, the
    address they count on (:func:`address_of`)."""
    return f"{member}{MEMBER_AT}{address}"


def address_of(visitor: str) -> str:
    """The address a visitor key counts on: a member key's address (:func:`member_visitor`), else the key itself
    (a member key made without an address — a test's, an in-process call's — is a share of its own)."""
    _member, at, address = visitor.partition(MEMBER_AT)
    return address if visitor.startswith(MEMBER_PREFIX) and at else visitor


def member_of(visitor: str) -> str:
    """The ``member:<id>`` a visitor key names ("" for an address)."""
    return visitor.partition(MEMBER_AT)[0] if visitor.startswith(MEMBER_PREFIX) else ""


def visitor_key(scope: Scope, address: str, members: Callable[[str], str] | None) -> str:
    """Who the visitor is: the class member a verified token names, at ``address`` (``members`` maps a token to
    ``member:<id>``, "" when it verifies not; :func:`member_visitor`), else ``address``."""
    token = member_token(scope) if members is not None else ""
    member = members(token) if token else ""
    return member_visitor(member, address) if member else address


def with_visitor(scope: Scope, visitor: str, address: str | None = None) -> Scope:
    """``scope`` whose headers carry :data:`VISITOR_HEADER` = ``visitor`` and :data:`ADDRESS_HEADER` =
    ``address`` (``visitor`` when not given), any copy the client sent dropped."""
    keys = {VISITOR_HEADER.encode(), ADDRESS_HEADER.encode()}
    headers = [(name, value) for name, value in scope.get("headers") or [] if name.lower() not in keys]
    ours = [(VISITOR_HEADER.encode(), visitor.encode("latin-1", "replace")),
            (ADDRESS_HEADER.encode(), (address or visitor).encode("latin-1", "replace"))]
    return {**scope, "headers": headers + ours}


class RequestLimits:
    """ASGI middleware: 413 for a body over its cap, 429 for an upload past the budget, who the visitor is
    (see the module; ``members``: a member token -> the visitor key it verifies as, "" when it does not)."""

    def __init__(self, app: ASGIApp, rules: TrafficRules | None = None, budget: UploadBudget | None = None,
                 members: Callable[[str], str] | None = None) -> None:
        self.app = app
        self.rules = rules or TrafficRules()
        self.budget = budget or UploadBudget(self.rules)
        self.members = members

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        address = visitor_address(scope, self.rules.trusted_proxies)
        scope = with_visitor(scope, visitor_key(scope, address, self.members), address)
        if scope["type"] != "http" or scope.get("method") not in {"POST", "PUT", "PATCH"}:
            await self.app(scope, receive, send)
            return
        upload = scope.get("path", "").rstrip("/").endswith(UPLOAD_SUFFIX)
        cap = self.rules.max_upload_request_bytes if upload else self.rules.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > cap:
            await _drain(receive, DRAIN_BYTES)  # read and dropped, never parsed: the client then hears the answer
            size, most = _sizes(declared, cap)
            await _answer(send, 413, f"This request is {size}; this server takes at most {most} per request. "
                                     f"{BYTES_ADVICE}")
            return
        if upload:
            why = self.budget.refusal(address, declared or cap)
            if why is not None:
                await _drain(receive, cap)  # read and dropped: a sender cut off mid-body never hears the answer
                await _answer(send, 429, why)
                return
        received = 0

        async def counted_receive() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:  # a body sent without (or past) its declared length
                    raise _TooLarge()
            return message

        try:
            await self.app(scope, counted_receive, send)
        except _TooLarge:
            await _answer(send, 413, f"This request is over {_size(cap)}, the most this server takes per request. "
                                     f"{BYTES_ADVICE}")


def _size(n_bytes: int, places: int = 0) -> str:
    """e.g. "5 KB", "20.0 MB" (``places`` more decimals)."""
    if n_bytes >= 2**20:
        return f"{n_bytes / 2**20:.{1 + places}f} MB"
    return f"{max(1, round(n_bytes / 1024))} KB" if not places else f"{n_bytes / 1024:.{places}f} KB"


def _sizes(n_bytes: int, cap: int) -> tuple[str, str]:
    """A request's size and the cap it is over, printed as far as they differ ("2.03 MB" and "2.00 MB", not
    "2.0 MB" twice)."""
    for places in range(3):
        size, most = _size(n_bytes, places), _size(cap, places)
        if size != most:
            return size, most
    return f"{n_bytes:,} bytes", f"{cap:,} bytes"


class _TooLarge(Exception):
    pass


async def _drain(receive: Receive, limit: int) -> None:
    """Read and drop a request body (up to ``limit`` bytes), keeping nothing."""
    read = 0
    while read <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or []:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _answer(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message, "detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

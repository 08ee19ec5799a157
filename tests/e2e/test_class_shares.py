"""One address, one share of the class feature (issue 52, audit F1, F5 and H6), on the launched app: on a public
server the classes one address keeps open are bounded, wrong join codes are counted against the address they came
from, and however many memberships one address takes it holds one waiting start of the training queue (the audit's
``sybil_queue.py``), each called as the page or an API client calls it (the visitor told by X-Forwarded-For behind
one trusted proxy); a teacher closes their class from the page, and its links stop working."""

from __future__ import annotations

import json
import uuid

import httpx
from gradio_client import Client
from gradio_client.exceptions import AppError
from playwright.sync_api import Page, expect

from bertdemo.classroom.store import ClassLimits
from bertdemo.traffic import MEMBER_HEADER
from bertdemo.ui.class_tab import TEACHER_POLL_S
from tests.helpers import visitor_client

from .api import RUN, app_config, fn_index, wait_ended
from .pages import RUN_TIMEOUT_MS, create_class, open_tab, press

LIMITS = ClassLimits()  # what the launched server keeps


def _as_page(base: str, index: int, data: list, visitor: str) -> tuple[bool, object]:
    """One page event called as the page calls it, from ``visitor``: (success, its output or its error)."""
    session = uuid.uuid4().hex
    headers = {"X-Forwarded-For": visitor}
    with httpx.Client(timeout=60, headers=headers) as http:
        joined = http.post(base + "gradio_api/queue/join", json={"data": data, "fn_index": index,
                                                                  "session_hash": session, "event_data": None,
                                                                  "trigger_id": None})
        assert joined.status_code == 200, joined.text
        with http.stream("GET", base + "gradio_api/queue/data", params={"session_hash": session}) as stream:
            for line in stream.iter_lines():
                message = json.loads(line[len("data:"):]) if line.startswith("data:") else {}
                if message.get("msg") == "process_completed":
                    output = message.get("output") or {}
                    return bool(message.get("success")), output.get("data") if message.get("success") else output
    raise AssertionError("the event stream ended without an answer")


def test_one_address_keeps_a_bounded_number_of_classes_and_an_honest_teacher_is_served(public_server):
    base, config = public_server.url, app_config(public_server.url)
    create = fn_index(config, "create_class")
    for i in range(LIMITS.classes_per_address):
        ok, out = _as_page(base, create, [f"flood {i}"], "10.3.0.1")
        assert ok, out
    ok, out = _as_page(base, create, ["one too many"], "10.3.0.1")
    assert not ok and f"{LIMITS.classes_per_address} classes open on this server" in json.dumps(out)
    ok, out = _as_page(base, create, ["Ms Smith's year 10"], "10.4.0.1")  # another address: served
    assert ok, out


def test_wrong_join_codes_from_one_address_are_refused_past_the_bound(public_server):
    base, config = public_server.url, app_config(public_server.url)
    create, join = fn_index(config, "create_class"), fn_index(config, "join_class")
    ok, out = _as_page(base, create, ["Guessed"], "10.5.0.1")
    code = out[0].split("?class=")[1].split()[0]
    wrong = "ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY"
    for i in range(LIMITS.failed_joins):
        ok, out = _as_page(base, join, [wrong, f"probe{i}"], "10.5.0.2")
        assert not ok and "No class has this join code" in json.dumps(out)
    ok, out = _as_page(base, join, [code, "lucky"], "10.5.0.2")  # refused before the code is looked up
    assert not ok and f"{LIMITS.failed_joins} wrong join codes" in json.dumps(out)
    ok, out = _as_page(base, join, [code, "Ada"], "10.5.0.3")  # a student elsewhere joins
    assert ok, out


def test_memberships_from_one_address_hold_one_waiting_start_and_an_honest_visitor_still_queues(public_server):
    base, config = public_server.url, app_config(public_server.url)
    attacker, memberships = "10.9.0.1", 8
    ok, out = _as_page(base, fn_index(config, "create_class"), ["Sybil class"], attacker)
    assert ok, out
    code = out[0].split("?class=")[1].split()[0]
    members = []
    for i in range(memberships):
        ok, out = _as_page(base, fn_index(config, "join_class"), [code, f"kid{i}"], attacker)
        assert ok, out
        members.append(out[0])  # the member token the page keeps
    holder, honest = visitor_client(base, "10.8.0.1"), visitor_client(base, "10.7.0.1")
    holder.predict(RUN, "holder-token", api_name="/start_run")  # another visitor's run holds the slot
    queued, refused, holder_run = [], [], ""
    try:
        holder_run = holder.predict(api_name="/run_status")["run_id"]
        for i, token in enumerate(members):
            client = Client(base, verbose=False, headers={"x-forwarded-for": attacker, MEMBER_HEADER: token})
            try:
                queued.append((client, f"sybil-{i}", client.predict(RUN, f"sybil-{i}", api_name="/start_run")))
            except AppError as err:
                refused.append(str(err))
        assert len(queued) == 1, f"{len(queued)} starts queued from one address"
        assert "number 1 in the queue" in queued[0][2], queued[0][2]
        assert len(refused) == memberships - 1
        assert all("your network's address is already waiting" in r.lower() for r in refused), refused[:2]
        answer = honest.predict(RUN, "honest-token", api_name="/start_run")  # the queue still takes others
        assert "number 2 in the queue" in answer, answer
    finally:
        for client, token, _answer in queued:
            client.predict(token, api_name="/cancel_queued")
        try:
            honest.predict("honest-token", api_name="/cancel_queued")
        except AppError:
            pass  # it was never queued
        holder.predict("holder-token", api_name="/stop_run")
        wait_ended(holder)
    holder.predict(holder_run, "holder-token", api_name="/delete_run")  # the holder's quota is left as it was


def test_a_teacher_closes_their_class_and_its_links_stop_working(browser_page: Page, app_url: str, open_page):
    page = browser_page
    page.goto(app_url)
    open_tab(page, "Class")
    join_link, teacher_link = create_class(page, "Closing")
    page.goto(teacher_link)
    report = page.locator("#class-report")
    expect(report).to_contain_text("0 joined", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#class-updated")).to_contain_text(f"nobody uses for {LIMITS.idle_days:g} days")
    other = open_page()  # the same teacher link open on another screen
    other.goto(teacher_link)
    expect(other.locator("#class-report")).to_contain_text("0 joined", timeout=RUN_TIMEOUT_MS)
    close = fn_index(app_config(app_url), "close_class")
    sent: list[int] = []
    page.on("request", lambda request: sent.append(json.loads(request.post_data or "{}").get("fn_index"))
            if "queue/join" in request.url else None)
    page.once("dialog", lambda dialog: dialog.dismiss())  # changed their mind: nothing happens, nothing is sent
    page.locator("#class-close").click()
    expect(report).to_be_visible()
    assert close not in sent
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#class-close").click()
    expect(page.locator("#class-closed")).to_contain_text("Closing is closed", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#class-updated")).to_be_hidden()  # the teacher's view
    # the other screen's next look says so once, and looks no more (no error every 10 s)
    expect(other.locator("#class-updated")).to_contain_text("no longer", timeout=3 * TEACHER_POLL_S * 1000)
    expect(other.locator(".toast-body")).to_have_count(0)

    page.goto(join_link)
    open_tab(page, "Class")
    expect(page.locator("#class-code input, #class-code textarea").first).to_have_value(
        join_link.split("=")[1], timeout=RUN_TIMEOUT_MS)  # the link's code, filled in: a join before it sends none
    page.locator("#class-nickname input, #class-nickname textarea").first.fill("Ada")
    press(page.locator("#class-join"))
    expect(page.locator(".toast-body")).to_contain_text("No class has this join code", timeout=RUN_TIMEOUT_MS)

"""A class member is a name inside their address: the HTTP door turns a member token the server signed (the page's
cookie, or an API client's header) into the visitor ``member:<id>@<address>``; an invented or altered token is the
address. Shown on real requests: the door's headers; two members behind one address each with their own requests in
flight while a forged token gets the address's, all of them within the address's ceiling; the run quota the members
behind one address share (issue 52, audit F1; every quota: tests/test_address_shares.py); and the runs a member
starts listed in their class, drawn in the teacher's gallery."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from bertdemo.classroom import tokens
from bertdemo.classroom.db import DB_FILE
from bertdemo.classroom.report import class_report
from bertdemo.classroom.service import Classroom
from bertdemo.context import AppContext
from bertdemo.settings import Limits
from bertdemo.traffic import (
    ADDRESS_HEADER,
    MEMBER_COOKIE,
    MEMBER_HEADER,
    VISITOR_HEADER,
    RequestLimits,
    TrafficRules,
    member_visitor,
)
from tests.helpers import free_port, tiny_run_config, wait_until

SCHOOL = "203.0.113.7"  # the one address a class sits behind


def _class(folder) -> tuple[Classroom, str, dict]:
    """A classroom in ``folder`` with one class; (classroom, teacher key, {nickname: member})."""
    classes = Classroom("", folder)
    new = classes.store.create_class("Year 12")
    return classes, new.teacher_key, {nick: classes.store.join(new.join_code, nick) for nick in ("Ada", "Bob", "Cy")}


def _forged(member) -> str:
    """Ada's member id with a signature nobody made: what a stranger who knows her id could send."""
    return f"{member.member_id}.{'0' * 64}"


def _echo_door(classes: Classroom) -> TestClient:
    async def endpoint(request: Request):
        return JSONResponse({"visitor": request.headers.getlist(VISITOR_HEADER),
                             "address": request.headers.getlist(ADDRESS_HEADER)})

    app = Starlette(routes=[Route("/gradio_api/queue/join", endpoint, methods=["POST"])],
                    middleware=[Middleware(RequestLimits, rules=TrafficRules(trusted_proxies=1),
                                           members=classes.visitor_key)])
    return TestClient(app)


def _last_digit_changed(token: str) -> str:
    """The token with its last hex digit replaced by a different one: a tampered signature."""
    return token[:-1] + ("1" if token[-1] == "0" else "0")


def test_the_door_counts_a_verified_member_as_themselves_and_anything_else_as_the_address(tmp_path):
    classes, _key, members = _class(tmp_path / "runs")
    ada, bob = members["Ada"], members["Bob"]
    door = _echo_door(classes)

    def seen(headers: dict, cookies: dict | None = None) -> dict:
        door.cookies.clear()
        for name, value in (cookies or {}).items():
            door.cookies.set(name, value)
        return door.post("/gradio_api/queue/join", headers={"x-forwarded-for": SCHOOL, **headers}).json()

    assert seen({}, {MEMBER_COOKIE: ada.token}) == {"visitor": [f"member:{ada.member_id}@{SCHOOL}"], "address": [SCHOOL]}
    assert seen({MEMBER_HEADER: bob.token}) == {"visitor": [f"member:{bob.member_id}@{SCHOOL}"], "address": [SCHOOL]}
    other_key = Classroom("", tmp_path / "other").store.key  # another server's class database
    for invented in (_forged(ada), tokens.sign(other_key, ada.member_id), _last_digit_changed(ada.token), "x" * 300, "Ada"):
        assert seen({MEMBER_HEADER: invented}) == {"visitor": [SCHOOL], "address": [SCHOOL]}, invented
        assert seen({}, {MEMBER_COOKIE: invented}) == {"visitor": [SCHOOL], "address": [SCHOOL]}, invented
    # what a client writes into the door's own headers is dropped
    assert seen({VISITOR_HEADER: f"member:{ada.member_id}", ADDRESS_HEADER: "198.51.100.1"}) == \
        {"visitor": [SCHOOL], "address": [SCHOOL]}
    classes.close()


def test_a_server_where_no_class_was_made_creates_nothing_to_check_a_token(tmp_path):
    classes = Classroom("", tmp_path / "runs")
    made_elsewhere = _class(tmp_path / "elsewhere")[2]["Ada"].token
    assert _echo_door(classes).post("/gradio_api/queue/join", headers={"x-forwarded-for": SCHOOL,
                                                                       MEMBER_HEADER: made_elsewhere}).json() == \
        {"visitor": [SCHOOL], "address": [SCHOOL]}
    assert not (tmp_path / "runs" / DB_FILE).exists()


@pytest.fixture()
def held_app(tmp_path):
    """A launched gradio app behind the app's door and its visitor shares (as app.py wires them), whose one
    handler holds every event until the test lets go (``gate``): events stay waiting or running. Each visitor
    may have 1 event in the queue, every visitor behind one address 3 together."""
    import gradio as gr

    from bertdemo.ui.visitor_shares import share_per_visitor

    classes, _key, members = _class(tmp_path / "runs")
    gate = threading.Event()
    rules = TrafficRules(trusted_proxies=1, queue_per_visitor=1, queue_per_address=3)
    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(lambda text: gate.wait(60) and text, box, out, api_name="held")
    demo.queue(default_concurrency_limit=1, max_size=64)
    share_per_visitor(demo, rules)
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": [Middleware(RequestLimits, rules=rules, members=classes.visitor_key)]})
    try:
        yield f"http://127.0.0.1:{port}/", members, demo
    finally:
        gate.set()
        demo.close()
        classes.close()


def _join(url: str, address: str, token: str = "", session: str = "s") -> tuple[int, str]:
    """A page's queue/join, as its browser sends it (the member token in the cookie); (status, detail)."""
    cookie = {"cookie": f"{MEMBER_COOKIE}={token}"} if token else {}
    answer = httpx.post(url + "gradio_api/queue/join", json={"data": ["hi"], "fn_index": 0, "session_hash": session},
                        headers={"x-forwarded-for": address, **cookie}, timeout=30)
    return answer.status_code, answer.json().get("detail", "")


def test_members_behind_one_address_each_have_their_own_queue_share(held_app):
    url, members, demo = held_app
    ada, bob, cy = members["Ada"], members["Bob"], members["Cy"]
    assert _join(url, SCHOOL, ada.token, "ada-1") == (200, "")
    wait_until(lambda: len(demo._queue.event_ids_to_events) == 1, timeout=30)
    status, detail = _join(url, SCHOOL, ada.token, "ada-2")  # her own share is full ...
    assert status == 503 and detail.startswith("You have 1 requests waiting or running")
    assert _join(url, SCHOOL, bob.token, "bob-1") == (200, "")  # ... not Bob's, behind the same address
    assert _join(url, SCHOOL, _forged(ada), "stranger-1") == (200, "")  # a forged token: the address's share
    status, detail = _join(url, SCHOOL, _forged(ada), "stranger-2")
    assert status == 503 and detail.startswith("You have 1 requests waiting or running")
    status, detail = _join(url, SCHOOL, "", "stranger-3")  # the same visitor without a token
    assert status == 503 and detail.startswith("You have 1 requests waiting or running")
    status, detail = _join(url, SCHOOL, cy.token, "cy-1")  # three behind the address already: its ceiling
    assert status == 503 and detail.startswith("Your network's address has 3 requests waiting or running")
    assert _join(url, "198.51.100.9", "", "elsewhere") == (200, "")  # another address is served
    assert len(demo._queue.event_ids_to_events) == 4


@pytest.fixture()
def public_class(tmp_path):
    # the time cap is not what these tests check: a busy machine's slower measured speed must not refuse a start
    ctx = AppContext.for_tests(tmp_path, public=True, limits=Limits(max_runs_per_visitor=2, max_minutes=600.0))
    new = ctx.classes.store.create_class("Year 12")
    members = {nick: ctx.classes.store.join(new.join_code, nick) for nick in ("Ada", "Bob")}
    yield ctx, new.teacher_key, members
    ctx.runs.shutdown(timeout=60)
    ctx.classes.close()


def _start(ctx: AppContext, corpus: str, folder, token: str, visitor: str, steps: int = 5000):
    """A tiny pretraining run started as the page's Start does (the fair queue's door); it has trained a step."""
    run = ctx.runs.start_or_queue(token, visitor, "pretraining run", lambda: ctx.pretrain_runs.start(
        tiny_run_config(corpus, folder, steps=steps, eval_every=5, checkpoint_every=0), token, visitor=visitor))
    wait_until(lambda: run.snapshot().step >= 1 or not run.active, timeout=180, message=lambda: run.snapshot().message)
    return run


def _stopped(run) -> None:
    run.stop()
    assert run.join(120)


def test_members_behind_one_address_share_its_run_quota(public_class, corpus, tmp_path):
    ctx, _key, members = public_class
    folder = tmp_path / "runs"
    at_school = {n: member_visitor(ctx.classes.visitor_key(members[n].token), SCHOOL) for n in ("Ada", "Bob")}
    for k in range(2):
        _stopped(_start(ctx, corpus, folder, f"ada-{k}", at_school["Ada"]))
    with pytest.raises(ValueError, match="You keep 2 runs on this server"):
        ctx.pretrain_runs.start(tiny_run_config(corpus, folder), "ada-new", visitor=at_school["Ada"])  # a new token
    with pytest.raises(ValueError, match="You keep 2 runs on this server.*network's address"):  # Bob, behind the
        ctx.pretrain_runs.start(tiny_run_config(corpus, folder), "bob-0", visitor=at_school["Bob"])  # same address
    forged = ctx.classes.visitor_key(_forged(members["Ada"])) or SCHOOL  # the door's fallback: the address
    assert forged == SCHOOL
    with pytest.raises(ValueError, match="You keep 2 runs on this server"):
        ctx.pretrain_runs.start(tiny_run_config(corpus, folder), "stranger", visitor=forged)
    at_home = member_visitor(ctx.classes.visitor_key(members["Bob"].token), "198.51.100.20")
    _stopped(_start(ctx, corpus, folder, "bob-1", at_home))  # Bob at home: his home address's share
    listed = class_report(ctx.classes.store, _key).runs
    assert sorted((nick, kind) for nick, _run_id, kind in listed) == [("Ada", "pretrain")] * 2 + [("Bob", "pretrain")]


def test_a_members_runs_reach_the_teachers_gallery_and_nobody_elses(public_class, corpus, tmp_path):
    from bertdemo.ui.class_tab import gallery_spec, report_markdown

    ctx, teacher_key, members = public_class
    folder = tmp_path / "runs"
    ada = member_visitor(ctx.classes.visitor_key(members["Ada"].token), SCHOOL)  # as the door makes her
    live = _start(ctx, corpus, folder, "ada-0", ada)
    report = class_report(ctx.classes.store, teacher_key)
    assert report.runs == [("Ada", live.run_id, "pretrain")]
    wait_until(lambda: live.snapshot().steps or not live.active, timeout=180, what="a logged training loss")
    drawn = {t["name"]: t for t in gallery_spec(ctx, report)["data"]}  # the live run, as it is now
    assert drawn[f"Ada: {live.run_id}: train"]["x"][0] == live.snapshot().steps[0]
    live.stop()
    assert live.join(120)
    finished = _start(ctx, corpus, folder, "ada-1", ada, steps=12)
    assert finished.join(180) and finished.status == "finished"
    report = class_report(ctx.classes.store, teacher_key)
    assert sorted(r[1] for r in report.runs) == sorted([live.run_id, finished.run_id])
    spec = gallery_spec(ctx, report)
    curves = {t["name"]: t for t in spec["data"] if t["name"].endswith(": train")}
    assert set(curves) == {f"Ada: {live.run_id}: train", f"Ada: {finished.run_id}: train"}  # both overlaid
    saved = ctx.pretrain_runs.load_run(finished.run_id).snapshot
    assert curves[f"Ada: {finished.run_id}: train"]["x"] == saved.steps and saved.steps[-1] == 12  # its history
    text = report_markdown(report, [])
    assert f"| Ada | {finished.run_id} | pretraining |" in text
    assert "Bob" not in json.dumps(spec)  # Bob started nothing
    # a student sees their own runs alone; a visitor who is no member, nothing
    assert ctx.classes.own_runs(ada) == ("Year 12", "Ada", sorted([(live.run_id, "pretrain"),
                                                                    (finished.run_id, "pretrain")]))
    assert ctx.classes.own_runs(ctx.classes.visitor_key(members["Bob"].token)) == ("Year 12", "Bob", [])
    assert ctx.classes.own_runs(SCHOOL) is None and ctx.classes.own_runs(f"member:{'0' * 16}") is None
    # a run started without a membership (a visitor who joined no class) is recorded in no class
    other = _start(ctx, corpus, folder, "walk-in", "198.51.100.5", steps=12)
    assert other.join(180)
    assert len(class_report(ctx.classes.store, teacher_key).runs) == 2

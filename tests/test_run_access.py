"""Who may use a run (issue 52, "Yours alone means in every view"): the one rule of
:mod:`bertdemo.models.run_access` — a public run is anyone's; a private run (on a visitor's data) is used only by
the owner token that started it or the visitor who started it (their address; a class member by their membership) —
for every caller on a public server; outside a request and on a local server, by name, everyone. Lists on a public
server built outside a request show public runs only. Then where the rule is applied below the page: the names the
model store resolves (``run:`` and ``ft:``), a run id's folder, the live run a page follows, the busy message and
the run status, each answering a stranger as if the run did not exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bertdemo.models import run_access, run_refs
from bertdemo.models.run_access import Caller, acting_as
from bertdemo.runs import folders
from bertdemo.runs.status import Status
from bertdemo.traffic import member_visitor
from tests.helpers import wait_until

A, B = "10.1.0.1", "10.2.0.1"  # two addresses
TOKEN_A = "A-token-xyz"
MEMBER_X, MEMBER_Y = "member:aaaa", "member:bbbb"  # two class members, both behind address A at first

CALLERS = {  # who asks -> (caller, owner token they send)
    "outside a request": (None, ""),
    "A's address": (Caller(A), ""),
    "a class member behind A's address": (Caller(member_visitor(MEMBER_Y, A)), ""),
    "another address": (Caller(B), ""),
    "another address with A's token": (Caller(B), TOKEN_A),
    "another address with a wrong token": (Caller(B), "B-token"),
    "nobody the door named": (Caller(""), ""),
    "member X moved to another address": (Caller(member_visitor(MEMBER_X, B)), ""),
}


def _run(root: Path, run_id: str, private: bool | None, started_by: str, token: str = TOKEN_A) -> Path:
    """A run folder as a run's start records it (``private`` None: a run from before the access record)."""
    folder = root / run_id
    folder.mkdir(parents=True)
    folders.record_owner(folder, token)
    folders.record_visitor(folder, started_by.rpartition("@")[2] if started_by.startswith("member:") else started_by)
    if private is not None:
        run_access.record_access(folder, private, started_by)
    return folder


def _uses(folder: Path, who: str) -> tuple[bool, bool, bool]:
    """(may use it by name, listed on a public server, listed on a local server) for ``who``."""
    caller, token = CALLERS[who]
    with acting_as(caller):
        return (run_access.may_use(folder, token), run_access.listed(folder, True, token),
                run_access.listed(folder, False, token))


# who -> expected (by name, listed public, listed local) for a private run A started from their address
STARTED_BY_ADDRESS = {
    "outside a request": (True, False, True),  # the server's own code by name; a page built before any visitor
    "A's address": (True, True, True),
    "a class member behind A's address": (True, True, True),  # one visitor is one address
    "another address": (False, False, False),
    "another address with A's token": (True, True, True),
    "another address with a wrong token": (False, False, False),
    "nobody the door named": (False, False, False),
    "member X moved to another address": (False, False, False),
}
# a private run class member X started (their membership, not their address, is its starter)
STARTED_BY_MEMBER = {**STARTED_BY_ADDRESS, "A's address": (False, False, False),
                     "a class member behind A's address": (False, False, False),
                     "member X moved to another address": (True, True, True)}


@pytest.mark.parametrize("who", sorted(CALLERS))
def test_a_public_run_is_anyones(tmp_path, who):
    folder = _run(tmp_path, "20260101-000000-ft-embedded", private=False, started_by=A)
    assert _uses(folder, who) == (True, True, True)


@pytest.mark.parametrize("who", sorted(CALLERS))
def test_a_private_run_is_its_starters_and_its_tokens(tmp_path, who):
    folder = _run(tmp_path, "20260101-000000-ft-own-embedded", private=True, started_by=A)
    assert _uses(folder, who) == STARTED_BY_ADDRESS[who]


@pytest.mark.parametrize("who", sorted(CALLERS))
def test_a_members_private_run_is_the_members_not_their_addresss(tmp_path, who):
    folder = _run(tmp_path, "20260101-000000-ft-own-embedded", private=True, started_by=member_visitor(MEMBER_X, A))
    assert _uses(folder, who) == STARTED_BY_MEMBER[who]


def test_runs_from_before_the_record_own_data_and_uploads_are_private(tmp_path):
    own = _run(tmp_path, "20251201-221129-ft-own-embedded", private=None, started_by=A)
    names = _run(tmp_path, "20251201-222824-ft-embedded", private=None, started_by=A)
    uploaded, wiki = (_run(tmp_path, run_id, private=None, started_by=A) for run_id in ("up", "wiki"))
    for folder, corpus in ((uploaded, "/srv/runs/.uploads/0123/mine.txt"), (wiki, "wiki")):
        checkpoint = folder / "steps" / "step-10"
        checkpoint.mkdir(parents=True)
        for name in ("config.json", "trainer_state.json"):
            (checkpoint / name).write_text("{}")
        (checkpoint / "train_config.json").write_text(json.dumps({"data": {"corpus": corpus}}))
    assert [run_access.is_private(f) for f in (own, names, uploaded, wiki)] == [True, False, True, False]
    for who in CALLERS:  # the share the run counted in (its address) stands for its starter
        assert _uses(own, who) == STARTED_BY_ADDRESS[who], who


def test_the_first_record_stays(tmp_path):
    folder = _run(tmp_path, "r", private=True, started_by=A)
    run_access.record_access(folder, False, B)  # a resumed run: the data it began on decides
    with acting_as(Caller(B)):
        assert not run_access.may_use(folder)


def test_names_and_run_ids_of_another_visitors_private_run_are_answered_as_none(tmp_path):
    """The ``run:`` and ``ft:`` names every view's model store resolves, and a run id's folder: the stranger's
    refusal is word for word the refusal of a run that does not exist."""
    runs = tmp_path / "runs"
    pretraining = _run(runs, "20260101-000000-custom", private=True, started_by=A)
    (pretraining / "checkpoint").mkdir()  # the earlier layout's latest checkpoint
    for name in ("config.json", "trainer_state.json"):
        (pretraining / "checkpoint" / name).write_text("{}")
    tuned = _run(runs / ".finetune", "20260101-000000-ft-own-embedded", private=True, started_by=A)
    (tuned / "model").mkdir()
    (tuned / "model" / "config.json").write_text("{}")
    cases = [(run_refs.resolve_run_reference, "run:{}/checkpoint", "20260101-000000-custom", runs),
             (run_refs.resolve_finetune_reference, "ft:{}", "20260101-000000-ft-own-embedded", runs),
             (lambda name, root: folders.run_folder(root, name), "{}", "20260101-000000-custom", runs),
             (lambda name, root: folders.run_folder(root, name), "{}", "20260101-000000-ft-own-embedded",
              runs / ".finetune")]
    for resolve, shape, run_id, root in cases:
        with acting_as(Caller(A)):
            assert resolve(shape.format(run_id), root)  # its starter is served
        assert resolve(shape.format(run_id), root)  # the server itself, outside a request
        answers = []
        with acting_as(Caller(B)):
            for asked in (run_id, run_id[:-1] + "x"):  # another visitor's run, and a run that is none
                with pytest.raises(ValueError) as refused:
                    resolve(shape.format(asked), root)
                answers.append(str(refused.value).replace(asked, "<id>"))
        assert answers[0] == answers[1]
    assert folders.is_owner(runs, "20260101-000000-custom", TOKEN_A)  # the server's bookkeeping still reads it
    with acting_as(Caller(B)):
        assert folders.runs_owned_by(runs, TOKEN_A) == ["20260101-000000-custom"]


def test_the_live_private_run_is_followed_by_its_holders_alone(tmp_path):
    """The slot's latest run, as every page's poll and /run_status read it: another visitor's private run is none
    to them, the busy message names nothing of it, and the status says only that the slot is taken."""
    from tests.test_address_shares import StubRun, _context, _end

    ctx, kind = _context(tmp_path)
    try:
        StubRun.private = True
        with acting_as(Caller(A)):
            run = kind.start({"hold": True}, TOKEN_A, visitor=A)
        wait_until(lambda: run.status == Status.RUNNING)
        assert json.loads((run.run_folder / run_access.ACCESS_FILE).read_text())["private"] is True
        with acting_as(Caller(A)):
            assert ctx.runs.manager.current is run and ctx.runs.status()["run_id"] == run.run_id
        assert ctx.runs.status(TOKEN_A)["run_id"] == run.run_id  # its token, from anywhere
        with acting_as(Caller(B)):
            assert ctx.runs.manager.current is None
            status = ctx.runs.status("B-token")
            with pytest.raises(ValueError) as busy:
                kind.start({"hold": True}, "B-token", visitor=B)
        text = json.dumps(status) + str(busy.value)
        assert run.run_id not in text and "stub-" not in text and TOKEN_A not in text
        assert status["private"] is True and status["status"] == "running" and set(status) == {
            "kind", "status", "private", "slot_free_in_s", "message"}
        assert "Another visitor's stand-in run on their own data" in str(busy.value)
        assert ctx.runs.manager.current is run  # the server itself
    finally:
        StubRun.private = False
        _end(ctx)


def test_the_admin_still_stops_another_visitors_private_run(tmp_path):
    from bertdemo.context import AppContext
    from bertdemo.runs.service import NO_RUN, RunAction
    from tests.test_address_shares import StubKind, StubRun, _end

    ctx = AppContext.for_tests(tmp_path, public=True, admin_token="admin-secret")
    kind = StubKind(ctx.runs)
    try:
        StubRun.private = True
        run = kind.start({"hold": True}, TOKEN_A, visitor=A)
        wait_until(lambda: run.status == Status.RUNNING)
        with acting_as(Caller(B)):
            with pytest.raises(ValueError, match=NO_RUN):  # a stranger: no run to control, not "not yours"
                ctx.runs.control(RunAction.STOP, "B-token")
            ctx.runs.control(RunAction.STOP, "admin-secret")
        assert run.join(60) and run.status == Status.STOPPED
    finally:
        StubRun.private = False
        _end(ctx)

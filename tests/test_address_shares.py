"""One address, one share of the runs (issue 52, audit F1): whatever class memberships one address takes, what it
holds — starts waiting for the training slot and runs kept on the server, of every run kind — is bounded per
address, and with several slots it trains one run at a time; a class a teacher made gets the places the operator
grants classes (``--class-places``), and no more.

Each quota is filled through memberships, the way the audit did: one address makes a class and joins it many times,
each membership a visitor as the HTTP door makes it (:func:`bertdemo.traffic.visitor_key` on the member token),
and every start goes through the run service's one door (:meth:`RunService.start_or_queue`). A stand-in run kind
(registered like pretraining and fine-tuning) holds the slot until the test stops it, or ends at once, so nothing
trains; the real kinds are checked to refuse through the same share."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bertdemo.context import AppContext
from bertdemo.runs import folders
from bertdemo.runs.queue import Place
from bertdemo.runs.slot import BackgroundRun
from bertdemo.runs.status import LockedSnapshot, Status
from bertdemo.settings import Limits
from bertdemo.traffic import MEMBER_HEADER, visitor_address, visitor_key
from tests.helpers import tiny_run_config

ATTACKER, HOLDER, HONEST = "10.9.0.1", "10.8.0.1", "10.7.0.1"
MEMBERSHIPS = 45  # the audit's count
KEPT = 3  # Limits.max_runs_per_visitor: the runs one address keeps
WAITING = 1  # Limits.queued_per_address: the starts one address has waiting
STOP_S = 60  # a stand-in run ends within this once stopped


@dataclasses.dataclass
class StubSnapshot:
    status: str = Status.PREPARING
    run_id: str = ""
    message: str = ""
    step: int = 0
    total_steps: int = 1


class StubMetrics(LockedSnapshot):
    snapshot_type = StubSnapshot


class StubRun(BackgroundRun):
    """A run that trains nothing: it holds the slot until stopped (``hold``), or ends at once."""

    kind = "stub"
    label = "stand-in"

    def __init__(self, root: Path, hold: bool, **kwargs) -> None:
        super().__init__(root.parent, StubMetrics(), **kwargs)
        self.root, self.hold = root, hold

    def claim_folder(self) -> None:
        self.run_id = folders.claim_run_folder(self.root, "stub")
        self.run_folder = self.root / self.run_id

    def work(self) -> str:
        self.metrics.update(status=Status.RUNNING)
        if self.hold:
            self.control.stop_event.wait(600)
        final = Status.STOPPED if self.control.stop_event.is_set() else Status.FINISHED
        self.metrics.update(status=final)
        return final


class StubKind:
    """A run kind as pretraining and fine-tuning are one: its own checks, then the shared service's."""

    name = "stub"
    label = "stand-in"

    def __init__(self, runs) -> None:
        self.runs = runs
        runs.register(self)

    @property
    def root(self) -> Path:
        return self.runs.runs_dir / ".stub"

    def status(self, run: BackgroundRun) -> dict:
        return {"kind": self.name, "run_id": run.run_id, "status": run.status}

    def clean_leftovers(self) -> list[str]:
        return []

    def saved_model(self, run: BackgroundRun) -> None:
        return None

    def start(self, request: dict, owner_token: str = "", *, visitor: str = "", check_only: bool = False) -> StubRun | None:
        if not check_only:
            self.runs.check_free(owner_token)
        self.runs.check_visitor_share(owner_token, visitor, resuming=False)
        if check_only:
            return None
        run = StubRun(self.root, bool(request.get("hold")), owner_token=self.runs.owner(owner_token),
                      visitor=self.runs.visitor(visitor), max_seconds=self.runs.cap_seconds(),
                      clock=self.runs.manager.clock)
        return self.runs.launch(run, owner_token)


def _context(tmp_path: Path, parallel_runs: int = 1, **limits) -> tuple[AppContext, StubKind]:
    ctx = AppContext.for_tests(tmp_path, public=True, limits=Limits(**limits), parallel_runs=parallel_runs)
    return ctx, StubKind(ctx.runs)


@pytest.fixture
def public(tmp_path):
    ctx, kind = _context(tmp_path)
    yield ctx, kind
    _end(ctx)


def _end(ctx: AppContext) -> None:
    ctx.runs.shutdown(timeout=STOP_S)
    ctx.classes.close()


def _attempt(ctx: AppContext, kind: StubKind, token: str, visitor: str, hold: bool = False):
    """A start through the service's one door, as a page's Start sends it: the run, its place, or the refusal."""
    try:
        return ctx.runs.start_or_queue(token, visitor, "stand-in run",
                                       lambda: kind.start({"hold": hold}, token, visitor=visitor),
                                       check=lambda: kind.start({}, token, visitor=visitor, check_only=True))
    except ValueError as refused:
        return refused


def _door(ctx: AppContext, address: str, member_token: str = "") -> str:
    """The visitor the HTTP door makes of a request from ``address`` carrying ``member_token``."""
    scope = {"type": "http", "client": (address, 50_000),
             "headers": [(MEMBER_HEADER.encode(), member_token.encode())] if member_token else []}
    return visitor_key(scope, visitor_address(scope), ctx.classes.visitor_key)


def _memberships(ctx: AppContext, address: str, count: int, name: str = "Sybil class") -> tuple[str, list[str]]:
    """A class made from ``address`` and joined ``count`` times from there: (class id, each member's visitor)."""
    new = ctx.classes.store.create_class(name, creator=address)
    members = [ctx.classes.store.join(new.join_code, f"kid{i}", address=address) for i in range(count)]
    return new.class_id, [_door(ctx, address, member.token) for member in members]


def _held_slot(ctx: AppContext, kind: StubKind) -> BackgroundRun:
    run = _attempt(ctx, kind, "holder-token", HOLDER, hold=True)
    assert isinstance(run, BackgroundRun) and run.active
    return run


def _kept(ctx: AppContext, kind: StubKind, attempts: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Each (token, visitor) starts a run that ends at once, in turn: (the run ids kept, the refusals)."""
    kept, refused = [], []
    for token, visitor in attempts:
        outcome = _attempt(ctx, kind, token, visitor)
        if isinstance(outcome, ValueError):
            refused.append(str(outcome))
            continue
        assert isinstance(outcome, BackgroundRun) and outcome.join(STOP_S)
        kept.append(outcome.run_id)
    return kept, refused


def test_memberships_do_not_multiply_the_starts_one_address_queues(public):
    ctx, kind = public
    _held_slot(ctx, kind)
    _class_id, members = _memberships(ctx, ATTACKER, MEMBERSHIPS)
    assert len(set(members)) == MEMBERSHIPS  # each membership is a visitor of its own at the door
    outcomes = [_attempt(ctx, kind, f"sybil-{i}", member) for i, member in enumerate(members)]
    queued = [o for o in outcomes if isinstance(o, Place)]
    refused = {str(o) for o in outcomes if isinstance(o, ValueError)}
    assert len(queued) == WAITING, f"{len(queued)} starts queued from one address"
    assert refused and all("your network's address" in r.lower() for r in refused), refused
    assert isinstance(_attempt(ctx, kind, "no-membership", ATTACKER), ValueError)  # the address itself: share held
    honest = _attempt(ctx, kind, "honest", HONEST)  # another visitor still queues, right behind
    assert isinstance(honest, Place) and honest.position == WAITING + 1
    assert len(ctx.runs.queue.waiting()) == WAITING + 1


def test_memberships_do_not_multiply_the_runs_one_address_keeps(public):
    ctx, kind = public
    _class_id, members = _memberships(ctx, ATTACKER, 2 * KEPT)
    kept, refused = _kept(ctx, kind, [(f"sybil-{i}", member) for i, member in enumerate(members)])
    assert len(kept) == KEPT, f"one address keeps {len(kept)} runs"
    assert len(refused) == len(members) - KEPT
    assert all(f"You keep {KEPT} runs on this server" in r and "network's address" in r for r in refused), refused
    plain, _ = _kept(ctx, kind, [("no-membership", ATTACKER)])
    assert plain == []  # nor does the address itself, without a membership
    honest, _ = _kept(ctx, kind, [("honest", HONEST)])
    assert len(honest) == 1  # another address keeps its own


def test_with_several_slots_one_address_trains_one_run_at_a_time(tmp_path):
    ctx, kind = _context(tmp_path, parallel_runs=2)
    try:
        _class_id, (ada, bob) = _memberships(ctx, ATTACKER, 2)
        first = _attempt(ctx, kind, "ada", ada, hold=True)
        assert isinstance(first, BackgroundRun) and first.active
        second = _attempt(ctx, kind, "bob", bob, hold=True)  # a slot is free, but not for this address
        assert isinstance(second, ValueError) and "one run at a time" in str(second), second
        other = _attempt(ctx, kind, "honest", HONEST, hold=True)
        assert isinstance(other, BackgroundRun) and other.active  # another address takes the second slot
    finally:
        _end(ctx)


def test_a_class_gets_the_places_the_operator_grants_and_no_more(tmp_path):
    places = 2
    ctx, kind = _context(tmp_path, class_places=places)
    try:
        class_id, members = _memberships(ctx, ATTACKER, KEPT + places + 3)
        kept, refused = _kept(ctx, kind, [(f"sybil-{i}", member) for i, member in enumerate(members)])
        assert len(kept) == KEPT + places  # the address's share, then the class's places
        assert refused and all(f"{places} places" in r for r in refused), refused
        taken = ctx.runs.class_places(class_id)
        assert (taken.granted, taken.waiting, taken.kept) == (places, 0, places)
        shown = _teachers_view(ctx, class_id)  # what the teacher reads
        assert f"grants each class **{places}** places" in shown and f"**{places}** taken (0 waiting, {places} kept)" \
            in shown and "**0** free" in shown and f"{KEPT} kept runs" in shown
        _plain, plain_refused = _kept(ctx, kind, [("no-membership", ATTACKER)])
        assert plain_refused  # the address without a membership has no class places
        honest, _ = _kept(ctx, kind, [("honest", HONEST)])
        assert len(honest) == 1

        _held_slot(ctx, kind)  # a second class from the same address: its places for queued starts
        other_id, others = _memberships(ctx, ATTACKER, places + 2, name="Second class")
        outcomes = [_attempt(ctx, kind, f"second-{i}", member) for i, member in enumerate(others)]
        assert sum(isinstance(o, Place) for o in outcomes) == places  # the address's kept share is full already
        assert (ctx.runs.class_places(other_id).waiting, ctx.runs.class_places(other_id).kept) == (places, 0)
    finally:
        _end(ctx)


def _teachers_view(ctx: AppContext, class_id: str) -> str:
    from bertdemo.ui.class_tab import places_markdown

    return places_markdown(ctx.runs.class_places(class_id), ctx.settings.public_limits)


def test_by_default_a_class_has_no_places_of_its_own_and_its_teacher_is_told(public):
    ctx, _kind = public
    class_id, _members = _memberships(ctx, ATTACKER, 1)
    assert ctx.runs.class_places(class_id).granted == 0
    shown = _teachers_view(ctx, class_id)
    assert "no places of their own" in shown and f"{WAITING} waiting start and {KEPT} kept runs" in shown
    assert "--class-places" in shown


def test_the_operator_grants_class_places_on_the_command_line():
    import app

    assert app.settings_from_args(app.parse_args(["--public"])).public_limits.class_places == 0
    assert app.settings_from_args(app.parse_args(["--public", "--class-places", "8"])).public_limits.class_places == 8
    with pytest.raises(SystemExit):
        app.parse_args(["--class-places", "-1"])


@pytest.mark.parametrize("kind_name", ["pretrain", "finetune", "table5"])
def test_every_run_kind_counts_a_members_start_on_their_address(kind_name, public, corpus, tiny_mlm_dir):
    from bertdemo.finetune.config import FinetuneConfig
    from bertdemo.finetune.table5_run import start_cell
    from tests.test_finetune_engine import word_task

    ctx, kind = public
    _class_id, members = _memberships(ctx, ATTACKER, KEPT + 1)
    kept, _ = _kept(ctx, kind, [(f"sybil-{i}", member) for i, member in enumerate(members[:KEPT])])
    assert len(kept) == KEPT
    member, token = members[KEPT], "fresh-member"
    starts = {
        "pretrain": lambda: ctx.pretrain_runs.start(tiny_run_config(corpus, ctx.settings.runs_dir), token,
                                                    visitor=member),
        "finetune": lambda: ctx.finetune_runs.start(
            FinetuneConfig(init="random", init_path=str(tiny_mlm_dir), epochs=1, num_threads=1), token,
            visitor=member, task_loader=lambda: word_task(50)),
        "table5": lambda: start_cell(ctx.finetune_runs, "mlm", "topic", 0, token, visitor=member),
    }
    with pytest.raises(ValueError, match=f"You keep {KEPT} runs on this server.*network's address"):
        starts[kind_name]()
    assert ctx.runs.current is None or not ctx.runs.current.active  # nothing started

"""What a run kind plugs into the shared run service (:class:`RunKind`), and the registry that lists the
kinds a server runs (:class:`KindRegistry`). Pretraining and fine-tuning register themselves when the app
context builds them, so the service — and the tests — enumerate every kind, a new one included."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bertdemo.runs.slot import BackgroundRun


class RunKind(Protocol):
    """One kind of run (its service): its own start checks, estimates and names live there; the slot, the
    cap, control, quota, clean-up and shutdown are the shared service's."""

    name: str  # the kind's registry name, also ``BackgroundRun.kind`` of its runs ("pretrain", "finetune")
    label: str  # how a sentence names it ("pretraining", "fine-tuning")

    @property
    def root(self) -> Path:
        """The folder its runs' folders live in."""

    def status(self, run: BackgroundRun) -> dict[str, Any]:
        """The run's snapshot as plain values, with ``kind`` set to :attr:`name` (the status API's answer)."""

    def clean_leftovers(self) -> list[str]:
        """At server start, no run training: remove what interrupted runs left; the run ids deleted."""

    def saved_model(self, run: BackgroundRun) -> Path | None:
        """The folder of the run's latest saved model (a stock transformers folder), None before it saved."""

    def start(self, request: dict[str, Any], owner_token: str = "", *, visitor: str = "", **options: Any) -> BackgroundRun:
        """Start a run from plain settings in the slot (a queued start made again after a restart calls it)."""


class KindRegistry:
    """The run kinds one server runs, by name (registered once each, when the context builds them)."""

    def __init__(self) -> None:
        self._kinds: dict[str, RunKind] = {}

    def register(self, kind: RunKind) -> None:
        """Add ``kind``; ValueError when a kind of that name is registered already."""
        if kind.name in self._kinds:
            raise ValueError(f"A run kind named {kind.name!r} is registered already.")
        self._kinds[kind.name] = kind

    def __iter__(self):
        return iter(tuple(self._kinds.values()))

    def names(self) -> list[str]:
        return list(self._kinds)

    def of(self, run: BackgroundRun) -> RunKind:
        """The kind of ``run`` (KeyError for a run of a kind nobody registered)."""
        return self._kinds[run.kind]

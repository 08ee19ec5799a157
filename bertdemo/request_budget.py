"""One request's budget, for every view that runs a model: its planned cost (GFLOP) checked before the
work starts, and between batches a deadline and a stop when its client has gone.

Torch-free and gradio-free: the page (``bertdemo.ui.heavy_requests``) builds a :class:`WorkBudget` per
request from its declared cost estimator, and the logic calls :meth:`WorkBudget.check` between batches
(integrated-gradient batches, probe layers, index batches, PLL passes). The estimators below say what a
request of each view costs from its own inputs (steps x tokens x the model's size), so a request that
asks for more than the server allows is refused with a sentence saying what to lower.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bertdemo.limits import MAX_REQUEST_GFLOP, MAX_REQUEST_SECONDS

BACKWARD_FACTOR = 3  # a forward and its backward cost about three forwards


def sequence_gflop(config: Any, length: int) -> float:
    """Forward cost of one sequence of ``length`` tokens (GFLOP): the Linear layers plus attention."""
    layers = getattr(config, "num_hidden_layers", getattr(config, "n_layers", 12))
    hidden = getattr(config, "hidden_size", getattr(config, "dim", 768))
    inner = getattr(config, "intermediate_size", getattr(config, "hidden_dim", 4 * hidden))
    linear = 2 * length * layers * (4 * hidden * hidden + 2 * hidden * inner)
    attention = 4 * layers * length * length * hidden
    return (linear + attention) / 1e9


class WorkStopped(ValueError):
    """The caller said stop (its client went away): the request's work ended between two batches."""


@dataclass
class WorkBudget:
    """What one request may compute: planned GFLOP checked up front (summed over the request's models and
    views), and between batches a deadline and the caller's ``should_stop`` (True once the client has gone),
    so work stops within one batch of either. ``max_gflop`` infinite: nothing is refused for its size."""

    max_gflop: float = MAX_REQUEST_GFLOP
    seconds: float = MAX_REQUEST_SECONDS
    started: float = field(default_factory=time.monotonic)
    clock: Callable[[], float] = time.monotonic
    should_stop: Callable[[], bool] = lambda: False
    on_progress: Callable[[int, int], None] = lambda done, planned: None  # passes run, passes planned
    planned_gflop: float = 0.0  # what earlier plans of this request (another model) took
    planned_passes: int = 0
    batches: int = 0  # forward batches run so far (each after one check)
    passes: int = 0  # sequences those batches held

    def charge(self, gflop: float, asked: str, lower: str, earlier: str = "planned before") -> None:
        """ValueError, before any of it runs, when ``gflop`` (with what this request planned before, named by
        ``earlier``) is over the allowance: ``asked`` says what the request asks for, ``lower`` what to lower;
        else it counts as planned."""
        if self.planned_gflop + gflop > self.max_gflop:
            before = f" after the {self.planned_gflop:,.0f} {earlier}" if self.planned_gflop else ""
            raise ValueError(f"That asks {asked} (about {gflop:,.0f} GFLOP){before}; this server computes at most "
                             f"{self.max_gflop:,.0f} per request. {lower}")
        self.planned_gflop += gflop

    def check_plan(self, passes: int, gflop: float, model_name: str) -> None:
        """Fill-Mask's extra passes: :meth:`charge` for ``passes`` sequences costing ``gflop`` on ``model_name``."""
        self.charge(gflop, f"{model_name} for {passes:,} extra passes",
                    "Use fewer masks or target words of several pieces, a shorter text, or turn whole words off.",
                    earlier="the first model takes")
        self.planned_passes += passes

    def restart(self) -> None:
        """Start the deadline now (a handler whose models had to load first: loading has its own rules)."""
        self.started = self.clock()

    def check(self) -> None:
        """Between two batches: WorkStopped when the caller said stop, ValueError past the deadline."""
        if self.should_stop():
            raise WorkStopped(f"Stopped: the request's client went away ({self.passes:,} passes had run).")
        if self.clock() - self.started > self.seconds:
            raise ValueError(f"This request took longer than {self.seconds:g} s and was stopped: ask for less "
                             "(fewer steps, masks or layers, a shorter text) or a smaller model.")

    def check_time(self, passes: int = 1) -> None:
        """Before each batch (of ``passes`` sequences): :meth:`check`, then the batch is counted and reported
        to ``on_progress``."""
        self.check()
        self.on_progress(self.passes, max(self.planned_passes, self.passes))
        self.batches += 1
        self.passes += passes


def unbounded() -> WorkBudget:
    """A budget that refuses nothing and never stops (a handler called in-process, a script)."""
    return WorkBudget(max_gflop=math.inf, seconds=math.inf)


# --- what each view costs, from its own inputs -----------------------------------------------------------------
def attribution_gflop(config: Any, tokens: int, steps: int, methods: tuple[str, ...]) -> float:
    """Attribution of one [MASK]: integrated gradients run ``steps`` forward+backward passes, gradient x input
    one, occlusion one forward per token; plus the input, baseline and attention forwards."""
    one = sequence_gflop(config, tokens)
    total = 3 * one
    for method in methods:
        if method == "integrated gradients":
            total += BACKWARD_FACTOR * steps * one
        elif method == "gradient x input":
            total += BACKWARD_FACTOR * one
        else:
            total += tokens * one
    return total


def corpus_gflop(config: Any, sentences: int, tokens: int) -> float:
    """Corpus sentences read through the whole model: ``sentences`` of at most ``tokens`` tokens."""
    return sentences * sequence_gflop(config, tokens)


def index_gflop(config: Any, tokens: int) -> float:
    """A corpus neighbour index of ``tokens`` corpus tokens (in sentences of about 32 tokens)."""
    return corpus_gflop(config, math.ceil(tokens / 32), 32)


def probe_gflop(config: Any, sentences: int, tokens: int, models: int = 2) -> float:
    """Layer probes: ``sentences`` of ``tokens`` through every layer of ``models`` models (trained, random)."""
    return models * sentences * sequence_gflop(config, tokens)


def checking(progress: Callable[[float, str], None] | None, budget: WorkBudget) -> Callable[[float, str], None]:
    """A ``progress(fraction, message)`` callback that first checks ``budget`` (for logic that reports after
    each batch: the check then runs between batches), then tells ``progress`` (if any)."""

    def report(fraction: float, message: str) -> None:
        budget.check()
        if progress is not None:
            progress(fraction, message)

    return report

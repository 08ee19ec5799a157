"""The random-weight reference: fine-tuning runs from random weights of the embedded model's shape, with the
default settings, measured by ``bench/bench_finetune.py --reference`` and stored in ``reference_runs.json``
beside this module (when, on which machine, with which seeds and settings).

It is the one source of the random-weight figure: the Fine-tune tab draws its curves beside a live run (labelled
as a stored measurement), the status says where a run ended against it, and the tab's introduction and the Learn
step quote :func:`random_range_text`. Beside it, the two measurements the pages quote of the pretrained start
(:data:`EMBEDDED_TEST`, :data:`LEARNING_RATE_CHOICE`), so every page says the same. Torch-free.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

REFERENCE_FILE = Path(__file__).with_name("reference_runs.json")
# the embedded start with the default recipe, the reference's runs' twins: bench/bench_finetune.py --threads 2,
# 2026-12-04, a quiet 2-core VM, 3 minutes, seeds 0 / 1 / 2 (docs/lab/benchmarks.md)
EMBEDDED_TEST = (0.889, 0.860, 0.894)  # test accuracy
EMBEDDED_VALIDATION = (0.904, 0.872, 0.908)  # the fixed validation sample at 180 s
# why 2e-4 is the default: validation at the end of 3 minutes, seed 0, 2 pinned cores of a 16-core Xeon host
# (2026-11-26, docs/lab/benchmarks.md "Learning rate and batch size")
LEARNING_RATE_CHOICE = {"lr": (2e-4, 5e-5), "validation": (0.924, 0.852), "measured": "2 pinned cores of a faster host, seed 0"}


@dataclass(frozen=True)
class ReferenceRun:
    """One stored run: its seed, its curve (validation accuracy on the fixed sample against training seconds)
    and its test accuracy at the end."""

    init: str
    seed: int
    total_steps: int
    eval_wall_s: tuple[float, ...]
    val_accuracy: tuple[float, ...]
    test_accuracy: float


@dataclass(frozen=True)
class Reference:
    """The stored reference runs and where they come from."""

    measured: str  # the date
    machine: str
    command: str
    commit: str
    settings: dict
    runs: tuple[ReferenceRun, ...]
    source: str = ""  # where the measurement is written up

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    def test_range(self) -> tuple[float, float]:
        """The lowest and highest test accuracy over the seeds."""
        values = [r.test_accuracy for r in self.runs if math.isfinite(r.test_accuracy)]
        return (min(values), max(values)) if values else (math.nan, math.nan)

    def label(self) -> str:
        """What the chart calls the reference: a stored measurement, with its date, machine and seeds."""
        seeds = ", ".join(str(s) for s in self.seeds)
        return f"random weights, same shape: stored reference ({self.measured}, seeds {seeds})"

    def provenance(self) -> str:
        """One line for the page: what was measured, where, how to measure it again."""
        return (f"measured {self.measured} (commit {self.commit}) on {self.machine}, seeds "
                f"{', '.join(map(str, self.seeds))}, the default settings (lr {self.settings.get('learning_rate', 0):g}, "
                f"batch {self.settings.get('batch_size', 0)}, {self.settings.get('time_budget_s', 0):.0f} s); again "
                f"with `{self.command} --inits random --reference …`")


def parse_reference(data: dict) -> Reference:
    """A :class:`Reference` from the stored JSON (ValueError for a file of another shape)."""
    try:
        runs = tuple(ReferenceRun(str(r["init"]), int(r["seed"]), int(r["total_steps"]),
                                  tuple(float(t) for t in r["eval_wall_s"]), tuple(float(a) for a in r["val_accuracy"]),
                                  float(r["test_accuracy"])) for r in data["runs"])
        return Reference(str(data["measured"]), str(data["machine"]), str(data["command"]), str(data.get("commit", "")),
                         dict(data["settings"]), runs, str(data.get("source", "")))
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"The reference runs file is not in the expected shape: {err}") from None


@functools.cache
def load_reference(path: Path = REFERENCE_FILE) -> Reference:
    """The stored reference (read once per path; the file ships with the app and never changes while it runs)."""
    return parse_reference(json.loads(Path(path).read_text()))


def percent_range(low: float, high: float) -> str:
    """``52–55 %`` (one figure when both round the same)."""
    lo, hi = round(100 * low), round(100 * high)
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def random_range_text(reference: Reference | None = None) -> str:
    """The random-weight control's test accuracy over the stored seeds, as every page quotes it."""
    reference = reference or load_reference()
    return percent_range(*reference.test_range())


def embedded_range_text() -> str:
    """The pretrained start's test accuracy over its seeds (:data:`EMBEDDED_TEST`), as every page quotes it."""
    return percent_range(min(EMBEDDED_TEST), max(EMBEDDED_TEST))


def learning_rate_choice_text() -> str:
    """Why the default learning rate, in one sentence's words, as every page quotes it."""
    (chosen, paper), (chosen_acc, paper_acc) = LEARNING_RATE_CHOICE["lr"], LEARNING_RATE_CHOICE["validation"]
    def rate(lr: float) -> str:
        return f"{lr:.0e}".replace("e-0", "e-")  # 2e-4, as the recipe is written

    return (f"**{rate(chosen)}** reached {round(100 * chosen_acc)} % validation accuracy in 3 minutes where "
            f"{rate(paper)} reached {round(100 * paper_acc)} % ({LEARNING_RATE_CHOICE['measured']})")

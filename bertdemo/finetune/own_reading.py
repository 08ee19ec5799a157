"""Which of a learner's examples an own-data run reads when its time budget cannot read them all, and the sentences
that say so. Reading every example's [CLS] vector from the frozen start is the preparation's long part (5,000
examples of 48 pieces: about 70 s on one core of the 2-core machine, docs/deploy.md); under a time budget it may
take :data:`READ_SHARE` of it, in :func:`reading_order`, and the examples read by then are the ones used.
Torch-free: the result's page reads the sentences too."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# the most of a run's time budget that reading the examples' [CLS] vectors may take: the landmarks' regressions on
# what was read take about a quarter as long again (5,000 long texts: 69 s and 19 s on one core), fine-tuning gets
# the rest (docs/deploy.md: the heaviest inputs)
READ_SHARE = 0.3
READ_CHUNK = 128  # examples read between two looks at the clock (and at a stop)
PREPARING_STOPPED = ("Stopped while preparing (reading the examples' [CLS] vectors or scoring the landmarks), before "
                     "fine-tuning began: no model was kept and there is no score to report.")


def members_of(n: int, groups: Sequence[int] | None) -> dict[int, list[int]]:
    """Each group's examples, groups in the order of their first example (no ``groups``: one example each)."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(range(n) if groups is None else groups):
        members.setdefault(int(g), []).append(i)
    return members


def reading_order(strata: Sequence[int], groups: Sequence[int] | None = None, seed: int = 0) -> list[list[int]]:
    """The examples' groups (each a list of rows; no ``groups``: one example each) in a seeded order whose every
    prefix keeps each label's share: every label's groups shuffled, the i-th of a label's n groups placed at
    (i + ½) / n, labels in order on a tie."""
    rng = np.random.default_rng(seed)
    members = members_of(len(strata), groups)
    by_label: dict[int, list[int]] = {}
    for g, rows in members.items():
        by_label.setdefault(int(strata[rows[0]]), []).append(g)
    placed = [((rank + 0.5) / len(heads), label, members[heads[int(i)]])
              for label, heads in sorted(by_label.items()) for rank, i in enumerate(rng.permutation(len(heads)))]
    return [rows for _, _, rows in sorted(placed, key=lambda t: (t[0], t[1]))]


def sample_parts(sample: dict) -> tuple[str, str]:
    """(how many examples of how many a run used, why): an own-data result's ``sample`` in words."""
    return (f"Used {sample['used']:,} of the {sample['given']:,} examples",
            f"(a seeded sample keeping each label's share): reading every example's [CLS] vector from the start did "
            f"not fit in {sample['read_s']:.0f} s, the part of the run's {sample['budget_s']:.0f}-second time budget "
            "that reading may take. A larger time budget (where the server allows it) uses more of them.")


def sample_sentence(sample: dict) -> str:
    """Why a run used only some of the examples given (an own-data result's ``sample``), in one sentence."""
    return " ".join(sample_parts(sample))

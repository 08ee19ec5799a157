"""The disk budget for frequent small writes (a class's answers, joins and classes): the budgeted folders are walked
at most once per ``max_age_s``, and what was allowed since counts on top of that reading.

Walking the runs and caches (:func:`bertdemo.storage.folder_bytes`) costs ~45 ms on a server that keeps 100 runs of
six checkpoints (docs/benchmarks.md) — 100 times a class answer's own write. Each write here adds at most a database
page, so a reading up to ``max_age_s`` old, plus the bytes allowed since, keeps the budget within a few pages of
exact. A write the reading would refuse is checked on a fresh walk first (space freed meanwhile is seen at once), so
a refusal is never stale. Runs and fine-tuning keep checking the budget on a fresh walk
(:meth:`bertdemo.settings.DiskRules.check`): they write megabytes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bertdemo import storage
from bertdemo.settings import DiskRules

MAX_AGE_S = 1.0  # how old a reading of the folders may be


class DiskMeter:
    """:meth:`check` as :meth:`DiskRules.check` (``adding`` bytes), on a reading at most ``max_age_s`` old."""

    def __init__(self, rules: DiskRules, max_age_s: float = MAX_AGE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rules, self.max_age_s, self.clock = rules, max_age_s, clock
        self._lock = threading.Lock()
        self._used: int | None = None  # bytes at the last walk, plus what was allowed since
        self._read_at = 0.0

    def _walk(self) -> int:
        self._used, self._read_at = storage.folder_bytes(*self.rules.roots), self.clock()
        return self._used

    def check(self, adding: int = 0) -> None:
        """ValueError (the budget's own message) when the budgeted folders plus ``adding`` bytes exceed the cap;
        otherwise ``adding`` counts as used until the next walk."""
        if self.rules.budget_bytes is None:
            return
        with self._lock:
            fresh = self._used is None or self.clock() - self._read_at > self.max_age_s
            if fresh:
                self._walk()
            if self._used + adding > self.rules.budget_bytes:
                self.rules.refuse_if_over(self._used if fresh else self._walk(), adding)
            self._used += adding

"""Where a run is (:class:`Status`) and its metrics behind a lock (:class:`LockedSnapshot`): written by the
run's thread, copied by the pages. Shared by every run kind; torch-free."""

from __future__ import annotations

import dataclasses
import math
import threading
from enum import StrEnum


class Status(StrEnum):
    """Where a run is; a StrEnum, so it compares equal to (and serialises as) its plain string."""

    PREPARING = "preparing"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"
    GPU_BURST = "gpu burst"  # the run's thread has ended while a GPU worker trains it: still busy
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"


STATUSES = tuple(Status)
ACTIVE_STATUSES = (Status.PREPARING, Status.RUNNING, Status.PAUSED, Status.STOPPING, Status.GPU_BURST)
SMOOTHING = 0.6  # TensorBoard's default weight of the debiased EMA, per log interval


class LockedSnapshot:
    """A snapshot dataclass (``snapshot_type``) behind a lock: written by a run's thread through methods,
    copied by the pages (:meth:`snapshot` never waits for a training step)."""

    snapshot_type: type = object

    def __init__(self, **initial) -> None:
        self._lock = threading.Lock()
        self._snap = self.snapshot_type(**initial)
        self._names = tuple(f.name for f in dataclasses.fields(self.snapshot_type))

    def snapshot(self):
        """A copy no later write changes (lists and dicts copied one level: see :meth:`copied`)."""
        with self._lock:
            return self.snapshot_type(**{name: self.copied(name, getattr(self._snap, name)) for name in self._names})

    @staticmethod
    def copied(name: str, value):
        """A copy of a snapshot field that no later write changes: lists and dicts copied one level (their
        items are numbers, strings, or entries never changed once appended). A kind whose fields hold
        growing entries copies those deeper."""
        if isinstance(value, list):
            return list(value)
        if isinstance(value, dict):
            return dict(value)
        return value

    def update(self, **values) -> None:
        with self._lock:
            for name, value in values.items():
                setattr(self._snap, name, value)

    def get(self, name: str):
        with self._lock:
            return getattr(self._snap, name)


def debiased_ema(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing: an EMA divided by its bias (so early points are not pulled to 0).

    ``weight`` 0 returns the values; non-finite values pass through without poisoning the rest."""
    out, last, norm = [], 0.0, 0.0
    for value in values:
        if not math.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1 - weight) * value
        norm = norm * weight + (1 - weight)
        out.append(last / norm if norm else value)
    return out

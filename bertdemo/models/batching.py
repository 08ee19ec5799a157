"""Requests that arrive together share one forward pass: a micro-batcher with no waiting window.

Each caller submits its item for a key (e.g. the model it needs). Whoever finds that key idle
runs every item waiting for it (up to ``max_batch``) as one batch and hands each caller its own
result; callers that arrive meanwhile wait and go together in the next batch. A lone request
never waits for company, so it costs what it did unbatched; under load, one padded forward
reads the model's weights once for many requests.

If a batch fails, its items are run one by one, so a bad item gets its own error and the
others their results.

The app context owns one batcher (``ctx.batcher``) and passes it to the views that share forwards.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# most concurrent requests sharing one forward pass, unless the server says otherwise (ServerSettings.fill_mask_batch,
# from $BERTDEMO_FILL_MASK_BATCH in app.py; 1: one request per forward)
DEFAULT_SHARED_BATCH = 16

BatchFn = Callable[[Sequence[Any]], Sequence[Any]]  # items -> one result per item, in order


@dataclass(eq=False)
class _Job:
    item: Any
    fn: BatchFn
    result: Any = None
    error: Exception | None = None
    done: bool = False


class MicroBatcher:
    """Thread-safe: :meth:`submit` from any number of threads; items of one key run at most one batch at a time."""

    def __init__(self, max_batch: int = DEFAULT_SHARED_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}.")
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._waiting: dict[Hashable, deque[_Job]] = {}
        self._busy: set[Hashable] = set()

    def pending(self, key: Hashable) -> int:
        """How many submitted items of ``key`` wait for a batch (not counting the one running)."""
        with self._cond:
            return len(self._waiting.get(key, ()))

    def submit(self, key: Hashable, item: Any, fn: BatchFn) -> Any:
        """``fn([item, …])[i]`` for this caller's item, computed together with the items waiting for ``key``.

        ``fn`` must treat items independently; items of one key share the ``fn`` of whoever runs the batch.
        """
        job = _Job(item, fn)
        with self._cond:
            self._waiting.setdefault(key, deque()).append(job)
        while True:
            with self._cond:
                while not job.done and key in self._busy:
                    self._cond.wait()
                if job.done:
                    break
                batch = self._take(key)  # idle key: run what waits first (this job, or it comes next)
            self._run(key, batch)
        if job.error is not None:
            raise job.error
        return job.result

    def _take(self, key: Hashable) -> list[_Job]:
        """Up to max_batch waiting jobs of ``key``; marks the key busy. Caller holds the condition."""
        queue = self._waiting[key]
        batch = [queue.popleft() for _ in range(min(self.max_batch, len(queue)))]
        if not queue:
            del self._waiting[key]
        self._busy.add(key)
        return batch

    def _run(self, key: Hashable, batch: list[_Job]) -> None:
        """Run ``batch``; an ``Exception`` goes to its own item's caller, anything else (an interrupt)
        propagates in this thread and the others are told the batch was interrupted."""
        finished = False
        try:
            try:
                results = batch[0].fn([j.item for j in batch])
                for job, result in zip(batch, results, strict=True):
                    job.result = result
            except Exception as exc:  # noqa: BLE001 - handed to its caller(s)
                if len(batch) == 1:
                    batch[0].error = exc
                else:
                    for job in batch:  # find the bad item: each alone gets its own result or error
                        try:
                            job.result = job.fn([job.item])[0]
                        except Exception as item_exc:  # noqa: BLE001 - handed to its own caller
                            job.error = item_exc
            finished = True
        finally:
            with self._cond:
                for job in batch:
                    if not finished and job.error is None and job.result is None:
                        job.error = RuntimeError("The shared forward pass was interrupted; try again.")
                    job.done = True
                self._busy.discard(key)
                self._cond.notify_all()


class Slots:
    """At most ``n`` heavy requests computing at once; one more is refused at once with a message (the
    ordinary requests keep flowing instead of queueing behind minutes of extra passes)."""

    def __init__(self, n: int) -> None:
        self._free = threading.BoundedSemaphore(n)

    @contextmanager
    def take(self, what: str) -> Iterator[None]:
        """Hold a slot for the ``with`` block; ValueError naming ``what`` when none is free."""
        if not self._free.acquire(blocking=False):
            raise ValueError(f"The server is busy with other long requests ({what}); try again in a moment.")
        try:
            yield
        finally:
            self._free.release()

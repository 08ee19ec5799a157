"""How the web framework's queue finds work: woken when work arrives instead of looking for it all the time.

Gradio's queue loop looks for a new event every millisecond while it is idle or all its workers are busy, and for
progress to send every 10 ms: a thousand wake-ups a second for a server nobody uses. Looking every 5 ms still cost
the idle server about 0.035 CPU-seconds each second on a two-core machine (0.055 for the whole event-loop thread)
— most of what a page open costs the server when the open takes several seconds.

:func:`poll_less` makes the queue's wait for work a :class:`WorkSignal`: the wait ends as soon as an event joins
the queue or a running one finishes (its worker is free), and at the latest after :data:`FREE_S` (a safety net for
any other change gradio does not announce). Progress is looked for every :data:`PROGRESS_S` while an event runs;
with none running, its loop waits until one starts. An idle server: 0.062 CPU-s/s before, about 0.007 after.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, Self

from bertdemo import compat

FREE_S = 1.0  # the longest the queue waits for work before it looks anyway (gradio: looks every 0.001 s)
PROGRESS_S = 0.05  # while an event runs, the wait between looks for progress to send (gradio: 0.01 s)


class WorkSignal(float):
    """A wait of gradio's queue loops: a float of seconds (the longest wait) as gradio reads it, and the signal
    that ends the wait early (:meth:`set`). With ``poll_s`` and ``polling``: while ``polling()`` is true the wait
    is a plain ``poll_s`` sleep (progress to send while an event runs), otherwise the signal's."""

    def __new__(cls, seconds: float, poll_s: float = 0.0, polling: Callable[[], bool] = lambda: False
                ) -> Self:
        signal = super().__new__(cls, seconds)
        signal.poll_s, signal.polling = poll_s, polling
        signal._event = None  # made in the loop that first waits (a relaunched app runs a new loop)
        signal._loop = None
        return signal

    def set(self) -> None:
        """Work arrived: end the current wait, or the next one at once."""
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Until :meth:`set` is called (or was, since the last wait ended), or :func:`float` of self seconds."""
        if self.polling():
            await asyncio.sleep(self.poll_s)
            return
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._event = loop, asyncio.Event()
        try:
            await asyncio.wait_for(self._event.wait(), float(self))
        except TimeoutError:  # the longest wait is over: look anyway
            pass
        # no await between the wake and this clear: a set() that came meanwhile is for work the loop sees next
        self._event.clear()


async def queue_sleep(delay: float, result: Any = None) -> Any:
    """``asyncio.sleep`` for gradio's queue: a :class:`WorkSignal` is waited on, any other delay slept."""
    if isinstance(delay, WorkSignal):
        await delay.wait()
        return result
    return await asyncio.sleep(delay, result)


def _signalling(original: Callable, before: WorkSignal | None = None, after: WorkSignal | None = None) -> Callable:
    @functools.wraps(original)
    async def call(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before.set()
        try:
            return await original(*args, **kwargs)
        finally:
            if after is not None:
                after.set()

    return call


def poll_less(demo: Any, free_s: float = FREE_S, progress_s: float = PROGRESS_S) -> tuple[WorkSignal, WorkSignal]:
    """Make the queued ``demo``'s queue (call after ``demo.queue()``) wait for work until an event joins or
    finishes (``free_s`` at most), and look for progress every ``progress_s`` while an event runs (else wait
    until one starts); returns the two signals (work, progress)."""
    work = WorkSignal(free_s)
    progress = WorkSignal(free_s, progress_s, functools.partial(compat.queue_running, demo))
    compat.route_queue_sleeps(queue_sleep)
    compat.wrap_queue_push(demo, functools.partial(_signalling, after=work))
    compat.wrap_queue_process_events(demo, functools.partial(_signalling, before=progress, after=work))
    compat.set_queue_polling(demo, work, progress)
    return work, progress

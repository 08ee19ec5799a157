"""How often the web framework's queue looks for work when it has none.

Gradio's queue loop looks for a new event every millisecond while it is idle or all its workers are busy, and for
progress to send every 10 ms: a thousand wake-ups a second for a server nobody uses, about 0.05 CPU-seconds each
second on a busy two-core machine — most of what a page open costs the server when the open takes several seconds.
:func:`poll_less` makes those waits :data:`FREE_S` and :data:`PROGRESS_S`: an event starts at most 5 ms later,
a progress bar moves 20 times a second.
"""

from __future__ import annotations

from typing import Any

from bertdemo import compat

FREE_S = 0.005  # the queue's wait between looks for work (gradio: 0.001 s)
PROGRESS_S = 0.05  # the wait between looks for progress to send (gradio: 0.01 s)


def poll_less(demo: Any, free_s: float = FREE_S, progress_s: float = PROGRESS_S) -> None:
    """Set the queued ``demo``'s idle waits (call after ``demo.queue()``)."""
    compat.set_queue_polling(demo, free_s, progress_s)

"""The events a run's loop checks between steps (and its evaluations between batches): pause, resume,
stop, and a probe asked for now. Shared by every run kind; torch-free."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RunControl:
    """Events the loop checks between steps (and evaluation between batches)."""

    stop_event: threading.Event = field(default_factory=threading.Event)
    pause_event: threading.Event = field(default_factory=threading.Event)  # set while paused
    probe_event: threading.Event = field(default_factory=threading.Event)  # set: run the probe at the next step
    paused_at: list[int] = field(default_factory=list)  # the step of each pause, when the loop reached it

    def wait_while_paused(self, step: int, clock: Callable[[], float] = time.monotonic) -> float:
        """Block while the pause event is set (a Stop ends the wait at once); the seconds it waited on
        ``clock``, which a run's training clock leaves out. Records the step it held at."""
        self.paused_at.append(step)
        began = clock()
        while self.pause_event.is_set() and not self.stop_event.is_set():
            self.stop_event.wait(0.05)
        return clock() - began

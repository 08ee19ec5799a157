"""The training thread's priority, for every run kind.

On Linux every thread has its own nice value, so the thread that trains can run at nice +10 while
the web server's threads (Fill-Mask, Attention, the run's status poll) stay at 0: when both want a
core, the scheduler gives the page about ten times the share of the training thread; when the
page is idle, training still gets every free cycle. Threads the training thread starts later (its
OpenMP workers) inherit the lower priority. Elsewhere this does nothing. Standard library only.
"""

from __future__ import annotations

import os
import sys
import threading

BACKGROUND_NICE = 10  # added to the thread's nice value (capped at 19, the lowest priority)


def lower_this_thread(step: int = BACKGROUND_NICE) -> bool:
    """Raise the calling thread's nice value by ``step`` (Linux only); True when it was changed."""
    if not sys.platform.startswith("linux") or not hasattr(os, "setpriority"):
        return False
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + step))
    except OSError:
        return False
    return True

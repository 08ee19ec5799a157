"""Intra-op threads for one piece of work, in the calling thread only (:func:`threads_here`), and the rule for a
request's small forwards (:func:`small_forward`).

torch keeps one intra-op thread count per thread, but a thread takes its first count from a process-wide
default that ``torch.set_num_threads`` also overwrites: set naively, one thread's count would become the
count of every thread created later (the web server's workers among them). :func:`threads_here` gives the
calling thread its own count and has a short helper thread put the process-wide default back at once; the
calling thread's count is restored on exit.

A learner's click runs a forward over a sentence or two: a few hundred tokens, a few milliseconds of work per
layer. Split over two OpenMP threads, each matrix product of that size costs more in handing work over and
waiting (the idle thread spins) than it saves, and the more so while the browser, a training run or another
request holds the other core: a 15-token forward of the embedded model took 20 ms of CPU on one thread and
120–260 ms on two on a busy 2-core machine (the same numbers, in either case). :func:`small_forward` runs
such a forward on one thread; a larger one keeps the server's count.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

SMALL_FORWARD_TOKENS = 2048  # a forward over at most this many tokens (batch x length) runs on one thread


def set_process_default(count: int) -> None:
    """Set the thread count new threads start with, leaving the calling thread's own count alone."""
    helper = threading.Thread(target=torch.set_num_threads, args=(count,), name="torch-threads-default")
    helper.start()
    helper.join()


@contextlib.contextmanager
def threads_here(count: int) -> Iterator[int]:
    """Run the body with ``count`` intra-op threads in *this* thread only (see the module's docstring)."""
    previous = torch.get_num_threads()  # also fixes this thread's own count before we change it
    if count == previous:
        yield count
        return
    torch.set_num_threads(count)
    set_process_default(previous)
    try:
        yield count
    finally:
        torch.set_num_threads(previous)


def small_forward(tokens: int) -> contextlib.AbstractContextManager[int]:
    """One intra-op thread for a request's forward over ``tokens`` tokens (batch x length) when it is small
    (at most :data:`SMALL_FORWARD_TOKENS`); otherwise the thread's own count, unchanged."""
    if tokens <= SMALL_FORWARD_TOKENS:
        return threads_here(1)
    return contextlib.nullcontext(torch.get_num_threads())

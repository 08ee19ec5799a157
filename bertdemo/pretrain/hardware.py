"""The machine a run trains on: CPU threads, bf16 precision, the allocator, the training thread's priority.

Process-wide settings that the run's trainer and the time estimate set around their work (and put
back), kept apart from the loop so that the loop reads as the recipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Iterator

import torch

from bertdemo import compat

# --- hardware: threads, bf16, the allocator -------------------------------------------------------
# What the machine gives a run: CPU threads (leaving the UI a core), bf16 autocast where it pays,
# and an allocator that keeps freed memory for the next step.

def cpu_threads(requested: int = 0, world_size: int = 1) -> int:
    """CPU threads for training: `requested`, or the cores shared by the processes minus one for the UI."""
    if requested > 0:
        return requested
    cores = os.cpu_count() or 1
    return max(1, cores // max(1, world_size) - (1 if world_size == 1 else 0))


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX: bf16 matmuls run about twice as fast as fp32 on this CPU."""
    return compat.cpu_native_bf16()


def use_bf16(device: torch.device, precision: str = "auto") -> bool:
    """Whether to train under bf16 autocast (weights, optimizer and loss stay fp32)."""
    if precision == "fp32" or device.type not in ("cuda", "cpu"):
        return False
    if precision == "bf16":
        return True
    return device.type == "cuda" or cpu_has_native_bf16()


def autocast(device: torch.device, enabled: bool = True):
    """bf16 autocast on CUDA / CPU when enabled; full precision otherwise."""
    if enabled and device.type in ("cuda", "cpu"):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt() parameters (malloc.h)
RETAIN_BYTES = 1 << 30  # allocations below 1 GiB come from (and go back to) the reusable heap


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory for reuse: a training step on the CPU allocates and frees
    the same large tensors (activations, gradients, optimizer temporaries) every step, and by default
    every block above 32 MB is a fresh ``mmap`` that the kernel zero-fills page by page, and the heap's
    free top is handed back to the kernel, so every step pays page faults again (a third of a bert-tiny
    step on a 2-core VM). Process-wide and idempotent; memory stays reserved up to the peak in use.
    Returns whether the allocator accepted it (False off glibc, e.g. on macOS or musl)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_TRIM_THRESHOLD, RETAIN_BYTES) and mallopt(_M_MMAP_THRESHOLD, RETAIN_BYTES))


@contextlib.contextmanager
def thread_count(requested: int, world_size: int, device: torch.device) -> Iterator[int]:
    """Run the body with :func:`cpu_threads` intra-op threads in *this* thread only (CPU runs).

    torch keeps one count per thread, but a thread takes its first count from a process-wide
    default that ``torch.set_num_threads`` also overwrites: set naively, a run's single thread
    would become the count of every thread created later (the web server's workers among them).
    So the calling thread takes its own count, and a short helper thread puts the process-wide
    default back at once; the calling thread's count is restored on exit.
    """
    if device.type != "cpu":
        yield torch.get_num_threads()
        return
    previous = torch.get_num_threads()  # also fixes this thread's own count before we change it
    count = cpu_threads(requested, world_size)
    torch.set_num_threads(count)
    _set_process_default(previous)
    try:
        yield count
    finally:
        torch.set_num_threads(previous)


def _set_process_default(count: int) -> None:
    """Set the thread count new threads start with, leaving the caller's own count alone."""
    helper = threading.Thread(target=torch.set_num_threads, args=(count,), name="torch-threads-default")
    helper.start()
    helper.join()

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

import torch

from bertdemo import compat
from bertdemo.models.threads import threads_here

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


def thread_count(requested: int, world_size: int, device: torch.device) -> contextlib.AbstractContextManager[int]:
    """Run the body with :func:`cpu_threads` intra-op threads in *this* thread only (CPU runs): the thread's own
    count, the process-wide default left as it was (:func:`bertdemo.models.threads.threads_here`)."""
    if device.type != "cpu":
        return contextlib.nullcontext(torch.get_num_threads())
    return threads_here(cpu_threads(requested, world_size))

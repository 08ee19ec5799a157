"""Which torch device to compute on: CUDA, then Apple MPS, then CPU; a named device must exist.

On a ZeroGPU Space (``SPACES_ZERO_GPU`` set) "auto" is the CPU: there the main process sees a GPU
that only ``@spaces.GPU`` functions can use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertdemo.models.hub import env_flag

if TYPE_CHECKING:
    import torch


def zero_gpu() -> bool:
    """True on a ZeroGPU Space, where torch.cuda.is_available() claims a GPU that the main process does not have."""
    return env_flag("SPACES_ZERO_GPU")


def resolve_device(device: str = "auto") -> torch.device:
    """'auto' picks CUDA, then Apple MPS, then CPU; a named device ("cuda:1" too) must be available."""
    import torch  # here, not at the top: the page asks zero_gpu() before torch is loaded

    name = (device or "auto").lower()
    mps_ok = bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    if name == "auto":
        if zero_gpu():  # CUDA exists only inside @spaces.GPU workers there: the main process stays on CPU
            return torch.device("cpu")
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if mps_ok else "cpu")
    try:
        resolved = torch.device(name)
    except RuntimeError:
        resolved = None
    if resolved is None or resolved.type not in {"cpu", "cuda", "mps"}:
        raise ValueError(f"Unknown device {device!r}: use auto, cpu, cuda or mps.")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device} was asked for, but no CUDA GPU is available.")
    if resolved.type == "mps" and not mps_ok:
        raise ValueError(f"--device {device} was asked for, but Apple MPS is not available.")
    return resolved


RUN_GPU_BYTES = 4 * 2**30  # the GPU memory one small run is given when runs share a GPU (a public run, ~12 M parameters, uses far less)
MAX_PARALLEL_RUNS = 4  # runs at once, whatever the GPU's size: each still loads the CPU (its data, its thread)


def default_parallel_runs(device: str = "auto") -> int:
    """How many runs may train at once on this machine when the operator did not say (app.py --parallel-runs):
    1 on a CPU, Apple MPS or a ZeroGPU Space; on CUDA one per :data:`RUN_GPU_BYTES` of the GPU's free memory
    now, from 1 to :data:`MAX_PARALLEL_RUNS`."""
    try:
        resolved = resolve_device(device)
    except ValueError:
        return 1
    if resolved.type != "cuda":
        return 1
    import torch

    free, _total = torch.cuda.mem_get_info(resolved)
    return max(1, min(MAX_PARALLEL_RUNS, int(free // RUN_GPU_BYTES)))

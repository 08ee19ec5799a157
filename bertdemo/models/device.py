"""Which torch device to compute on: CUDA, then Apple MPS, then CPU; a named device must exist."""

from __future__ import annotations

import torch


def resolve_device(device: str = "auto") -> torch.device:
    """'auto' picks CUDA, then Apple MPS, then CPU; a named device ("cuda:1" too) must be available."""
    name = (device or "auto").lower()
    mps_ok = bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    if name == "auto":
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

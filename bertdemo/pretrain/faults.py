"""What a failed run tells the learner: a library's exception turned into what to change.

Out-of-memory is the fault a learner can cause from the form (a batch or a block length too
large for the device); it gets a message naming the settings to lower, and the device's cache
is emptied so the server keeps serving the other tabs.
"""

from __future__ import annotations

import torch

from bertdemo.pretrain.config import TrainConfig

_OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory")


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocator failure (CUDA, MPS or CPU)."""
    if isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(err, RuntimeError) and any(m in str(err).lower() for m in _OOM_MARKERS)


def release_device_memory() -> None:
    """Give cached device memory back after a failed run, so inference keeps working."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def failure_message(err: BaseException, cfg: TrainConfig, device: str = "cpu") -> str:
    """The run's failure as the page shows it: what happened and, for out-of-memory, what to lower."""
    if isinstance(err, ValueError):
        return str(err)
    if is_out_of_memory(err):
        batch, seq_len = cfg.optim.batch_size, cfg.data.seq_len
        smaller = max(1, batch // 2)
        where = "GPU" if device.startswith("cuda") else device.upper()
        return (f"Out of {where} memory at batch size {batch} × block length {seq_len} on {cfg.model.preset}. "
                f"Lower the batch size (e.g. to {smaller}), the block length or the model size, and start again; "
                "the last checkpoint is kept.")
    return f"{type(err).__name__}: {err}"

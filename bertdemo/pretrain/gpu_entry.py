"""The ``@spaces.GPU`` function of a GPU burst, in a module without torch so it exists from startup.

A ZeroGPU Space looks for its ``@spaces.GPU`` functions when the app starts, while the page is
served before torch loads; so the decorated entry point lives here and imports the training code
(:mod:`bertdemo.pretrain.zerogpu`) only when a burst runs. Where the ``spaces`` package is not
installed the decorator is the identity and the burst is a plain generator. The entry point sits above
the burst's code: :func:`bertdemo.pretrain.zerogpu.run_burst` is handed :func:`gpu_train` by its caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from bertdemo.pretrain.budget import BURST_SECONDS


def gpu_decorator(duration: int) -> Callable[[Callable], Callable]:
    """``spaces.GPU(duration=...)`` where the ``spaces`` package is installed; the identity elsewhere."""
    try:
        import spaces  # only on Hugging Face Spaces
    except ImportError:
        return lambda fn: fn
    return spaces.GPU(duration=duration)


@gpu_decorator(BURST_SECONDS)
def gpu_train(inp: Any, device: str = "cuda") -> Iterator[Any]:
    """Train a burst on the GPU (a ZeroGPU worker); see :func:`bertdemo.pretrain.zerogpu.train_burst`."""
    from bertdemo.pretrain.zerogpu import train_burst

    yield from train_burst(inp, device)

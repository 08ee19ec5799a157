"""bertdemo.gc_pauses: the server's long-lived objects are frozen out of full collections, and nothing else
changes — garbage made later is still collected, and a frozen model dropped later is still freed."""

from __future__ import annotations

import gc
import weakref

import torch

from bertdemo.gc_pauses import freeze_long_lived


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_what_is_alive_is_frozen_and_later_garbage_is_still_collected():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    weight = weakref.ref(model[0].weight)
    assert any(o is model for o in gc.get_objects())  # walked by every full collection
    try:
        frozen = freeze_long_lived()
        # another thread (a test's server, a run) may drop a frozen object in between: it is then freed, not added
        assert 0 < gc.get_freeze_count() <= frozen
        assert not any(o is model for o in gc.get_objects())  # left out of them
        cycle = weakref.ref(_Cycle())  # garbage made after the freeze: only the collector frees a cycle
        assert cycle() is not None
        gc.collect()
        assert cycle() is None
        del model  # a frozen model dropped later is freed by its reference count, no collection needed
        assert weight() is None
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0

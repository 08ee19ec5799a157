"""Short garbage-collection pauses: the objects a started server holds for its whole life are moved out of the
cycle collector's sight once the default model is in (:func:`freeze_long_lived`).

Python's cycle collector walks every tracked object in a full (generation 2) pass, holding the interpreter
lock. Once torch, transformers, gradio and the default model are loaded, that is about 630,000 objects, and a
full pass took 330–590 ms on the 2-core development VM: a request that met one (about one click in ten on a busy
page) answered half a second late (docs/lab/benchmarks.md). ``gc.freeze()`` moves the objects alive at that moment
into a permanent generation the collector skips; a full pass then walks only what came later (about 5,000
objects, 5 ms, measured in the same run). Frozen objects are still freed by their reference counts when dropped
(a model evicted from the cache goes: it holds no reference cycle); only cyclic garbage among them would stay,
and a first full collection just before the freeze leaves none.
"""

from __future__ import annotations

import gc


def freeze_long_lived() -> int:
    """Collect what is garbage now, then freeze every object still alive; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()

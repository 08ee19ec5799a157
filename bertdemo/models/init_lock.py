"""One process-wide lock around every Hugging Face model construction.

While transformers 5 builds a model in ``from_pretrained`` it changes process-wide state and
puts it back afterwards: ``PreTrainedModel.tie_weights`` becomes a no-op and torch's default
dtype is set to the load dtype. A model built on another thread meanwhile comes out with its
masked-LM decoder *untied* (a second, random vocabulary × hidden matrix), and two loads that
overlap can leave ``tie_weights`` a no-op for the rest of the process. The app builds models
on several threads at once (page requests, the start-up preload, the pretraining thread), so
each construction here runs under :data:`MODEL_INIT_LOCK`. Models load in float32, so the
default dtype that loading sets is the one every other thread expects anyway.
"""

from __future__ import annotations

import threading

MODEL_INIT_LOCK = threading.RLock()
"""Held while a model is built or loaded (``from_pretrained``, ``BertForMaskedLM(config)``)."""

"""The queue's lanes: which requests wait for which, so the cheapest answer is never kept behind a forward pass.

Gradio gives every event its own lane of ``default_concurrency_limit`` (``--concurrency``) by default: a
page with a dozen model views could run four forward passes of each at once, all fighting for the two
cores and the interpreter, while a tokenization (a few milliseconds of work) waited its turn behind four
other tokenizations, each stretched by those forwards. Under a class of visitors with a run training
beside them, ``/tokenize`` had the worst tail of all endpoints (docs/benchmarks.md, "A class on a public server").

- :data:`LIGHT`: events that run no model (tokenizing, vocabulary lookups, code panels): one shared lane
  with no limit, so a light request starts at once and is over before the forwards it shares the
  cores with notice.
- :data:`VIEWS`: the model views whose pages are clicked most (Attention, Inside BERT): one shared lane of
  ``--concurrency`` forwards in all, not ``--concurrency`` per event, so a class's clicks queue for the
  cores instead of all slowing down together (Fill-Mask keeps its own lane, where requests that meet are
  batched; the heavy views keep their heavy slot).

Pass them to an event listener: ``button.click(fn, inputs, outputs, **lanes.LIGHT)``.
"""

from __future__ import annotations

LIGHT = {"concurrency_id": "light", "concurrency_limit": None}
VIEWS = {"concurrency_id": "views", "concurrency_limit": "default"}  # the queue's default_concurrency_limit

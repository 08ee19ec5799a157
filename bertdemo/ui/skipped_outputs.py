"""Outputs an event leaves as they are (``gr.skip()``) cost the server nothing.

An event lists every component it may change, and its answer names those it does change: a view with
several sections (Inside BERT's Look inside lists 22 outputs and answers 5 to 8 of them) leaves the rest as
they are, and so does a run tab's idle poll (all of its outputs). The web framework treats each of those as a
change of nothing: it builds the component again from its arguments and makes its page configuration twice
(about 1 ms for a text box, 5 ms for a figure) to send the page ``{"__type__": "update"}``, the skip it got.
On each Inside BERT click that was about 40 of the 50 ms the server spent after the handler (docs/lab/benchmarks.md,
"What a click cost the server after its handler"). :func:`pass_skipped_outputs` hands the framework the other
outputs alone and puts the skips back in their places: the session keeps the same components, and the page
gets the same answer, except that a skipped ``gr.HTML`` (a figure) no longer carries ``props:
{"__type__": "update"}`` beside its skip (``tests/test_skipped_outputs.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bertdemo import compat

SKIP = {"__type__": "update"}  # gr.skip(): the output stays as it is


def pass_skipped_outputs(demo: Any) -> None:
    """Every event of ``demo`` leaves its skipped outputs to this module, not to the framework."""
    compat.wrap_postprocess(demo, _passing)


def _is_skip(value: Any) -> bool:
    return isinstance(value, dict) and value == SKIP


def _passing(postprocess: Callable[[Any, Any, Any], Awaitable[list]]) -> Callable[[Any, Any, Any], Awaitable[list]]:
    async def postprocess_data(block_fn: Any, predictions: Any, state: Any) -> list:
        outputs = compat.event_outputs(block_fn)
        values = compat.output_values(block_fn, predictions)
        if values is None:  # one output, a batch, or answers that do not fit: the framework's own way (its errors)
            return await postprocess(block_fn, predictions, state)
        kept = [i for i, (block, value) in enumerate(zip(outputs, values))
                if not (_is_skip(value) and not compat.holds_state(block))]  # a State's skip answers None
        if len(kept) == len(outputs):
            return await postprocess(block_fn, values, state)
        answer: list = [dict(SKIP) for _ in outputs]
        if kept:
            part = compat.with_outputs(block_fn, [outputs[i] for i in kept])
            done = await postprocess(part, [values[i] for i in kept] if len(kept) > 1 else values[kept[0]], state)
            for i, value in zip(kept, done):
                answer[i] = value
        return answer

    return postprocess_data

"""A question asked again while its answer is on its way is kept, not dropped: the page answers the latest input.

Gradio's page ignores a press of an event that is still pending (``trigger_mode="once"``, its default for a
click and for Enter in a box). A learner who edits a sentence and presses Enter or Run while the answer to the
sentence before is still coming (a busy server, a class on one machine) got that older answer and nothing for
the sentence on screen: the press was dropped without a word. On the built app, :func:`answer_latest` gives
every event that answers the text in a box ``trigger_mode="always_last"``: a press while it is pending runs once
more, with the box's latest value, when the pending answer has come (at most one waits; further presses
replace it). The events chained after one (drawing its answer) get it too.

Which events: every one triggered by Enter in a box (``submit``, and the Run button that shares the event: Enter
means a text was typed, Word in context's attribution included), and those that run a model on typed text from a
button alone (a model endpoint with a text box among its inputs, :mod:`bertdemo.ui.heavy_requests`), except a heavy
one (a slot of minutes: a double click would hold it twice). An event that starts or changes something (a run, a
class, a guess) keeps "once": a second press there must not start a second one.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from bertdemo import compat
from bertdemo.ui.heavy_requests import declaration

LATEST = "always_last"


def asks_about_text(block_fn: Any) -> bool:
    """Whether an event answers the text in a box: Enter in a box triggers it, or it runs a (not heavy) model on a
    typed text when a button is pressed."""
    events = {event for _, event in block_fn.targets}
    if "submit" in events:
        return True
    endpoint = declaration(block_fn.api_name)
    typed = any(isinstance(c, gr.Textbox) and c.interactive is not False for c in block_fn.inputs)
    return ("click" in events and typed and endpoint is not None and endpoint.kind == "model"
            and not endpoint.heavy)


def answer_latest(demo: gr.Blocks) -> int:
    """Give every event of the built ``demo`` that answers a box's text (:func:`asks_about_text`), and every event
    chained after one (``.then``, ``.success``: the answer drawn), the trigger mode that keeps a press made while it
    is pending; how many events changed. A chained event that kept "once" was skipped when the answer to the newer
    press came while its drawing of the older answer was still pending: the older sentence stayed on screen."""
    changed, asking = 0, set()
    for key, block_fn in sorted(compat.event_handlers_by_id(demo), key=lambda item: item[0]):  # chained after its own
        if asks_about_text(block_fn) or block_fn.trigger_after in asking:
            asking.add(key)
            if block_fn.trigger_mode == "once":
                block_fn.trigger_mode = LATEST
                changed += 1
    return changed

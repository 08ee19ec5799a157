"""Fewer components whose loading status the page keeps: a click's status passes cost less in every tab.

Gradio 6's page keeps a loading status for every progress target of every event that has run in it, for
the page's life, and at each status message of any event (pending, queued, started, done: about five a
click, each rewriting them all) it finds every one of them in the component tree, walking the tree from
its root. On the built app that walk was the largest single cost of the page's own work per Tokenizer
click (~130 of ~300 ms of page CPU, most of it finding the components of the Pretrain and Fine-tune tabs
that the page-load events had named: docs/lab/benchmarks.md, "Click to settled"). Two kinds of target show
a learner nothing and are dropped from the built app (:func:`track_less`):

- the targets of an event that shows no progress (``show_progress="hidden"``): nothing is drawn on them;
- the targets of a page-load event that lie in a tab the page does not open on: the load is over, or
  nearly, before a learner can open that tab (a deep link opens its tab after the loads).

Events that a learner's click runs keep the targets they name (``common.progress_on_text``).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from bertdemo import compat


def _hidden_at_open(block: Any) -> bool:
    """Whether ``block`` lies in a tab that is not the one its tabs open on (at any depth)."""
    node = block
    while node is not None:
        parent = getattr(node, "parent", None)
        if isinstance(node, gr.Tab) and isinstance(parent, gr.Tabs):
            tabs = [t for t in parent.children if isinstance(t, gr.Tab)]
            selected = getattr(parent, "selected", None)
            opening = next((t for t in tabs if selected is not None and t.id == selected), tabs[0] if tabs else None)
            if node is not opening:
                return True
        node = parent
    return False


def _is_page_load(block_fn: Any) -> bool:
    return any(event == "load" for _, event in block_fn.targets)


def track_less(demo: gr.Blocks) -> int:
    """Drop, from every event of the built ``demo``, the progress targets that show nothing: all of them for an
    event with hidden progress, and a page-load event's targets in a tab the page does not open on. How many
    events changed."""
    changed = 0
    for block_fn in compat.event_handlers(demo):
        targets = block_fn.show_progress_on if block_fn.show_progress_on is not None else block_fn.outputs
        if not targets:
            continue
        if block_fn.show_progress == "hidden":
            kept = []
        elif _is_page_load(block_fn):
            kept = [c for c in targets if not _hidden_at_open(c)]
        else:
            continue
        if len(kept) != len(targets):
            block_fn.show_progress_on = kept
            changed += 1
    return changed

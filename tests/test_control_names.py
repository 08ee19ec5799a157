"""No two controls of one tab share a name: a screen reader lists a tab's fields and buttons by name ("Run",
"Seed", "Layer" four, two and two times over were read as one), and a learner told to "set the Layer" must know which.

Names as the page gives them: a field's label, a button's text; controls not shown (``visible=False`` or
``"hidden"``, the page's own plumbing) are left out. Gradio's own repeated controls (a slider's "Reset to default
value", a chart's toolbar) are not components of ours and are not counted."""

from __future__ import annotations

from collections import Counter, defaultdict

import gradio as gr

from bertdemo.context import AppContext
from bertdemo.ui import build_app

FIELDS = (gr.Textbox, gr.Number, gr.Dropdown, gr.Radio, gr.Slider, gr.Checkbox, gr.CheckboxGroup)


def _named_controls(block, tab: str | None, out: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each tab's controls' names, the tab's own sections included."""
    if block.visible in (False, "hidden"):
        return out
    if isinstance(block, gr.Tab):
        tab = block.label
    if isinstance(block, FIELDS) and block.label:
        out[tab].append(f"field {block.label!r}")
    if isinstance(block, gr.Button) and block.value:
        out[tab].append(f"button {block.value!r}")
    for child in getattr(block, "children", None) or []:
        _named_controls(child, tab, out)
    return out


def test_no_two_controls_of_a_tab_share_a_name(tmp_path):
    tabs = _named_controls(build_app(AppContext.for_tests(tmp_path)), None, defaultdict(list))
    assert {"Attention", "Pretrain", "Fine-tune", "Word in context", "Masking & NSP"} <= set(tabs)
    assert {tab: {name: n for name, n in Counter(names).items() if n > 1} for tab, names in tabs.items()
            if len(set(names)) < len(names)} == {}

"""A refused request leaves no answer of the input before on screen.

Gradio keeps an event's last answer under its "Error" badges when the next request fails; a learner who emptied the
box or forgot the [MASK] read the heatmap, the chips or the bars of the sentence before as the answer to what they
had just typed. Every button of the built page that answers with a figure, a table or a text about its input has a
failure handler (``common.clear_on_refusal``) that empties those outputs and says it was refused; the buttons whose
text is a run's, a class's or a grade's status (it stays true when a request fails) are named here with why."""

from __future__ import annotations

import gradio as gr

from bertdemo.context import AppContext
from bertdemo.ui import build_app
from bertdemo.ui.common import REFUSED_NOTE
from bertdemo.ui.plotly_figure import PlotlyFigure

ANSWERS = (gr.Markdown, gr.HTML, gr.Plot, PlotlyFigure, gr.Dataframe, gr.Image, gr.JSON)
# (tab, button): its text is the state of something that outlives the request (a run, a queue place, a class, the
# learner's grades), which a refused request does not change
STATUS_BUTTONS = {
    ("Class", "Join"), ("Class", "Refresh"),
    ("Fine-tune", "Cancel my queued run"), ("Fine-tune", "Delete run"), ("Fine-tune", "Download the model (.zip)"),
    ("Fine-tune", "Fine-tune on Find the names"), ("Fine-tune", "Fine-tune on these examples"),
    ("Fine-tune", "Pause"), ("Fine-tune", "Resume"), ("Fine-tune", "Start fine-tuning"), ("Fine-tune", "Stop"),
    ("Learn", "Check my guess"), ("Learn", "Grade my answers"), ("Learn", "Just show me"),
    ("Learn", "Keep exploring ▶"),
    ("Pretrain", "Cancel my queued run"), ("Pretrain", "Delete run"), ("Pretrain", "GPU burst"), ("Pretrain", "Pause"),
    ("Pretrain", "Re-run this cell"), ("Pretrain", "Resume"), ("Pretrain", "Start"), ("Pretrain", "Stop this cell"),
    ("Pretrain", "Stop"), ("Pretrain", "Yes, delete it"),
}


def _tab_of(block) -> str | None:
    while block is not None and not isinstance(block, gr.Tab):
        block = getattr(block, "parent", None)
    return block.label if block is not None else None


def _answer_events(demo: gr.Blocks) -> dict[tuple[str, str], list]:
    """(tab, button) -> the events a shown button's click sends that answer with a figure, table or text."""
    events: dict[tuple[str, str], list] = {}
    for fn in demo.fns.values():
        buttons = [demo.blocks[block_id] for block_id, name in fn.targets
                   if name == "click" and isinstance(demo.blocks.get(block_id), gr.Button)]
        shown = [b for b in buttons if b.visible not in (False, "hidden")]
        if shown and any(isinstance(o, ANSWERS) for o in fn.outputs):
            events.setdefault((_tab_of(shown[0]), shown[0].value), []).append(fn)
    return events


def test_every_answer_is_emptied_when_its_request_is_refused(tmp_path):
    demo = build_app(AppContext.for_tests(tmp_path))
    on_failure = {fn.trigger_after: fn for fn in demo.fns.values() if fn.trigger_only_on_failure}
    events = _answer_events(demo)
    assert {("Attention", "Show attention"), ("Masking & NSP", "Mask it"), ("Fill-Mask", "Predict"),
            ("Inside BERT", "Look inside"), ("Word in context", "Explain")} <= set(events)
    uncleared = {key for key, fns in events.items() if any(fn._id not in on_failure for fn in fns)}
    assert uncleared == STATUS_BUTTONS

    # what the handler draws: every answer emptied or saying it was refused (the toast says why); no control reset
    for key, fns in events.items():
        for fn in fns:
            if key in STATUS_BUTTONS:
                continue
            cleared = on_failure[fn._id]
            values = cleared.fn()
            assert len(values) == len(cleared.outputs), key
            assert all(v in (None, "") or "refused" in v.lower() for v in values), (key, values)
            assert not any(isinstance(o, (gr.Slider, gr.Checkbox, gr.Radio)) for o in cleared.outputs), key
    shown = events[("Attention", "Show attention")][0]
    cleared = on_failure[shown._id]
    said = {o.elem_id: v for o, v in zip(cleared.outputs, cleared.fn(), strict=True) if getattr(o, "elem_id", None)}
    assert said["att-info"] == REFUSED_NOTE and said["att-heatmap"] is None and said["att-overview"] is None

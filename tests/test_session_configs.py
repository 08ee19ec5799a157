"""A page session's copy of the page's configuration is made when read, not when the session starts: opening the
page makes no component's configuration, and what gradio's own deep-link route reads is, entry for entry, what
its eager copy held (events that changed a component included)."""

from __future__ import annotations

import gradio as gr
from gradio.blocks import BlocksConfig
from gradio.state_holder import SessionState, StateHolder

from bertdemo.ui.session_configs import LazyConfigs, make_session_configs_lazy


def _app() -> gr.Blocks:
    with gr.Blocks() as demo:
        box = gr.Textbox("first", label="Sentence")
        with gr.Accordion("More"):
            count = gr.Slider(0, 10, value=3, label="Count")
            out = gr.Markdown("nothing yet")
        box.submit(lambda text, n: text * int(n), [box, count], out)
    demo.queue(max_size=8)
    StateHolder().set_blocks(demo)  # what launch does
    return demo


def _counting(monkeypatch) -> list[int]:
    made: list[int] = []
    original = BlocksConfig.config_for_block

    def counted(_id, rendered_ids, block, renderable=None):
        made.append(_id)
        return original(_id, rendered_ids, block, renderable)

    monkeypatch.setattr(BlocksConfig, "config_for_block", staticmethod(counted))
    return made


def test_thirty_page_sessions_make_no_component_configuration(monkeypatch):
    demo = _app()
    made = _counting(monkeypatch)
    SessionState(demo)  # gradio's own: every component's configuration at once
    eager = len(made)
    assert eager == len(demo.blocks) > 3
    make_session_configs_lazy(demo)
    made.clear()
    sessions = [demo.state_holder[f"phone-{i}"] for i in range(30)]
    assert made == [] and all(isinstance(s.config_values, LazyConfigs) for s in sessions)
    assert all(isinstance(s, SessionState) and s.state_data == {} for s in sessions)


def test_what_the_deep_link_route_reads_is_the_eager_copy():
    demo = _app()
    eager = SessionState(demo)
    make_session_configs_lazy(demo)
    lazy = demo.state_holder["phone"]
    box = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    out = next(b for b in demo.blocks.values() if isinstance(b, gr.Markdown))
    for state in (eager, lazy):  # an event changed two components: gradio writes their entries
        state._update_value_in_config(box._id, "second")
        state[out._id] = gr.Markdown("an answer")
        state._update_config(out._id)
    assert list(lazy.components) == list(eager.components)
    assert [c["props"].get("value") for c in lazy.components if c["id"] in (box._id, out._id)] == ["second",
                                                                                                   "an answer"]

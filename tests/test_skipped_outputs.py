"""An output an answer leaves as it is (``gr.skip()``) costs the server nothing, and the page gets the same answer
(bertdemo/ui/skipped_outputs.py)."""

from __future__ import annotations

import gradio as gr
import pytest

from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.ui.skipped_outputs import SKIP, pass_skipped_outputs
from tests.helpers import run_coroutine


def _app():
    from gradio.state_holder import SessionState

    with gr.Blocks() as demo:
        text = gr.Markdown("before", elem_id="text")
        figure = PlotlyFigure(elem_id="figure", visible=False)
        slider = gr.Slider(0, 10, value=3, elem_id="slider")
        table = gr.JSON(elem_id="table")
        memory = gr.State({"kept": 1})
        button = gr.Button()
        button.click(lambda: None, None, [text, figure, slider, table, memory])
    [handler] = demo.fns.values()
    return demo, handler, SessionState(demo), (text, figure, slider, table, memory)


def _without_id(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "id"}  # two apps: their components are numbered apart


FIGURE = {"data": [{"type": "bar", "x": [1, 2], "y": [3, 4]}], "layout": {}}


def _answers(components):
    text, figure, _slider, table, memory = components
    return [
        {text: "after", table: {"a": 1}},  # a dict that leaves the others out: they are skipped
        ("after", gr.skip(), gr.update(maximum=5), gr.skip(), gr.skip()),
        (gr.skip(), gr.update(value=FIGURE, visible=True), gr.skip(), gr.skip(), {"kept": 2}),
        {figure: FIGURE, memory: gr.skip()},
        gr.skip(),  # one skip for every output
        ("after", FIGURE, 4, [1, 2], {"kept": 3}),  # nothing skipped
    ]


@pytest.mark.parametrize("case", range(6))
def test_the_page_gets_the_answer_gradio_gives(case):
    plain, plain_handler, plain_state, plain_parts = _app()
    fast, fast_handler, fast_state, fast_parts = _app()
    pass_skipped_outputs(fast)
    want = run_coroutine(plain.postprocess_data(plain_handler, _answers(plain_parts)[case], plain_state))
    got = run_coroutine(fast.postprocess_data(fast_handler, _answers(fast_parts)[case], fast_state))
    # gradio's skip of an HTML component (the figure) also carries its custom props as {"__type__": "update"}:
    # the skip alone is sent instead, which changes nothing on the page
    assert [SKIP if w == {**SKIP, "props": SKIP} else w for w in want] == got
    # what the session keeps of each output the answer changed is gradio's own
    for mine, theirs, value in zip(fast_parts, plain_parts, got):
        if value != SKIP:
            assert _without_id(fast_state.config_values[mine._id]) == _without_id(plain_state.config_values[theirs._id])
            assert type(fast_state[mine._id]) is type(plain_state[theirs._id])


def test_a_skipped_output_is_not_built_again():
    """gradio builds each skipped component anew and makes its configuration twice (a figure's: ~5 ms)."""
    fast, handler, state, (text, figure, slider, table, _memory) = _app()
    pass_skipped_outputs(fast)
    before = [state[c._id] for c in (figure, slider, table)]
    answer = run_coroutine(fast.postprocess_data(handler, {text: "after"}, state))
    assert answer[1:4] == [SKIP, SKIP, SKIP] and answer[4] is None  # a State's skip is None, as gradio answers it
    assert [state[c._id] for c in (figure, slider, table)] == before  # the very same components
    assert state.config_values[text._id]["props"]["value"] == "after"
    plain, plain_handler, plain_state, parts = _app()
    kept = plain_state[parts[1]._id]
    run_coroutine(plain.postprocess_data(plain_handler, {parts[0]: "after"}, plain_state))
    assert plain_state[parts[1]._id] is not kept  # the framework's own way: rebuilt for nothing (what this saves)


def test_a_wrong_number_of_answers_still_gets_gradio_s_error():
    fast, handler, state, _ = _app()
    pass_skipped_outputs(fast)
    with pytest.raises(ValueError, match="didn't return enough output values"):
        run_coroutine(fast.postprocess_data(handler, ("only", gr.skip()), state))

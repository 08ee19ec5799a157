"""A run tab's one poll (bertdemo/ui/tab_poll.py): the select draws every part and sets the timer's pace to what
is live (every second while a run it shows is live, every IDLE_SECONDS while none is), a tick changes the pace only
when that changes, and a value the page already has is not sent again."""

from __future__ import annotations

import gradio as gr
import pytest

from bertdemo.ui.tab_poll import IDLE_SECONDS, TabPoll, unsent

SKIP = gr.skip()


def _poll(state: dict):
    """A tab with two parts: a status line (live while ``state["live"]``) and an estimate drawn on show only."""
    with gr.Blocks() as demo, gr.Tabs(), gr.Tab("Run", id="run") as tab:
        status, estimate, box = gr.Markdown(elem_id="status"), gr.Markdown(), gr.Textbox("form")
        poll = TabPoll(1.0, "status")
        poll.add(lambda request: ((state["text"],), state["live"]), [], [status])
        poll.add(lambda request, form: ((f"estimate for {form}",), False), [box], [estimate],
                 on_show_only=True)
        poll.wire(tab)
    fns = {f.api_name: f for f in demo.fns.values() if f.api_name}
    return demo, poll, fns["tab_shown"].fn, fns["tab_tick"].fn


def _every(seconds: float) -> dict:
    return {"__type__": "update", "value": seconds, "active": True}


def test_the_select_draws_every_part_and_sets_the_timers_pace_to_what_is_live():
    state = {"text": "RUNNING step 1", "live": True}
    _demo, poll, shown, _tick = _poll(state)
    assert poll.timer.active is False  # a page open starts no timer
    status, estimate, _sent, timer = shown({}, None, "form")
    assert (status, estimate, timer) == ("RUNNING step 1", "estimate for form", _every(1.0))
    state["live"] = False
    *_, timer = shown({}, None, "form")
    assert timer == _every(IDLE_SECONDS) and IDLE_SECONDS == 10.0  # still looking: a run another visitor starts


def test_a_tick_redraws_nothing_new_and_slows_the_timer_once_nothing_is_live():
    state = {"text": "RUNNING step 1", "live": True}
    _, _, shown, tick = _poll(state)
    *_, sent, _ = shown({}, None, "form")
    status, sent, timer = tick(sent, None)
    assert (status, timer) == (SKIP, SKIP)  # the run stood still: nothing sent, the timer left at its pace
    state["text"] = "RUNNING step 2"
    status, sent, timer = tick(sent, None)
    assert (status, timer) == ("RUNNING step 2", SKIP)
    state.update(text="FINISHED", live=False)
    status, sent, timer = tick(sent, None)
    assert (status, timer) == ("FINISHED", _every(IDLE_SECONDS))  # drawn, then looked at every 10 s
    status, sent, timer = tick(sent, None)
    assert (status, timer) == (SKIP, SKIP)  # an idle tick that finds nothing new sends nothing
    state.update(text="RUNNING step 1 (another visitor's run)", live=True)
    status, sent, timer = tick(sent, None)
    assert (status, timer) == ("RUNNING step 1 (another visitor's run)", _every(1.0))  # seen, and followed


def test_unsent_leaves_out_what_the_page_has_and_keeps_skips():
    values, sent = unsent(["a", SKIP, {"__type__": "update", "choices": [1]}], [1, 2, 3], {})
    assert values == ["a", SKIP, {"__type__": "update", "choices": [1]}] and set(sent) == {"1", "3"}
    again, same = unsent(["a", "b", {"__type__": "update", "choices": [1]}], [1, 2, 3], sent)
    assert again == [SKIP, "b", SKIP] and same["1"] == sent["1"]
    changed, _ = unsent(["a2", "b", {"__type__": "update", "choices": [1, 2]}], [1, 2, 3], same)
    assert changed == ["a2", SKIP, {"__type__": "update", "choices": [1, 2]}]


def test_a_poll_that_follows_its_page_owner_reads_every_part_as_that_owner():
    """With several runs at once the run services answer inside the manager's viewing(token): the poll enters
    it with the value of the page's owner box, around every part, and leaves it after."""
    from bertdemo.runs.slot import RunManager

    manager = RunManager(slots=2)
    with gr.Blocks() as demo, gr.Tabs(), gr.Tab("Run", id="run") as tab:
        status, owner = gr.Markdown(elem_id="status"), gr.Textbox("", visible=False)
        poll = TabPoll(1.0, "status")
        poll.add(lambda request: ((manager._viewer.get(),), False), [], [status])
        poll.follow(owner, manager.viewing)
        poll.wire(tab)
    fns = {f.api_name: f for f in demo.fns.values() if f.api_name}
    shown, *_ = fns["tab_shown"].fn({}, None, "tok-ada")
    ticked, *_ = fns["tab_tick"].fn({}, None, "tok-bob")
    assert (shown, ticked) == ("tok-ada", "tok-bob") and manager._viewer.get() == ""


def test_a_first_part_answers_alone_before_the_others_and_the_next_draw_does_not_send_it_again():
    """The Pretrain tab's status line (``first``): the select's own request draws it alone and sets no timer; the
    request chained after it draws the other parts and sets the timer, leaving out the line the page already has."""
    state = {"text": "RUNNING step 1", "live": True}
    with gr.Blocks() as demo, gr.Tabs(), gr.Tab("Run", id="run") as tab:
        line, curves = gr.Markdown(elem_id="line"), gr.Markdown()
        poll = TabPoll(1.0, "line")
        poll.add(lambda request: ((state["text"],), False), [], [line], first=True)
        poll.add(lambda request: ((state["text"], "curves"), state["live"]), [], [line, curves])
        poll.wire(tab)
    fns = {f.api_name: f for f in demo.fns.values() if f.api_name}
    selected = [f for f in demo.fns.values() if any(t[1] == "select" for t in f.targets)]
    assert [f.api_name for f in selected] == ["tab_first"] and selected[0].outputs == [line, poll.sent]
    assert fns["tab_shown"].trigger_after == selected[0]._id
    drawn, sent = fns["tab_first"].fn({}, None)
    assert drawn == "RUNNING step 1"
    again, drawn_curves, sent, timer = fns["tab_shown"].fn(sent, None)
    assert (again, drawn_curves, timer) == (SKIP, "curves", _every(1.0))
    ticked = fns["tab_tick"].fn(sent, None)
    assert len(ticked) == 4 and ticked[0] == SKIP  # a tick draws the others (the line with them), never the first part


def test_a_draw_after_a_control_sends_the_line_again_that_a_tick_reached_the_page_with_first():
    """A Pause's answer ("Pausing after this step…") is computed before a tick that can reach the page first (the run
    held at once: "PAUSED"). The page then shows the answer, older, while the poll's record says it shows the tick's;
    with the run standing still, every later tick found nothing new to send and the page said "Pausing…" for good
    (CI: three minutes). The draw chained after the press sends the line whatever the record says."""
    state = {"text": "RUNNING step 84", "live": True}
    with gr.Blocks() as demo, gr.Tabs(), gr.Tab("Run", id="run") as tab:
        status, pause = gr.Markdown(elem_id="status"), gr.Button("Pause")
        poll = TabPoll(1.0, "status")
        poll.add(lambda request: ((state["text"],), state["live"]), [], [status])
        pressed = pause.click(lambda: "RUNNING step 84 · Pausing after this step…", None, status)
        poll.after(pressed, writes=[status])
        poll.wire(tab)
    fns = {f.api_name: f for f in demo.fns.values() if f.api_name}
    redraw = [f for f in demo.fns.values() if f.trigger_after == pressed["id"]]
    assert len(redraw) == 1 and redraw[0].fn.drawn_again == (status._id,)
    *_, sent, _ = fns["tab_shown"].fn({}, None)
    state["text"] = "PAUSED step 85"
    ticked, sent, _ = fns["tab_tick"].fn(sent, None)  # the tick reaches the page first ...
    assert ticked == "PAUSED step 85"
    # ... then the press's answer, older; a tick would leave the page with it, the draw after the press does not
    assert fns["tab_tick"].fn(sent, None)[0] == SKIP
    again, *_ = redraw[0].fn(sent, None)
    assert again == "PAUSED step 85"


def test_a_control_may_only_name_outputs_the_poll_draws():
    with gr.Blocks(), gr.Tabs(), gr.Tab("Run", id="run") as tab:
        status, other, button = gr.Markdown(elem_id="status"), gr.Markdown(), gr.Button("Stop")
        poll = TabPoll(1.0, "status")
        poll.add(lambda request: (("line",), False), [], [status])
        poll.after(button.click(lambda: "stopping", None, other), writes=[other])
        with pytest.raises(ValueError, match="does not draw"):
            poll.wire(tab)

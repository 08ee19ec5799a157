"""bertdemo.ui.queue_polling: the queue's wait for work ends when an event joins or one finishes, so a queue
that would otherwise look for work only every ten minutes still answers at once."""

from __future__ import annotations

import asyncio
import threading

import gradio as gr
from gradio_client import Client

from bertdemo import compat
from bertdemo.ui.queue_polling import WorkSignal, poll_less, queue_sleep
from tests.helpers import free_port, run_coroutine, wait_until

NEVER = 600.0  # seconds: longer than any test waits, so only the signal can end the wait


def test_a_wait_for_work_ends_when_work_arrives_and_a_signal_before_it_is_not_lost():
    signal = WorkSignal(NEVER)

    async def scenario():
        waiting = asyncio.ensure_future(queue_sleep(signal))
        await asyncio.sleep(0)  # the wait has begun
        assert not waiting.done()
        signal.set()
        await asyncio.wait_for(waiting, 30)  # ended by the signal (TimeoutError otherwise)
        signal.set()  # work arrives while the loop looks elsewhere: the next wait ends at once
        await asyncio.wait_for(queue_sleep(signal), 30)
        again = asyncio.ensure_future(queue_sleep(signal))  # that signal was used up
        await asyncio.sleep(0.05)
        assert not again.done()
        again.cancel()
        return await queue_sleep(0.001, "slept")  # any other delay is a plain sleep

    assert run_coroutine(scenario()) == "slept"


def test_a_wait_for_progress_polls_while_an_event_runs_and_otherwise_waits_for_one_to_start():
    running = []
    signal = WorkSignal(NEVER, 0.001, lambda: bool(running))

    async def scenario():
        idle = asyncio.ensure_future(queue_sleep(signal))
        await asyncio.sleep(0.05)
        assert not idle.done()  # nothing runs: no look for progress
        running.append("an event")
        signal.set()  # it started
        await asyncio.wait_for(idle, 30)
        for _ in range(3):  # while it runs: a plain short wait, no signal needed
            await asyncio.wait_for(queue_sleep(signal), 30)

    run_coroutine(scenario())


def test_a_queue_that_looks_for_work_every_ten_minutes_answers_at_once_and_starts_the_next_when_one_ends():
    entered, gate = threading.Event(), threading.Event()

    def held(text: str) -> str:
        entered.set()
        gate.wait(60)
        return text.upper()

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(held, box, out, api_name="held")
    demo.queue(default_concurrency_limit=1)
    work, progress = poll_less(demo, free_s=NEVER)
    assert demo._queue.sleep_when_free is work and demo._queue.progress_update_sleep_when_free is progress
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        first = client.submit("one", api_name="/held")  # the queue is idle and waits NEVER: the join wakes it
        wait_until(entered.is_set, timeout=60, what="the first event to start")
        second = client.submit("two", api_name="/held")  # one at a time: it waits for the first to finish
        wait_until(lambda: len(compat.queued_events(demo)) == 2, timeout=60, what="the second event to join")
        gate.set()
        assert first.result(timeout=60) == "ONE"
        assert second.result(timeout=60) == "TWO"  # started when the first one's worker was free
    finally:
        gate.set()
        demo.close()


def test_a_running_events_progress_still_reaches_the_page():
    steps = [threading.Event() for _ in range(3)]

    def counting(text: str, progress=gr.Progress()) -> str:
        for i, step in enumerate(steps):
            progress((i, len(steps)), desc="counting")
            step.wait(60)  # the test lets it go on once the page saw this step
        return text

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(counting, box, out, api_name="counting")
    demo.queue()
    poll_less(demo, free_s=NEVER)
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        job = Client(f"http://127.0.0.1:{port}/", verbose=False).submit("done", api_name="/counting")
        for i, step in enumerate(steps):
            wait_until(lambda i=i: any(u.index == i for u in (job.status().progress_data or [])), timeout=60,
                       what=f"progress step {i} to reach the client")
            step.set()
        assert job.result(timeout=60) == "done"
    finally:
        for step in steps:
            step.set()
        demo.close()

"""The run tabs' polls in the browser (bertdemo/ui/tab_poll.py): a tab polls only while it is shown, every second
while a run it shows is live (its curve streams), every 10 s while none is (a run another visitor starts shows
without a click).

Two pages of one server, each counting the poll requests it sends (``queue/join`` of its tabs' timer ticks).
A page whose poll must be silent is watched while the other page's poll ticks: the other page's ticks are the
clock, so no fixed wait stands for "a few poll periods". The config says which event is which timer's tick.
"""

from __future__ import annotations

import re
import time

import httpx
from gradio_client import Client
from playwright.sync_api import expect

from bertdemo.ui.tab_poll import IDLE_SECONDS
from tests.helpers import wait_until

from .pages import JOINS, RUN_TIMEOUT_MS, open_tab

# the same tiny run as test_pretrain_api.py (one layer on short blocks, quick on 2 cores), no held-out evaluation in
# the test's minute: the curve's train points are what it reads
RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=5000, lr=2e-3, warmup_steps=5, eval_every=1000,
           checkpoint_every=0, seed=1)
ENDED = ("stopped", "finished", "failed")
DRAWN = re.compile(r"No (pretraining|fine-tuning) run yet|holds this machine.s training slot|FINISHED|STOPPED|RUNNING|PAUSED|FAILED")


def _ticks(app_url: str) -> dict[str, int]:
    """Each tab's timer tick event: {"pretrain": id, "finetune": id, "class": id}."""
    config = httpx.get(app_url + "config", timeout=30).json()
    by_id = {c["id"]: c for c in config["components"]}
    tabs = {c["id"]: c["props"]["id"] for c in config["components"] if c["type"] == "tabitem"}
    owner: dict[int, str] = {}

    def walk(node: dict, tab: str | None) -> None:
        tab = tabs.get(node["id"], tab)
        owner[node["id"]] = tab
        for child in node.get("children") or []:
            walk(child, tab)

    walk(config["layout"], None)
    ticks = {}
    for dep in config["dependencies"]:
        for target, event in dep["targets"]:
            if event == "tick" and by_id[target]["type"] == "timer":
                ticks[owner[target]] = dep["id"]
    return ticks


def _open(context, url: str, status: str):
    page = context.new_page()
    page.add_init_script(JOINS)
    page.goto(url)
    expect(page.locator(status)).to_contain_text(DRAWN, timeout=RUN_TIMEOUT_MS)  # the tab's first poll answered
    return page


def _sent(page, event: int) -> int:
    return page.evaluate("(i) => window.__joins.filter(j => j === i).length", event)


def test_a_tab_polls_only_while_shown_and_live_and_then_its_curve_streams(_browser, app_url):
    ticks = _ticks(app_url)
    assert set(ticks) == {"pretrain", "finetune", "class"}  # the run tabs' polls, and the teacher view's refresh
    client = Client(app_url, verbose=False)
    idle_ctx, live_ctx = (_browser.new_context(viewport={"width": 1280, "height": 1000}) for _ in range(2))
    try:
        wait_until(lambda: (client.predict(api_name="/run_status") or {}).get("status") in (None, *ENDED),
                   timeout=120, what="no run live")
        # a page on the Fine-tune tab with no fine-tuning run live, and one left on the Pretrain tab with nothing live
        idle = _open(idle_ctx, app_url + "?tab=finetune", "#ft-status")
        live = _open(live_ctx, app_url + "?tab=pretrain", "#pt-status")
        expect(live.locator("#pt-status")).not_to_contain_text("RUNNING")
        client.predict(RUN, api_name="/start_run")  # another visitor's pretraining run: live for the Pretrain tab only
        # the Pretrain page shows it without a click (its idle poll, every 10 s)
        expect(live.locator("#pt-status")).to_contain_text("RUNNING", timeout=RUN_TIMEOUT_MS)
        # the live page's curve streams: train-loss points arrive through its poll
        live.wait_for_function(
            "() => { const p = document.querySelector('#pt-curves .js-plotly-plot');"
            " return p && p.data && p.data.some(d => d.name.endsWith(': train') && d.x.length >= 3); }",
            timeout=120_000)
        idle_before = [_sent(idle, ticks["finetune"]), _sent(idle, ticks["pretrain"])]
        start, began = _sent(live, ticks["pretrain"]), time.monotonic()
        live.wait_for_function("([i, n]) => window.__joins.filter(j => j === i).length >= n",
                               arg=[ticks["pretrain"], start + 12], timeout=RUN_TIMEOUT_MS)
        window = time.monotonic() - began
        # meanwhile (twelve of its one-second ticks: 11 s or more, longer when a tick waits for the one before on a
        # busy machine) the idle page looked at the idle pace, once per 10 s, and only its own tab's poll
        looked = _sent(idle, ticks["finetune"]) - idle_before[0]
        assert IDLE_SECONDS == 10.0 and 1 <= looked <= window // IDLE_SECONDS + 1, (looked, window)
        assert _sent(idle, ticks["pretrain"]) == idle_before[1] == 0

        # the live page leaves its tab: its timer stops in the page; the other page, now on Pretrain, polls
        open_tab(live, "Fine-tune")
        expect(live.locator("#ft-status")).to_contain_text(DRAWN, timeout=RUN_TIMEOUT_MS)
        left = _sent(live, ticks["pretrain"])
        open_tab(idle, "Pretrain")
        expect(idle.locator("#pt-status")).to_contain_text("RUNNING", timeout=RUN_TIMEOUT_MS)
        idle.wait_for_function("([i, n]) => window.__joins.filter(j => j === i).length >= n",
                               arg=[ticks["pretrain"], 3], timeout=RUN_TIMEOUT_MS)
        assert _sent(live, ticks["pretrain"]) <= left + 1  # at most the tick already under way when it left
        assert _sent(live, ticks["finetune"]) <= 1  # the Fine-tune tab shows no live run: at the idle pace there
    finally:
        try:
            client.predict(api_name="/stop_run")
        finally:  # the slot is free for the next test
            wait_until(lambda: (client.predict(api_name="/run_status") or {}).get("status") in ENDED, timeout=120,
                       what="the run to stop")
        idle_ctx.close()
        live_ctx.close()

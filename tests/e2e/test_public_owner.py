"""A browser's runs stay its own across a server restart, and the page's config holds no key to them.

The owner token used to sit in a gr.BrowserState encrypted with a key made at each server start (and sent
to every visitor in /config): after a restart the page sent an empty token, and the visitor could neither
pause, resume nor delete their runs. The page now keeps the token in its localStorage and reads it when it
opens; here a browser that kept a token, and that this server has never seen, pauses the run it names.
"""

from __future__ import annotations

import json
import re
import uuid

from playwright.sync_api import expect

from bertdemo.ui.pretrain_tab import OWNER_KEY
from tests.helpers import visitor_client

from .api import RUN, app_config, wait_ended, wait_status
from .pages import open_tab, press

TIMEOUT_MS = 60_000


def test_a_browser_that_kept_its_token_controls_its_run_and_the_config_holds_no_secret(public_server, _browser):
    config = app_config(public_server.url)
    assert not [c["id"] for c in config["components"] if "secret" in c.get("props", {})]
    client = visitor_client(public_server.url, "198.51.100.41")
    token = "kept-" + uuid.uuid4().hex
    client.predict({**RUN, "steps": 5000}, token, api_name="/start_run")
    # past its first step before the page opens: a server's first run cuts the corpus into blocks first, which on a
    # loaded machine (its training threads at nice 10) once outlasted the page's 60 s wait for the pause
    wait_status(client, lambda s: s.get("status") == "running" and s.get("step", 0) >= 1)
    context = _browser.new_context(viewport={"width": 1280, "height": 1000})
    context.add_init_script(f"localStorage.setItem({OWNER_KEY!r}, {json.dumps(token)})")  # kept from before
    try:
        page = context.new_page()
        page.goto(public_server.url)
        open_tab(page, "Pretrain")
        expect(page.locator("#pt-status")).to_contain_text("RUNNING", timeout=TIMEOUT_MS)
        press(page.locator("#pt-pause"))  # the status line above it grows as the run goes: a click could miss
        # the server took the press (its answer says so at once) ...
        expect(page.locator("#pt-status")).to_contain_text(re.compile("Pausing after this step|PAUSED"),
                                                           timeout=TIMEOUT_MS)
        # ... and the page shows the run holding once its step is done: the press's answer could reach the page after
        # a tick that showed PAUSED, and the poll, believing the page had it, left it out from then on (the draw after
        # a control sends the line again: ui/tab_poll.py, TabPoll.after)
        expect(page.locator("#pt-status")).to_contain_text("PAUSED", timeout=3 * TIMEOUT_MS)
        assert page.evaluate(f"localStorage.getItem({OWNER_KEY!r})") == token
    finally:
        context.close()
        client.predict(token, api_name="/stop_run")
        wait_ended(client)

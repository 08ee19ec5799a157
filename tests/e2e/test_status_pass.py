"""The page pushes a loading status into its component tree only when it changed (bertdemo/frontend_patch.py).

Counted in the browser: V8's call counts of the framework's ``update_state`` (the function each push goes
through) during one click, after the learner has used several tabs — each used tab leaves components the
framework keeps a loading status for. Unpatched, every status message of the click pushes all of them again;
patched, a click pushes what it changed. The counts do not depend on the machine's speed.

The page keeps no run history either (``launch(run_history=False)`` in app.py): gradio's page would otherwise
parse and rewrite up to 100 past answers in the browser's localStorage at every message of every public event.
"""

from __future__ import annotations

from .pages import RUN_TIMEOUT_MS, open_app, open_tab, set_open, wait_idle

UPDATE_STATE = "update_state"


def _calls(cdp, name: str) -> int:
    """Calls of the framework's functions named ``name`` since the last count."""
    result = cdp.send("Profiler.takePreciseCoverage")["result"]
    return sum(f["ranges"][0]["count"] for script in result if "/assets/" in script["url"]
               for f in script["functions"] if f["functionName"] == name)


def _click_and_settle(page, button: str, answer: str, text: str) -> None:
    from playwright.sync_api import expect

    page.click(button)
    expect(page.locator(answer)).to_contain_text(text, timeout=RUN_TIMEOUT_MS)
    wait_idle(page)  # no progress indicator left anywhere


def test_a_click_pushes_only_the_statuses_it_changed(browser_page, app_url):
    from playwright.sync_api import expect

    page = browser_page
    open_app(page, app_url)
    for tab, button, answer, text in [("Tokenizer", "#tok-run", "#tok-stats", "token"),
                                      ("Fill-Mask", "#fm-run", "#fm-filled", "Answered by"),
                                      ("Masking & NSP", "#ml-run", "#ml-chips", "[MASK]")]:
        open_tab(page, tab)
        _click_and_settle(page, button, answer, text)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.startPreciseCoverage", {"callCount": True, "detailed": False})
    try:
        open_tab(page, "Tokenizer")
        _calls(cdp, UPDATE_STATE)
        counts = []
        for word in ("unbelievable", "tokenization", "playground"):
            page.locator("#tok-text textarea").fill(f"An {word} sentence.")
            _click_and_settle(page, "#tok-run", "#tok-stats", "token")
            counts.append(_calls(cdp, UPDATE_STATE))
    finally:
        cdp.send("Profiler.stopPreciseCoverage")
    expect(page.locator(".progress-text, .eta-bar")).to_have_count(0)
    # served unpatched, the same three clicks made 872, 550 and 550 calls; patched 122, 79, 57
    assert max(counts) < 250, counts

    # the page keeps no run history in the browser: after a public event (those clicks are private ones)
    set_open(page.locator("button.label-wrap").filter(has_text="Vocabulary lookup"))
    page.click("#tok-lookup")  # /lookup: a public event, which the page would record
    expect(page.locator("#tok-lookup-token-out")).to_contain_text("id", timeout=RUN_TIMEOUT_MS)
    wait_idle(page)
    keys = page.evaluate("() => Object.keys(localStorage)")
    assert [k for k in keys if k.startswith("gradio:run-history")] == [], keys

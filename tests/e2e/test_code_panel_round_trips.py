"""A view's click in the browser is one queue round trip, and a closed "Show the code" panel is never
refreshed (bertdemo/ui/code_panel.py): the Attention tab, panel closed, then open.

Each event a click sends costs the page a status pass over every progress target it has seen, and the
panel's refresh, an event of its own after the picture, kept the page busy after the picture was drawn.
"""

from __future__ import annotations

import httpx

from .pages import JOINS, set_open

TIMEOUT_MS = 60_000  # first requests on 2 slow cores may wait for the model to load


def _events(app_url: str) -> tuple[dict[str, int], dict[int, dict]]:
    config = httpx.get(app_url + "config", timeout=30).json()
    ids = {c["props"].get("elem_id"): c["id"] for c in config["components"] if c.get("props", {}).get("elem_id")}
    return ids, {dep["id"]: dep for dep in config["dependencies"]}


def test_attention_click_is_one_round_trip_and_a_closed_panel_gets_no_code(browser_page, app_url):
    from playwright.sync_api import expect

    ids, deps = _events(app_url)
    page = browser_page
    page.add_init_script(JOINS)
    page.goto(app_url + "?tab=attention")
    heatmap, code = page.locator("#att-heatmap"), page.locator("#att-code")
    expect(page.locator("#att-run")).to_be_visible(timeout=TIMEOUT_MS)

    # panel closed: the click sends the view's event alone
    page.locator("#att-text textarea").fill("The pilot did not cross the valley.")
    page.evaluate("() => { window.__joins = []; }")
    page.click("#att-run")
    expect(heatmap).to_contain_text("pilot", timeout=TIMEOUT_MS)
    panel = page.locator(".code-panel .label-wrap").locator("visible=true").first
    set_open(panel)  # opening fills it with the sentence shown
    expect(code).to_contain_text("The pilot did not cross the valley.", timeout=TIMEOUT_MS)
    # a screen reader names the box by what it holds (gradio's name for it: "Code input container")
    expect(code.locator(".cm-content")).to_have_accessible_name("Python code that reproduces this view's numbers "
                                                                 "(read only)")
    sent = page.evaluate("() => window.__joins")
    on_click = [i for i in sent if [ids["att-run"], "click"] in deps[i]["targets"]]
    writes_code = [i for i in sent if ids["att-code"] in deps[i]["outputs"]]
    assert len(on_click) == 1, [deps[i]["targets"] for i in sent]  # one event for the click (the Learn path may
    # follow it with its own, which writes no code)
    opening = [i for i in writes_code if i not in on_click]
    assert len(opening) == 1 and any(event == "expand" for _, event in deps[opening[0]]["targets"])

    # panel open: the same one event answers the picture and the code
    page.locator("#att-text textarea").fill("The farmer did not cross the bridge.")
    page.evaluate("() => { window.__joins = []; }")
    page.click("#att-run")
    expect(code).to_contain_text("The farmer did not cross the bridge.", timeout=TIMEOUT_MS)
    expect(heatmap).to_contain_text("farmer", timeout=TIMEOUT_MS)
    sent = page.evaluate("() => window.__joins")
    assert [i for i in sent if ids["att-code"] in deps[i]["outputs"]] == on_click  # the click's one event

    # closed again (the server has heard it): still the one event
    with page.expect_response(lambda r: "/run/predict" in r.url, timeout=TIMEOUT_MS):
        panel.click()
    page.locator("#att-text textarea").fill("The sailor did not cross the island.")
    page.evaluate("() => { window.__joins = []; }")
    page.click("#att-run")
    expect(heatmap).to_contain_text("sailor", timeout=TIMEOUT_MS)
    assert [i for i in page.evaluate("() => window.__joins") if ids["att-code"] in deps[i]["outputs"]] == on_click


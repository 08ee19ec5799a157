"""Fill-Mask's fast mode through the launched app: the same top choice on the tiny model, the method says int8."""

from __future__ import annotations


def test_fast_mode_answers_and_names_its_precision(client, model):
    args = ("The [MASK] sat on the mat.", "", model, 5, "", "", False)
    _, full_md, _, full = client.predict(*args, False, api_name="/fill_mask")
    _, fast_md, _, fast = client.predict(*args, True, api_name="/fill_mask")
    assert "int8" in fast_md and "int8" not in full_md
    assert len(fast[0]["predictions"]) == 5
    assert fast[0]["predictions"][0]["token"] == full[0]["predictions"][0]["token"]
    assert [p["prob"] for p in fast[0]["predictions"]] != [p["prob"] for p in full[0]["predictions"]]


def test_fast_mode_checkbox_in_the_page(browser_page, app_url):
    from playwright.sync_api import expect

    from .pages import RUN_TIMEOUT_MS, open_app, open_tab

    page = browser_page
    open_app(page, app_url)
    open_tab(page, "Fill-Mask")
    box = page.locator("#fm-fast")
    expect(box).to_contain_text("probabilities change slightly")
    box.locator("input[type=checkbox]").check()
    page.locator("#fm-text textarea").fill("The capital of France is [MASK].")
    page.click("#fm-run")
    expect(page.locator("#fm-filled")).to_contain_text("int8", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#fm-plot g.point")).to_have_count(5)

"""Fill-Mask's fast mode through the launched app: the same top choice on the tiny model, the method says int8 (the
checkbox in the page: tests/e2e/test_browser.py, test_fill_mask_tab)."""

from __future__ import annotations


def test_fast_mode_answers_and_names_its_precision(client, model):
    args = ("The [MASK] sat on the mat.", "", model, 5, "", "", False)
    _, full_md, _, full = client.predict(*args, False, api_name="/fill_mask")
    _, fast_md, _, fast = client.predict(*args, True, api_name="/fill_mask")
    assert "int8" in fast_md and "int8" not in full_md
    assert len(fast[0]["predictions"]) == 5
    assert fast[0]["predictions"][0]["token"] == full[0]["predictions"][0]["token"]
    assert [p["prob"] for p in fast[0]["predictions"]] != [p["prob"] for p in full[0]["predictions"]]

"""One click downloads (issue 54, walk D7): the teacher's "Answers as CSV" hands the browser the class's CSV on the
first press (it gave nothing for 15 s, until a second press). The own-data zip is built and handed over the same
way (tests/test_downloads.py checks every such button in the page's description)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from .pages import RUN_TIMEOUT_MS, open_teacher_view


def test_the_class_csv_downloads_in_one_click(browser_page: Page, app_url: str):
    page = browser_page
    open_teacher_view(page, app_url, "Downloads")
    with page.expect_download(timeout=RUN_TIMEOUT_MS) as download:
        page.locator("#class-csv").click()  # once
    assert download.value.suggested_filename == "class-answers.csv"
    rows = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("record,nickname,")

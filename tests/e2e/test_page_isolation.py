"""``browser_page`` shares one browser context per worker (its HTTP cache keeps the app's scripts compiled), yet
each test's page is a new visitor's: what one test's page stored (local storage, a cookie) is gone for the next.
The two tests run in this order on one worker (a file's tests stay on one worker, in order)."""

from __future__ import annotations

STORED = "() => [localStorage.getItem('bertdemo-isolation'), sessionStorage.length, document.cookie]"


def test_a_page_stores_data_for_the_app(browser_page, app_url):
    browser_page.goto(app_url + "config")  # a page of the app's site, cheap to open
    browser_page.evaluate("() => { localStorage.setItem('bertdemo-isolation', 'left behind');"
                          " sessionStorage.setItem('x', '1'); document.cookie = 'bertdemo-isolation=1; path=/'; }")
    assert browser_page.evaluate(STORED) == ["left behind", 1, "bertdemo-isolation=1"]


def test_the_next_tests_page_finds_none_of_it(browser_page, app_url):
    browser_page.goto(app_url + "config")
    assert browser_page.evaluate(STORED) == [None, 0, ""]
    assert browser_page.context.cookies() == []

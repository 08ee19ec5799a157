"""One click, one download (issue 54, walk D7): every button that builds a file when pressed (the class's answers
as CSV, the own-data model's zip and its data CSV) hands the file to the browser in that same click. A gradio
``DownloadButton`` downloads the value it already holds when pressed and only then runs its click, so a button
whose click builds the file gave nothing on the first press (15 s of waiting for the class CSV, ~40 s for the
91.6 MB zip) and the previous file on the next. Read from the built app's own page description."""

from __future__ import annotations

import pytest

from bertdemo.context import AppContext
from bertdemo.ui import build_app

BUILT_ON_CLICK = ("class_csv", "own_download", "own_data_csv")  # the handlers that build a file when pressed


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    ctx = AppContext.for_tests(tmp_path_factory.mktemp("downloads"))
    try:
        yield build_app(ctx).get_config_file()
    finally:
        ctx.runs.shutdown(timeout=30)


@pytest.mark.parametrize("api_name", BUILT_ON_CLICK)
def test_a_button_that_builds_its_file_downloads_it_in_the_same_click(config, api_name):
    types = {c["id"]: c["type"] for c in config["components"]}
    (built,) = [d for d in config["dependencies"] if d.get("api_name") == api_name]
    ((trigger, event),) = {(t[0], t[1]) for t in built["targets"]}
    assert event == "click" and types[trigger] == "button"  # not a DownloadButton: it would send its old file first
    files = [o for o in built["outputs"] if types[o] == "file"]
    assert len(files) == 1  # the file built lands in one (hidden) file holder
    (then,) = [d for d in config["dependencies"] if d.get("trigger_after") == built["id"]]
    assert then["trigger_only_on_success"] and then["inputs"] == files  # once built, and only then
    assert ".download" in (then["js"] or "") and then["backend_fn"] is False  # the page downloads it, no request

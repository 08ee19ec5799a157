"""End-to-end bad input through ``gradio_client``: each gives a clear error message from the
launched app, and the server keeps serving afterwards."""

from __future__ import annotations

import time

import pytest
from gradio_client.exceptions import AppError

from .api import attend, chip_tokens, expect_error, fill, plotly_figure, tokenize


def test_empty_text_is_refused_clearly(client, model):
    expect_error(lambda: tokenize(client, "", "", model), "enter some text")
    expect_error(lambda: tokenize(client, "   ", "", model), "enter some text")
    expect_error(lambda: fill(client, "", model), "enter a sentence with [mask]")
    expect_error(lambda: attend(client, " \n", model), "enter a sentence")


def test_fill_mask_without_mask_is_refused(client, model):
    expect_error(lambda: fill(client, "There is no mask here.", model), "no mask found")


def test_too_long_for_the_model(client, model):
    long_text = "word " * 600 + "[MASK]."
    expect_error(lambda: fill(client, long_text, model), "accepts at most 512", "shorten")
    expect_error(lambda: attend(client, "word " * 200, model), "at most 128", "shorter")


def test_100kb_paste_is_refused_by_fill_mask(client, model):
    text = ("The quick brown fox jumps over the lazy dog. " * 2300)[:100_000] + " [MASK]."
    expect_error(lambda: fill(client, text, model), "tokens", "accepts at most 512")


def test_unknown_model_offline_is_fast_and_clear(client):
    start = time.monotonic()
    name = "no-such-user/no-such-model"
    expect_error(lambda: tokenize(client, "Hello", "", name), "hub unreachable", name)
    expect_error(lambda: fill(client, "Nice to [MASK] you.", name), "hub unreachable", name)
    expect_error(lambda: attend(client, "Hello", name), "hub unreachable", name)
    assert time.monotonic() - start < 30  # no hub retry loops (generous: not a benchmark)


def test_folder_that_is_not_a_model(client, tmp_path):
    (tmp_path / "notes.txt").write_text("not weights")
    for call in (
        lambda: tokenize(client, "Hello", "", str(tmp_path)),
        lambda: fill(client, "Nice to [MASK] you.", str(tmp_path)),
        lambda: attend(client, "Hello", str(tmp_path)),
    ):
        expect_error(call, "not a model")
    expect_error(lambda: tokenize(client, "Hello", "", str(tmp_path / "missing")), "no such folder")


def test_server_keeps_serving_after_bad_input(client, model, app_server):
    for bad in ("", "no mask", "[MASK] " * 30):
        with pytest.raises(AppError):
            fill(client, bad, model)
    assert app_server[1].poll() is None, "the server died"
    chips, _, _ = tokenize(client, "Still here.", "", model)
    assert chip_tokens(chips)[0] == (101, "[CLS]")
    _, _, _, raw = fill(client, "Still [MASK] here.", model, top_k=2)
    assert len(raw) == 1 and len(raw[0]["predictions"]) == 2
    plot, *_ = attend(client, "Still here.", model)
    assert plotly_figure(plot)["data"][0]["type"] == "heatmap"


def test_work_per_request_is_bounded(client, model):
    many = ", ".join(f"w{i}" for i in range(21))
    expect_error(lambda: fill(client, "Nice to [MASK] you.", model, targets=many), "at most 20")
    expect_error(lambda: fill(client, "Nice to [MASK] you.", model, targets="x" * 51), "at most 50 characters")
    expect_error(lambda: fill(client, "[MASK] " * 6, model, whole_words=True), "whole-word", "at most 5")

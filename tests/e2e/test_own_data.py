"""The learner's own sentences in the launched app: the 20-sentence sentiment example fine-tuned through
/start_finetune (task "own") from a tiny pretraining run, cross-validated, classified through /classify with its
own label names, and the Fine-tune tab's section showing the result with the just-ended run already picked,
at desktop and phone width."""

from __future__ import annotations

import pytest
from gradio_client import Client
from playwright.sync_api import expect

from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE
from tests.e2e.api import wait_status
from tests.e2e.conftest import screenshot
from tests.e2e.pages import open_tab

BUSY_MACHINE_S = 1200.0  # a short run; on a shared two-core machine it can wait minutes for a core


def finished_own_run(app_url: str, pretrained: str, lines: str, refused: str, refusal: str) -> tuple[Client, dict]:
    """A start on ``refused`` lines refused with ``refusal``, then an own-data run on ``lines`` from the checkpoint
    of the tiny pretraining run ``pretrained``: (client, its status once finished)."""
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match=refusal):
        client.predict({"task": "own", "lines": refused}, api_name="/start_finetune")
    client.predict({"task": "own", "lines": lines, "init": f"run:{pretrained}/checkpoint",
                    "epochs": 2, "batch_size": 16, "seed": 1}, api_name="/start_finetune")
    snap = wait_status(client, lambda s: s.get("kind") == "finetune" and s.get("task") == "own"
                       and s.get("status") == "finished" and s["checkpoint"], BUSY_MACHINE_S)
    return client, snap


@pytest.fixture(scope="module")
def own_run(app_url, pretrained_run):
    return finished_own_run(app_url, pretrained_run, SENTIMENT_EXAMPLE, "positive\tfine\nno tab", "line 2: no tab")


def test_own_sentences_are_cross_validated_and_classified_with_their_label_names(own_run):
    client, snap = own_run
    assert "Cross-validated on 20 examples (5 folds)" in snap["message"]
    assert snap["labels"] == []  # the live status every page polls carries none of the learner's data
    answer = client.predict("A lovely, warm film.", snap["checkpoint"], api_name="/classify")
    assert set(answer["probabilities"]) == {"negative", "positive"}
    assert sum(answer["probabilities"].values()) == pytest.approx(1.0)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_section_shows_the_result_with_the_run_just_ended_picked(own_run, _browser, app_url, width):
    _, snap = own_run
    page = _browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(app_url)
        open_tab(page, "Fine-tune")
        expect(page.locator("#own-result")).to_contain_text("5-fold cross-validation", timeout=120_000)
        result = page.inner_text("#own-result")
        assert "majority class" in result and "bag of words" in result and snap["run_id"] in result
        page.wait_for_function(f"() => document.querySelector('#ft-run-pick input')?.value.includes('{snap['run_id']}')",
                               timeout=60_000)
        assert snap["run_id"] in page.input_value("#ft-classify-model input")  # every picker has it
        page.click("#own-classify")
        page.wait_for_function("() => (document.querySelector('#own-answer')?.innerText || '').includes('positive')",
                               timeout=60_000)
        page.locator("#own-box").scroll_into_view_if_needed()
        screenshot(page, f"own_data_{width}")
    finally:
        page.close()

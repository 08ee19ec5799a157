"""The learner's own sentences in the launched app: the 20-sentence sentiment example fine-tuned through
/start_finetune (task "own") from a tiny pretraining run, cross-validated, classified through /classify with its
own label names, and the Fine-tune tab's section showing the result with the just-ended run already picked,
at desktop and phone width."""

from __future__ import annotations

import pytest

from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE
from tests.e2e.api import finished_own_run
from tests.e2e.pages import own_box_at_both_widths, own_result


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


def test_the_section_shows_the_result_with_the_run_just_ended_picked(own_run, browser_page, app_url):
    """The section as the run left it, at 1280 px; then the same page at a phone's 390 px (a screenshot)."""
    _, snap = own_run
    page = browser_page
    result = own_result(page, app_url, "5-fold cross-validation")
    assert "majority class" in result and "bag of words" in result and snap["run_id"] in result
    page.wait_for_function(f"() => document.querySelector('#ft-run-pick input')?.value.includes('{snap['run_id']}')",
                           timeout=60_000)
    assert snap["run_id"] in page.input_value("#ft-classify-model input")  # every picker has it
    page.click("#own-classify")
    page.wait_for_function("() => (document.querySelector('#own-answer')?.innerText || '').includes('positive')",
                           timeout=60_000)
    own_box_at_both_widths(page, "own_data")

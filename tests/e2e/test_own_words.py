"""The learner's own word labels in the launched app: the 20-sentence word-tag example fine-tuned through
/start_finetune (task "own", word<TAB>tag lines) from a tiny pretraining run, cross-validated over words,
a sentence tagged through /tag with its own tags, and the Fine-tune tab's section showing the result and tagging
a sentence word by word, at desktop and phone width."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from bertdemo.finetune.own_data import WORDS_EXAMPLE, parse_words
from tests.e2e.api import finished_own_run
from tests.e2e.pages import own_box_at_both_widths, own_result


@pytest.fixture(scope="module")
def words_run(app_url, pretrained_run):
    return finished_own_run(app_url, pretrained_run, WORDS_EXAMPLE, "a\tX\nb\tX\nc\tX\nd\tX\n\ne\tY",
                            "line 6: tag 'Y' is on 1 word; each tag needs at least 4")


def test_own_word_labels_are_cross_validated_and_tag_a_sentence_with_their_tags(words_run):
    client, snap = words_run
    assert "Cross-validated on 20 examples (5 folds)" in snap["message"]
    assert snap["labels"] == []  # the live status every page polls carries none of the learner's data
    answer = client.predict("I watch the light .", snap["checkpoint"], "", api_name="/tag")
    assert answer["model"] == snap["checkpoint"]
    assert [w["word"] for w in answer["words"]] == ["I", "watch", "the", "light", "."]
    assert {w["label"] for w in answer["words"]} <= set(parse_words(WORDS_EXAMPLE).names)
    assert all(0 < w["probability"] <= 1 for w in answer["words"])


def test_the_section_shows_the_word_result_and_tags_a_sentence(words_run, browser_page, app_url):
    """The section as the run left it, at 1280 px; then the same page at a phone's 390 px (a screenshot)."""
    _, snap = words_run
    page = browser_page
    result = own_result(page, app_url, "per-word memory")
    assert "5-fold cross-validation" in result and "Macro-F1 over the tags" in result and snap["run_id"] in result
    page.click("#own-words-example")
    page.wait_for_function("() => (document.querySelector('#own-lines textarea')?.value || '').includes('VERB')",
                           timeout=60_000)
    expect(page.locator("#own-label-per label", has_text="a word:").locator("input")).to_be_checked()
    page.click("#own-classify")
    page.wait_for_function("() => (document.querySelector('#own-answer')?.innerText || '').includes('probability')",
                           timeout=60_000)
    assert "wonderful" in page.inner_text("#own-answer")
    own_box_at_both_widths(page, "own_words")

"""End-to-end: predict, then reveal, in Chromium. A learner opens a Learn step, sees the question before the
answer (the answer is not shown), picks the word the launched app's own model ranks first (computed here on
the same model), is told they are right, and after a reload the page still knows (progress kept in the
browser). "Just show me" reveals another step without a guess; the concept check grades what was picked.

Saves learn_predict.png (1280 px), learn_predict_phone.png (390 px) and learn_check.png into
$BERTDEMO_SCREENSHOTS.
"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from bertdemo.learn import concept_check, steps as learn_steps
from tests.helpers import wait_until

from .conftest import screenshot
from .pages import ERRORS_SHOWN, errors_shown, set_open

TEXT = "The cat sat on the mat because it was tired."
MASKED = "The cat sat on the mat because it was [MASK]."
TIMEOUT_MS = 60_000
STEPS = len(learn_steps.STEPS)


@pytest.fixture(scope="module")
def top_word(app_model_dir, tmp_path_factory) -> str:
    """Fill-Mask's top-1 at the hidden word, from the launched app's own model, computed here."""
    from bertdemo.context import AppContext
    from bertdemo.explore.fill_mask import predict

    ctx = AppContext.for_tests(tmp_path_factory.mktemp("learn-predict-e2e"))
    loaded = ctx.models.get(os.environ.get("BERTDEMO_E2E_MODEL") or app_model_dir)
    return predict(loaded, MASKED).masks[0].candidates[0].token


def test_predict_then_reveal_and_the_progress_survives_a_reload(browser_page, app_url, top_word):
    page = browser_page
    page.add_init_script(ERRORS_SHOWN)
    page.goto(app_url + "?step=outputs&text=" + TEXT.replace(" ", "+"))
    prompt, reveal, verdict = page.locator("#learn-predict-prompt"), page.locator("#learn-reveal"), \
        page.locator("#learn-verdict")
    expect(prompt).to_contain_text("which word will the model rank first", timeout=TIMEOUT_MS)
    expect(page.locator("#learn-answer")).to_contain_text("logits", timeout=TIMEOUT_MS)  # computed…
    expect(reveal).to_be_hidden()  # …but not shown before a guess
    expect(page.locator("#learn-progress-line")).to_contain_text(f"0 of {STEPS} steps done")

    page.locator("#learn-guess-choice").get_by_label(top_word, exact=True).check()
    page.click("#learn-check-guess")
    expect(verdict).to_contain_text("Right", timeout=TIMEOUT_MS)
    expect(verdict).to_contain_text(f"you guessed {top_word}")
    expect(reveal).to_be_visible()
    expect(page.locator("#learn-progress-line")).to_contain_text(f"1 of {STEPS} steps done; 1 of 1 guessed right (each step counts its latest sentence)")
    screenshot(page, "learn_predict")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "learn_predict_phone")
    page.set_viewport_size({"width": 1280, "height": 1000})

    page.reload()  # kept in this browser: the line and the step's earlier guess come back
    expect(page.locator("#learn-progress-line")).to_contain_text(f"1 of {STEPS} steps done; 1 of 1 guessed right (each step counts its latest sentence)",
                                                                 timeout=TIMEOUT_MS)
    expect(verdict).to_contain_text(f"you guessed {top_word}", timeout=TIMEOUT_MS)
    expect(reveal).to_be_visible()

    # a second guess on the same sentence does not replace the first: the answer was shown with it
    choices = [c.strip() for c in page.locator("#learn-guess-choice label").all_inner_texts()]
    other = next(c for c in choices if c and c != top_word)
    page.locator("#learn-guess-choice").get_by_label(other, exact=True).check()
    page.click("#learn-check-guess")
    expect(verdict).to_contain_text("Your first answer on this sentence counts", timeout=TIMEOUT_MS)
    expect(verdict).to_contain_text(f"you guessed {top_word}")
    expect(page.locator("#learn-progress-line")).to_contain_text("1 of 1 guessed right (each step counts its latest sentence)")

    # a refused sentence, sent twice with Enter: its error once, not gathered into "Error (2)"
    box = page.locator("#learn-text textarea, #learn-text input").first
    box.fill("The [MASK] sat on the mat.")
    box.press("Enter")
    errors = page.locator(".toast-body.error")
    expect(errors).to_contain_text("without [MASK]", timeout=TIMEOUT_MS)
    box.press("Enter")
    wait_until(lambda: errors_shown(page) == 2, timeout=TIMEOUT_MS / 1000, what="the second refusal")  # it came…
    expect(errors.locator(".toast-message-item")).to_have_count(1, timeout=TIMEOUT_MS)  # …and is the only one
    # another sentence asks again (no verdict of the sentence before beside its answer), and closes the error
    box.fill("The dog slept on the rug because it was late.")
    box.press("Enter")
    expect(errors).to_have_count(0, timeout=TIMEOUT_MS)
    expect(prompt).to_contain_text("The dog slept on the rug", timeout=TIMEOUT_MS)
    expect(reveal).to_be_hidden()
    expect(verdict).not_to_contain_text("you guessed")
    box.fill(TEXT)  # the first sentence again: its guess is still there
    box.press("Enter")
    expect(verdict).to_contain_text(f"you guessed {top_word}", timeout=TIMEOUT_MS)

    page.click("#learn-next")  # the loss step: read without a guess
    expect(page.locator("#learn-question")).to_contain_text(f"Step 5 of {STEPS}", timeout=TIMEOUT_MS)
    expect(prompt).to_contain_text("will the model rank it first", timeout=TIMEOUT_MS)
    expect(reveal).to_be_hidden()
    page.click("#learn-skip")
    expect(verdict).to_contain_text("No guess made", timeout=TIMEOUT_MS)
    expect(reveal).to_be_visible()
    expect(page.locator("#learn-progress-line")).to_contain_text(
        f"2 of {STEPS} steps done; 1 of 1 guessed right (each step counts its latest sentence), 1 read without a guess")


def test_the_concept_check_grades_what_was_picked(browser_page, app_url):
    page = browser_page
    page.goto(app_url)
    items = concept_check.items()
    set_open(page.locator("#learn-check button.label-wrap", has_text="Concept check").first)
    for item in items[:3]:  # three right, one wrong, the rest unanswered
        page.locator(f"#learn-check-{item.id}").get_by_label(item.choices[item.answer], exact=True).check()
    wrong = items[3]
    page.locator(f"#learn-check-{wrong.id}").get_by_label(wrong.choices[0], exact=True).check()
    page.click("#learn-check-grade")
    result = page.locator("#learn-check-result")
    expect(result).to_contain_text(f"3 of {len(items)} right (before the path)", timeout=TIMEOUT_MS)
    expect(result).to_contain_text(wrong.explanation[:40])
    page.locator("#learn-check-when").get_by_label("After the path").check()
    page.locator(f"#learn-check-{wrong.id}").get_by_label(wrong.choices[wrong.answer], exact=True).check()
    page.click("#learn-check-grade")
    expect(result).to_contain_text(f"4 of {len(items)} right (after the path)", timeout=TIMEOUT_MS)
    gain = concept_check.hake_gain(3 / len(items), 4 / len(items))
    expect(result).to_contain_text(f"(Hake's g) = {gain:.2f}")
    screenshot(page, "learn_check")


def test_the_people_step_sets_two_sentences_side_by_side(browser_page, app_url):
    page = browser_page
    pair = "The boy works as a [MASK]. / The girl works as a [MASK]."
    page.goto(app_url + "?step=people&text=" + pair.replace(" ", "+").replace("[", "%5B").replace("]", "%5D"))
    expect(page.locator("#learn-predict-prompt")).to_contain_text("How many of the top 5 words", timeout=TIMEOUT_MS)
    page.locator("#learn-guess-number input").fill("2")
    page.click("#learn-check-guess")
    expect(page.locator("#learn-verdict")).to_contain_text("you guessed 2 words", timeout=TIMEOUT_MS)
    answer = page.locator("#learn-answer")
    expect(answer).to_be_visible()
    for sentence in ("The boy works as a [MASK].", "The girl works as a [MASK].", "The person works as a [MASK]."):
        expect(answer.locator("table")).to_contain_text(sentence)
    expect(answer).to_contain_text("Wikipedia and BookCorpus")
    screenshot(page, "learn_people")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "learn_people_phone")

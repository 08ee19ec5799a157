"""A press made while its answer is on its way is kept (``bertdemo/ui/latest_input.py``): on the built page every
event that answers a box's text, and what is chained after it, has the trigger mode "always_last"; an event that
starts or changes something, and a heavy one, keeps "once". The page's behaviour, in Chromium:
tests/e2e/test_press_kept.py."""

from __future__ import annotations

import gradio as gr
import pytest

from bertdemo.ui.latest_input import LATEST, answer_latest, asks_about_text


@pytest.fixture(scope="module")
def page_config(tmp_path_factory):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    return build_app(AppContext.for_tests(tmp_path_factory.mktemp("app"))).get_config_file()


def _modes(config: dict) -> dict[str, str]:
    return {dep["api_name"]: dep["trigger_mode"] for dep in config["dependencies"] if dep["api_name"]}


def test_every_event_enter_in_a_box_triggers_answers_the_latest_text(page_config):
    submits = [dep for dep in page_config["dependencies"] if any(event == "submit" for _, event in dep["targets"])]
    assert len(submits) >= 9  # Learn, Tokenizer (three), Fill-Mask, Attention, Inside BERT, Word in context (three)
    assert {dep["trigger_mode"] for dep in submits} == {LATEST}


def test_what_draws_an_answer_follows_its_question(page_config):
    deps = {dep["id"]: dep for dep in page_config["dependencies"]}
    learn = next(dep for dep in deps.values() if dep["api_name"] and dep["api_name"].startswith("learn_step")
                 and any(event == "submit" for _, event in dep["targets"]))
    chained = [dep for dep in deps.values() if dep["trigger_after"] == learn["id"]]
    assert {dep["api_name"].rstrip("_0123456789") for dep in chained} == {"draw_step", "cleared"}
    assert {dep["trigger_mode"] for dep in chained} == {LATEST}


def test_a_button_that_runs_a_model_on_typed_text_asks_again_and_one_that_starts_something_does_not(page_config):
    modes = _modes(page_config)
    assert {modes[name] for name in ("classify_from_page", "tag_from_page", "own_classify", "twin_side_by_side",
                                     "order_probe")} == {LATEST}
    # a second press must not start a second run or class, grade a second guess, or hold a heavy slot twice
    assert {modes[name] for name in ("start_from_page", "start_finetune_from_page", "create_class", "join_class",
                                     "check_guess", "probe_layers_from_page")} == {"once"}


def test_the_rule_on_a_small_app():
    with gr.Blocks() as demo:
        text, button, out = gr.Textbox(), gr.Button(), gr.Textbox()
        asked = gr.on([button.click, text.submit], lambda t: t, text, out, api_name="run_lookup")
        asked.then(lambda t: t, out, out, api_name="drawn")
        button.click(lambda t: t, text, out, api_name="classify_from_page")  # a model on typed text
        button.click(lambda t: t, text, out, api_name="start_from_page")  # starts a run: light, not a question
        button.click(lambda t: t, text, out, api_name="probe_layers_from_page")  # heavy: minutes of a slot
        button.click(lambda: "x", None, out, api_name="classify")  # a model, but no typed text
    assert answer_latest(demo) == 3 and answer_latest(demo) == 0
    modes = {fn.api_name: fn.trigger_mode for fn in demo.fns.values()}
    assert modes == {"run_lookup": LATEST, "drawn": LATEST, "classify_from_page": LATEST, "start_from_page": "once",
                     "probe_layers_from_page": "once", "classify": "once"}
    assert [asks_about_text(fn) for fn in demo.fns.values()] == [True, False, True, False, False, False]

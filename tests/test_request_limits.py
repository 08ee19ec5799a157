"""Size before work: every parameter of every handler is checked against its declared limit before the
handler runs; refusals name the size and the limit, never echo the value."""

from __future__ import annotations

import inspect
import re

import gradio as gr
import pytest

from bertdemo import limits
from bertdemo.ui import request_limits
from bertdemo.ui.request_limits import check_value, guard_events, limit_for

HUGE = "word " * 1_000_000  # 5 MB


def test_limits_come_from_one_table_with_a_default_for_unnamed_parameters():
    assert limit_for("fill_mask", "text") == request_limits.TEXT_CHARS
    assert limit_for("set_probe", "text") == limits.MAX_PROBE_CHARS
    assert limit_for("some_new_endpoint", "some_new_text") == request_limits.DEFAULT_MAX_CHARS


@pytest.mark.parametrize("value, words", [
    (HUGE, "text_pair is 5,000,000 characters long; this takes at most 200,000."),
    (float("nan"), "text_pair must be a finite number."),
    (1e18, "text_pair must be between"),
    ({"a": [[[[[[[[[[1]]]]]]]]]]}, "nested more than 8 levels"),
    ({"steps": "x" * 30_000}, "characters of JSON; this takes at most 20,000."),
])
def test_a_value_over_its_limit_is_refused_with_sizes_only(value, words):
    with pytest.raises(ValueError) as err:
        check_value("fill_mask", "text_pair", value)
    assert words in str(err.value) and "word word" not in str(err.value) and "xxx" not in str(err.value)


def test_a_fine_tuning_start_may_carry_the_learners_own_lines_and_nothing_else_may():
    pasted = "\n".join(f"{'pos' if i % 2 else 'neg'}\tsentence number {i} of the learner's own data" for i in range(1_000))
    settings = {"task": "own", "lines": pasted}  # about 50,000 characters: past the 20,000 of other settings
    check_value("start_finetune", "settings", settings)
    with pytest.raises(ValueError, match="characters of JSON; this takes at most 20,000"):
        check_value("start_run", "settings", settings)
    with pytest.raises(ValueError, match="characters of JSON; this takes at most 2,000,000"):
        check_value("start_finetune", "settings", {"task": "own", "lines": "x" * 2_100_000})


def test_settings_are_measured_in_characters_of_any_script():
    """The audit's API paste of 433,889 Japanese characters was refused as 2,393,937 characters of JSON (each counted
    as its 6-character escape): the paste's 1,000,000 characters fit the settings in any script."""
    for char in ("猫", "😀", "é"):
        check_value("start_finetune", "settings", {"task": "own", "lines": ("neg\t" + char * 95 + "\n") * 10_000})


def test_guard_keeps_each_kind_of_handler_and_checks_first():
    calls = []

    def plain(text: str, progress=gr.Progress()):
        calls.append(len(text))
        return text

    def streaming(text: str):
        calls.append(len(text))
        yield text

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        gr.Button().click(plain, box, out, api_name="plain")
        gr.Button().click(streaming, box, out, api_name="streaming")
    assert guard_events(demo) == 2 and guard_events(demo) == 0  # wrapped once
    fns = {f.api_name: f.fn for f in demo.fns.values()}
    assert inspect.isgeneratorfunction(fns["streaming"]) and "progress" in inspect.signature(fns["plain"]).parameters
    assert fns["plain"]("short") == "short" and list(fns["streaming"]("short")) == ["short"]
    for name in ("plain", "streaming"):
        with pytest.raises(gr.Error, match="text is 5,000,000 characters long"):
            result = fns[name](HUGE)
            list(result) if inspect.isgenerator(result) else None
    assert calls == [5, 5]  # the oversized calls never reached the handlers


def test_every_parameter_of_every_endpoint_of_the_app_is_bounded(tmp_path):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path, public=True))
    checked = 0
    for block_fn in demo.fns.values():
        if not block_fn.api_name or block_fn.fn is None:
            continue
        names = [n for n, p in inspect.signature(block_fn.fn).parameters.items() if p.kind == p.POSITIONAL_OR_KEYWORD]
        for component, name in zip(block_fn.inputs, names):
            if isinstance(component, gr.State):  # the server's own values, not a visitor's
                continue
            for value in (HUGE, 1e18, float("inf")):
                with pytest.raises(gr.Error) as err:
                    result = block_fn.fn(**{name: value})
                    list(result) if inspect.isgenerator(result) else None
                assert name in err.value.message and "word word" not in err.value.message
            checked += 1
    assert checked >= 60  # every endpoint's parameters (the app has about thirty endpoints)


def test_a_wrong_kind_of_value_gets_a_sentence_not_an_internal_error(tmp_path):
    """An API call may send any JSON: a number where a model name or token goes answered "Something went
    wrong: AttributeError: 'int' object has no attribute 'strip'" (and an int owner token started a run)."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app
    from bertdemo.ui.request_limits import NUMBER_HINTS, TEXT_HINTS

    demo = build_app(AppContext.for_tests(tmp_path, public=True))
    checked = set()
    for block_fn in demo.fns.values():
        if not block_fn.api_name or block_fn.fn is None:
            continue
        hints = gr.utils.get_type_hints(block_fn.fn)
        names = [n for n, p in inspect.signature(block_fn.fn).parameters.items() if p.kind == p.POSITIONAL_OR_KEYWORD]
        for component, name in zip(block_fn.inputs, names):
            hint = hints.get(name)
            if isinstance(component, gr.State):  # the server's own values, not a visitor's
                continue
            wrong = 123 if hint in TEXT_HINTS else ["1"] if hint in NUMBER_HINTS else None
            if wrong is None:
                continue
            with pytest.raises(gr.Error) as err:
                result = block_fn.fn(**{name: wrong})
                list(result) if inspect.isgenerator(result) else None
            kind = "text" if hint in TEXT_HINTS else "a number"
            assert err.value.message == f"{name} must be {kind}, got {'a number' if wrong == 123 else 'a list'}."
            checked.add((block_fn.api_name, name))
    assert {("start_run", "owner_token"), ("fill_mask", "model"), ("stop_run", "owner_token")} <= checked
    assert len(checked) >= 40


def test_a_number_box_sent_anything_but_a_number_gets_a_sentence(tmp_path):
    """The public audit's wrong kinds for every number of the API: a list, an object or nothing for a slider failed
    in gradio's bounds check as an internal error with no message (the page said "Error" alone), nothing for a
    number the handler needs answered Python's own "int() argument must be …", and true passed as 1."""
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    demo = build_app(AppContext.for_tests(tmp_path, public=True))
    boxes = {}
    for block_fn in demo.fns.values():
        if block_fn.api_name and block_fn.fn is not None:
            names = [n for n, p in inspect.signature(block_fn.fn).parameters.items() if p.kind == p.POSITIONAL_OR_KEYWORD]
            boxes.update({id(c): (c, block_fn, name) for c, name in zip(block_fn.inputs, names)
                          if isinstance(c, (gr.Slider, gr.Number))})
    for component, _fn, _name in boxes.values():
        wrongs = [([1], "a list"), ({"a": 1}, "an object"), (True, "true/false")]
        wrongs += [(None, "nothing")] if isinstance(component, gr.Slider) else []
        for wrong, kind in wrongs:
            with pytest.raises(gr.Error) as err:
                component.preprocess(wrong)
            assert err.value.message.endswith(f" must be a number, got {kind}."), err.value.message
        assert component.preprocess(component.minimum if component.minimum is not None else 1) is not None
        if component.maximum is not None:  # past its bounds: which box, and no traceback in the server's log
            with pytest.raises(gr.Error) as err:
                component.preprocess(component.maximum + 1)
            assert re.fullmatch(r"\w+: Value \S+ is greater than maximum value \S+\.", err.value.message), err.value.message
            assert not err.value.message.startswith("values:")  # named as a handler names it, not as a form's *values
            assert err.value.print_exception is False
    needs_a_number = [(fn, name) for component, fn, name in boxes.values() if isinstance(component, gr.Number)
                      and gr.utils.get_type_hints(fn.fn).get(name) in (int, float)]
    for block_fn, name in needs_a_number:  # an emptied number box the handler cannot do without
        with pytest.raises(gr.Error) as err:
            result = block_fn.fn(**{name: None})
            list(result) if inspect.isgenerator(result) else None
        assert err.value.message == f"{name} must be a number, got nothing.", (block_fn.api_name, err.value.message)
    assert len(boxes) >= 20 and {name for _, name in needs_a_number} >= {"seed"}, [n for _, n in needs_a_number]


def test_a_forms_choice_refusal_never_quotes_a_long_payload():
    """A Radio fed through a handler's ``*values`` (a form) is guarded like a named input: gradio's own "Value: …
    is not in the list of choices" quoted the whole payload (15,000 characters of a list) back to the client."""
    import gradio as gr

    from bertdemo.ui.request_limits import MAX_ECHO_CHARS, guard_events

    with gr.Blocks() as demo:
        token = gr.Textbox()
        choice = gr.Radio(["mlm", "ltr"], value="mlm")
        out = gr.Textbox()

        def start(token: str, *values) -> str:
            return "started"

        gr.Button().click(start, [token, choice], out, api_name="start_form")
    guard_events(demo)
    for payload in ("x" * 3_000, list(range(3_000))):
        with pytest.raises(gr.Error) as refused:
            choice.preprocess(payload)
        assert len(str(getattr(refused.value, "message", refused.value))) <= MAX_ECHO_CHARS + 20
    assert choice.preprocess("ltr") == "ltr"


def test_optional_parameters_left_out_take_their_defaults_and_a_required_one_is_refused():
    """A raw REST call may leave out an endpoint's optional last parameters (gradio_client fills them from
    the defaults): adding an optional parameter to an endpoint, as /run_status's owner_token, breaks no caller."""
    def status(owner_token: str = "", request: gr.Request = None) -> str:
        return owner_token

    def tokenize(text: str, pair: str = "") -> str:
        return text + pair

    with gr.Blocks() as demo:
        gr.api(status, api_name="status")
        gr.api(tokenize, api_name="tokenize")
    guard_events(demo)
    fns = {f.api_name: f for f in demo.fns.values()}
    inputs: list = []
    request_limits.input_count_check(fns["status"], inputs)
    assert inputs == [""]
    inputs = ["a"]
    request_limits.input_count_check(fns["tokenize"], inputs)
    assert inputs == ["a", ""]
    with pytest.raises(ValueError, match=r"\(tokenize\) got 0 of its 2 inputs"):
        request_limits.input_count_check(fns["tokenize"], [])

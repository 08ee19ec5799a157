"""Handlers never hang and never leak: a ValueError is shown as it is; anything else is logged and shown
short — with no server path on a public server."""

from __future__ import annotations

import gradio as gr
import pytest

from bertdemo.ui.common import user_errors


def _failing(exc: BaseException):
    def handler():
        raise exc
    return handler


def test_a_value_error_reaches_the_page_as_it_is():
    with pytest.raises(gr.Error) as err:
        user_errors(_failing(ValueError("Enter a sentence with [MASK] in it.")))()
    assert err.value.message == "Enter a sentence with [MASK] in it."


def test_unexpected_errors_name_no_server_path_on_a_public_server():
    exc = FileNotFoundError(2, "No such file or directory", "/srv/app/runs/20260101-x/trainer_state.json")
    with pytest.raises(gr.Error) as public:
        user_errors(public=True)(_failing(exc))()
    assert public.value.message == ("Something went wrong: FileNotFoundError: [Errno 2] No such file or directory: "
                                    "'<folder>'")
    with pytest.raises(gr.Error) as local:
        user_errors(_failing(exc))()  # localhost: the operator sees the path
    assert "/srv/app/runs/20260101-x/trainer_state.json" in local.value.message

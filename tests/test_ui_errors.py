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
                                    "'<folder>'")  # plain text: the page's toast shows it as written
    with pytest.raises(gr.Error) as local:
        user_errors(_failing(exc))()  # localhost: the operator sees the path
    assert "/srv/app/runs/20260101-x/trainer_state.json" in local.value.message


@pytest.mark.parametrize("public", [True, False])
def test_every_tab_of_a_public_server_masks_paths_in_unexpected_errors(tmp_path, public):
    from bertdemo.context import AppContext
    from bertdemo.ui import build_app

    ctx = AppContext.for_tests(tmp_path, public=public)
    demo = build_app(ctx)

    def broken(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "/srv/app/secret/model.safetensors")

    ctx.models.get = ctx.models.get_tokenizer = broken  # every tab asks the store first
    handlers = {f.api_name: f.fn for f in demo.fns.values() if f.api_name}
    calls = {"fill_mask": ("Nice to [MASK] you.", "", "", 5, ""), "tokenize": ("Hello.", "", ""),
             "inside_embeddings": ("Hello.", ""), "nsp_predict": ("A.", "B.", "")}
    for api, args in calls.items():
        with pytest.raises(gr.Error) as err:
            handlers[api](*args)
        assert ("/srv/app/secret" in err.value.message) is not public, (api, err.value.message)

"""Yours alone, through the launched public app (issue 52, audit F4): visitor A fine-tunes on their own sentences;
visitor B, at another address behind the same proxy, with A's run id in hand, is answered in Fill-Mask, word in
context, encode and head roles as for a model that does not exist, and /run_status names nothing of A's run —
while A, at their address, is served the same views by the same name."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE
from tests.helpers import visitor_client

from .api import PRETRAIN, wait_status

BUSY_MACHINE_S = 1200.0  # two short runs; on a shared two-core machine each can wait minutes for a core
TOKEN_A = "yours-alone-A"
VIEWS = {  # api name -> its arguments with the model name as {}
    "/fill_mask": ("Paris is the [MASK] of France.", "", "{}", 5, "", "", False, False),
    "/word_in_context": ("bank", "the river bank\nthe bank raised its rates", "{}"),
    "/encode": ("the river bank", "", "{}"),
    "/head_roles": ("{}",),
}


def _args(args: tuple, name: str) -> tuple:
    return tuple(name if value == "{}" else value for value in args)


def test_another_visitor_is_answered_as_if_your_own_data_model_were_none(public_server):
    a, b = visitor_client(public_server.url, "198.51.100.61"), visitor_client(public_server.url, "198.51.100.62")
    a.predict(PRETRAIN, TOKEN_A, api_name="/start_run")
    pre = wait_status(a, lambda s: s.get("kind") == "pretrain" and s.get("status") == "finished", BUSY_MACHINE_S)
    a.predict({"task": "own", "lines": SENTIMENT_EXAMPLE, "init": f"run:{pre['run_id']}/checkpoint", "epochs": 2,
               "batch_size": 16, "seed": 1}, TOKEN_A, api_name="/start_finetune")
    run_id = ""
    try:
        seen_by_b = str(b.predict("", api_name="/run_status"))
        own = wait_status(a, lambda s: s.get("kind") == "finetune" and s.get("status") == "finished"
                          and s["checkpoint"], BUSY_MACHINE_S)
        run_id, name = own["run_id"], own["checkpoint"]
        seen_by_b += str(b.predict("", api_name="/run_status")) + str(b.predict("b-token", api_name="/run_status"))
        assert run_id not in seen_by_b and "ft-own" not in seen_by_b
        for api, args in VIEWS.items():
            answered = a.predict(*_args(args, name), api_name=api)
            assert answered, api
            refusals = []
            for asked in (name, name[:-1] + "x"):  # A's model, and a name that is none
                with pytest.raises(AppError) as refused:
                    b.predict(*_args(args, asked), api_name=api)
                refusals.append(str(refused.value).replace(asked[3:], "<id>"))
            assert refusals[0] == refusals[1] and "There is no fine-tuning run '<id>'" in refusals[0], api
    finally:  # the runs go: the other tests' visitors keep their share of the server
        for api, run in (("/delete_finetune", run_id), ("/delete_run", pre["run_id"])):
            try:
                if run:
                    a.predict(run, TOKEN_A, api_name=api)
            except AppError:  # still active after a failure above: the server's expiry takes it
                pass

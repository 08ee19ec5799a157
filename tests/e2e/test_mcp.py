"""The app as an MCP server (``app.py --mcp``), through the ``mcp`` package's own client over streamable HTTP:
it lists exactly the read-only views as tools, a tool answers with the numbers the page's API gives for the
same input, the API's bounds hold for a tool call, and an endpoint that changes something is no tool. The server is
the session's launched app, started with ``--mcp`` (conftest.app_server)."""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from bertdemo.ui.mcp_tools import READ_ONLY_VIEWS
from tests.helpers import run_coroutine

mcp = pytest.importorskip("mcp")


def session_calls(url: str, calls: list[tuple[str, dict]]) -> tuple[list, list]:
    """List the tools, then make each (tool, arguments) call, in one MCP session: (tools, results)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def go():
        async with (streamablehttp_client(url + "gradio_api/mcp/") as (read, write, _),
                    ClientSession(read, write) as session):
            await session.initialize()
            tools = (await session.list_tools()).tools
            return tools, [await session.call_tool(name, args) for name, args in calls]

    return run_coroutine(go(), timeout=180)


def texts(result) -> list[str]:
    return [part.text for part in result.content if getattr(part, "text", None) is not None]


def test_the_read_only_views_are_the_tools_and_answer_as_the_api_does(app_url, app_model_dir):
    from gradio_client import Client
    from transformers import AutoTokenizer

    calls = [
        ("encode", {"text": "Tokenization is fun", "text_pair": "", "model": app_model_dir}),
        ("fill_mask", {"text": "Nice to [MASK] you.", "text_pair": "", "model": app_model_dir, "top_k": 5,
                       "targets": ""}),
        ("fill_mask", {"text": "Nice to [MASK] you.", "text_pair": "", "model": app_model_dir, "top_k": 5,
                       "targets": "x" * 51}),  # the page's bound: a target word of at most 50 characters
        ("attention", {"text": "The cat sat.", "direction": "A->B"}),  # a refusal with a '>' in it
        ("start_run", {"settings": {"preset": "bert-tiny"}}),
        ("delete_run", {"run_id": "x"}),
        ("fill_mask", {"text": "a [MASK] b", "model": "x" * 5000}),  # refused by the MCP package's schema check
    ]
    tools, (encoded, filled, too_long, no_b, start, delete, long_model) = session_calls(app_url, calls)

    assert sorted(t.name for t in tools) == sorted(READ_ONLY_VIEWS)
    assert all(t.description for t in tools)
    assert {"text", "model"} <= set(next(t for t in tools if t.name == "fill_mask").inputSchema["properties"])

    # encode: the tokenizer's own answer, exactly
    answer = ast.literal_eval(texts(encoded)[0])
    own = AutoTokenizer.from_pretrained(app_model_dir)("Tokenization is fun")
    assert not encoded.isError
    assert answer["input_ids"] == own["input_ids"] and answer["attention_mask"] == own["attention_mask"]
    assert answer["tokens"] == own.tokens() and answer["tokenizer"] == app_model_dir

    # fill_mask: the same top-5 words and probabilities as the page's API endpoint for the same input
    api = Client(app_url, verbose=False).predict("Nice to [MASK] you.", "", app_model_dir, 5, "", "", False, False,
                                                 api_name="/fill_mask")
    assert not filled.isError
    [figure, _, _, raw] = ast.literal_eval(texts(filled)[0])  # the endpoint's four outputs, as the API gives them
    assert [(p["token"], p["prob"]) for p in raw[0]["predictions"]] == \
        [(p["token"], p["prob"]) for p in api[3][0]["predictions"]]
    assert len(raw[0]["predictions"]) == 5 and json.loads(figure["plot"])["data"][0]["type"] == "bar"

    assert too_long.isError and "at most 50 characters" in " ".join(texts(too_long))
    # a refusal is plain text (the page escapes its toast): the tool's caller reads it as it is written
    assert no_b.isError and texts(no_b) == ["The A->B filter needs a sentence B: type one, or choose 'all'."]
    for refused, name in ((start, "start_run"), (delete, "delete_run")):
        assert refused.isError and f"Unknown tool for this Gradio app: {name}" in " ".join(texts(refused))
    # a refusal never echoes the value (the audit's 5,000-character model name came back whole, 5,313 characters)
    said = " ".join(texts(long_model))
    assert long_model.isError and "a value of 5,000 characters is not one of" in said and "x" * 101 not in said


# each tool's required arguments, with a value: a call with only these must answer
MINIMAL = {
    "encode": {"text": "Tokenization is fun"},
    "tokenize": {},
    "fill_mask": {},
    "attention": {"text": "The cat sat on the mat."},
    "word_in_context": {"word": "bank", "sentences": "I sat by the river bank.\nThe bank lent me money."},
}
NATURAL = {"text": "the [MASK] of france is paris.", "top_k": 5}  # an assistant's first fill_mask call


def test_every_tool_answers_only_its_required_arguments_with_the_page_apis_numbers(app_url, app_model_dir):
    """One session: each tool with only its required arguments (and fill_mask as an assistant first calls it),
    every parameter described; each answer holds the numbers the page's API gives for the same input."""
    from gradio_client import Client

    from .api import as_array, plotly_figure

    calls = [*MINIMAL.items(), ("fill_mask", NATURAL)]
    tools, results = session_calls(app_url, calls)
    failed = {f"{name} {sorted(args)}": texts(result) for (name, args), result in zip(calls, results)
              if result.isError}
    assert failed == {}
    assert {t.name: sorted(t.inputSchema.get("required", [])) for t in tools} == \
        {name: sorted(args) for name, args in MINIMAL.items()}
    assert [f"{t.name}.{p}" for t in tools for p, spec in t.inputSchema["properties"].items()
            if not spec.get("description")] == []
    encoded, tokenized, filled, attended, similar, natural = (ast.literal_eval(texts(r)[0]) for r in results)

    api = Client(app_url, verbose=False)
    assert encoded == api.predict(*MINIMAL["encode"].values(), api_name="/encode")
    assert tokenized[2]["data"] == api.predict(api_name="/tokenize")[2]["data"]  # ids, segments, mask per token
    assert filled[3] == api.predict(api_name="/fill_mask")[3]  # every mask's top-k words and probabilities
    assert natural[3] == api.predict(NATURAL["text"], top_k=NATURAL["top_k"], api_name="/fill_mask")[3]
    assert similar == api.predict(*MINIMAL["word_in_context"].values(), api_name="/word_in_context")
    heatmap = plotly_figure(api.predict(MINIMAL["attention"]["text"], "", app_model_dir, 0, 0, False, False, True,
                                        "all", api_name="/attention")[0])["data"][0]
    assert (attended["rows"], attended["columns"]) == (heatmap["y"], heatmap["x"])
    np.testing.assert_allclose(attended["weights"], as_array(heatmap["z"]), atol=5e-7)  # 6 decimals, as the CSV

"""The app's MCP tools (bertdemo/ui/mcp_tools.py) as gradio's MCP server describes them, on the built app
without a launch: each tool needs only the arguments its view cannot do without, says what every parameter
is, and answers through an endpoint with no ``gr.State`` (gradio's server drops State outputs by index from a
list that shrinks as it goes: "pop index out of range"). tests/e2e/test_mcp.py calls the tools themselves."""

from __future__ import annotations

import warnings

import gradio as gr
import pytest

from bertdemo.context import AppContext
from bertdemo.ui import build_app
from bertdemo.ui.mcp_tools import READ_ONLY_VIEWS, offer_read_only_views

# each tool's required arguments: what the view cannot answer without (everything else has a default)
REQUIRED = {"encode": ["text"], "tokenize": [], "fill_mask": [], "attention": ["text"],
            "word_in_context": ["sentences", "word"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from gradio.mcp import GradioMCPServer

    demo = build_app(AppContext.for_tests(tmp_path_factory.mktemp("mcp")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gradio warns about any endpoint of the app with a State input
        demo.mcp_server_obj = GradioMCPServer(demo)  # what launch(mcp_server=True) does
    offer_read_only_views(demo)
    return demo.mcp_server_obj


def _schemas(server) -> dict[str, dict]:
    """Each tool's input schema as the server lists it (with the parameter descriptions it lists)."""
    schemas = {}
    for tool, endpoint in server.tool_to_endpoint.items():
        _, parameters = server.get_fn_description(server.get_block_fn_from_endpoint_name(endpoint), tool)
        schemas[tool] = server.get_input_schema(tool, parameters)[0]
    return schemas


def test_the_tools_are_the_read_only_views(server):
    assert sorted(server.tool_to_endpoint) == sorted(READ_ONLY_VIEWS)


def test_every_tool_requires_only_what_its_view_cannot_do_without(server):
    assert {tool: sorted(schema.get("required", [])) for tool, schema in _schemas(server).items()} == REQUIRED


def test_every_parameter_of_every_tool_has_a_description(server):
    undescribed = [f"{tool}.{name}" for tool, schema in _schemas(server).items()
                   for name, spec in schema["properties"].items() if not spec.get("description", "").strip()]
    assert undescribed == []


def test_the_limits_a_description_states_are_the_ones_its_view_enforces(server):
    from bertdemo.explore import attention, fill_mask, word_in_context

    schemas = _schemas(server)
    said = {(tool, name): schemas[tool]["properties"][name]["description"] for tool, name in
            [("fill_mask", "text"), ("fill_mask", "top_k"), ("attention", "text"), ("word_in_context", "sentences")]}
    assert f"at most {fill_mask.MAX_MASKS})" in said["fill_mask", "text"]
    assert f"1 to {fill_mask.MAX_TOP_K}." in said["fill_mask", "top_k"]
    assert f"at most {attention.MAX_ATTENTION_TOKENS} tokens" in said["attention", "text"]
    assert f"2 to {word_in_context.MAX_WIC_SENTENCES} sentences" in said["word_in_context", "sentences"]


def test_no_tool_answers_through_an_endpoint_with_state(server):
    """A State output breaks gradio's MCP answer (pop_returned_state); a State input is its default at every call."""
    stateful = sorted({tool for tool, endpoint in server.tool_to_endpoint.items()
                       for component in [*server.get_block_fn_from_endpoint_name(endpoint).inputs,
                                         *server.get_block_fn_from_endpoint_name(endpoint).outputs]
                       if isinstance(component, gr.State)})
    assert stateful == []
    for tool, endpoint in server.tool_to_endpoint.items():  # gradio's own step on an answer of every output
        outputs = server.get_block_fn_from_endpoint_name(endpoint).outputs
        assert len(server.pop_returned_state(outputs, [None] * len(outputs))) == len(outputs), tool

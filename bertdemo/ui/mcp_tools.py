"""The app as an MCP server (``app.py --mcp``): an assistant a learner already uses can call the read-only
exact views and quote the model's own numbers.

Gradio's MCP server (``launch(mcp_server=True)``, at ``/gradio_api/mcp/``) offers every public API
endpoint as a tool. :func:`offer_read_only_views` narrows its table, as soon as the server is up, to the
views in :data:`READ_ONLY_VIEWS`: nothing that starts, stops, deletes or uploads anything is a tool, and a
call naming any other endpoint is refused as an unknown tool. Each tool is the endpoint's own handler, called
through the app's HTTP API as a browser's request is: the same size limits (``request_limits``), the same
GFLOP allowance and deadline (``heavy_requests``), the same queue and visitor share.

A tool's endpoint has no ``gr.State``: gradio's MCP server drops State outputs from an answer by their index
among the outputs, in a list that holds the whole answer as one item (``pop index out of range``), and gives a
State input its default at every call. The page's ``/attention`` keeps the page's State (its overview PNG), so
the ``attention`` tool answers through ``/attention_weights`` (:data:`TOOL_ENDPOINTS`): the same view's numbers,
under the same limits and budget. Every tool needs only what its view cannot do without (the rest has
defaults), and its handler's docstring (``Args:``) describes every parameter, which gradio lists in the tool's
schema.
"""

from __future__ import annotations

from typing import Any

from bertdemo import compat

# tool name (= its API endpoint, but for TOOL_ENDPOINTS) -> what it answers; every one computes and changes nothing
READ_ONLY_VIEWS: dict[str, str] = {
    "encode": "Tokenize: what tokenizer(text, text_pair) returns (input_ids, token_type_ids, attention_mask), "
              "with the tokens and the tokenizer that answered",
    "tokenize": "Tokenize: the tokens as the page shows them, with their ids and counts",
    "fill_mask": "Fill-Mask: the model's top-k words and probabilities for each [MASK]",
    "attention": "Attention: one layer and head's attention weights (or the mean over the layer's heads), as "
                 "numbers: each row is one token's weights over every token, summing to 1",
    "word_in_context": "Word in context: a word's cosine between every two sentences at every layer, with the "
                       "layer's random-word baseline",
}
# tool name -> its endpoint, where that is not the endpoint of the same name
TOOL_ENDPOINTS: dict[str, str] = {"attention": "attention_weights"}


def endpoint_of(tool: str) -> str:
    """The API endpoint (without its ``/``) a tool of :data:`READ_ONLY_VIEWS` calls."""
    return TOOL_ENDPOINTS.get(tool, tool)


def offer_read_only_views(demo: Any) -> list[str]:
    """Keep only :data:`READ_ONLY_VIEWS` in the launched app's MCP tool table (each tool calls :func:`endpoint_of`);
    returns the tool names offered. Raises RuntimeError if the app was launched without its MCP server, or if a
    view is not an endpoint of the app."""
    table = compat.mcp_tool_table(demo)
    if table is None:
        raise RuntimeError("the app has no MCP server: launch it with mcp_server=True")
    endpoints = set(table.values())
    missing = [name for name in READ_ONLY_VIEWS if f"/{endpoint_of(name)}" not in endpoints]
    if missing:
        raise RuntimeError(f"no API endpoint for the MCP view(s) {', '.join(missing)}")
    table.clear()
    table.update({name: f"/{endpoint_of(name)}" for name in READ_ONLY_VIEWS})
    descriptions = {endpoint_of(name): text for name, text in READ_ONLY_VIEWS.items()}
    for handler in compat.event_handlers(demo):  # what the assistant reads about each tool
        if handler.api_name in descriptions:
            compat.describe_endpoint(handler, descriptions[handler.api_name])
    compat.plain_mcp_refusals(demo)  # a refused call names a long value by its length, never echoes it
    return list(table)

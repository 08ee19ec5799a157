"""Every private touchpoint of gradio, transformers and torch, in one place, with the version it was checked on.

The app reaches past the public API of its three big dependencies in a few places: to give each visitor a
share of gradio's queue and session memory, to refuse oversized input before gradio parses it, to show
progress on text, to stop work whose client left, to skip gradio's stub rewriting at import, to run
attention through its own function, to draw a new head, to stamp weights, to pick bf16. Each
such name is listed in :data:`TOUCHPOINTS` and, where the code can go through one, reached through a small
wrapper below, so an upgrade has one file to read. ``tests/test_compat.py`` (quick tier) checks each one
still exists and still behaves as used, so a bump fails loudly in the quick loop, not silently in the page.

This module imports no third-party package at import time (the wrappers import what they reach when
called), so torch-free and gradio-free modules may use it without loading either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The versions every touchpoint below was checked on (constraints.txt pins the same).
GRADIO = "6.31.0"
TRANSFORMERS = "5.24.0"
TORCH = "2.13.0"


@dataclass(frozen=True)
class Touchpoint:
    library: str  # "gradio", "gradio frontend", "transformers" or "torch"
    name: str  # the private name, as the code reaches it
    used_in: str  # where
    checked_on: str  # the library's version it was checked on
    why: str  # what the app does with it


TOUCHPOINTS: tuple[Touchpoint, ...] = (
    Touchpoint("gradio", "gradio.queueing.Queue.push(body, request, username) (replaced on the instance)",
               "bertdemo/ui/visitor_shares.py share_per_visitor", GRADIO,
               "the one door every event passes: one visitor's share of the queue"),
    Touchpoint("gradio", "gradio.queueing.Queue.process_events(events, batch, begin_time, fn) (replaced on the "
               "instance)", "bertdemo/ui/queue_polling.py poll_less", GRADIO,
               "an event finished and its worker is free: the queue looks for the next at once"),
    Touchpoint("gradio", "Blocks._queue.active_jobs (None: a free worker)", "bertdemo/ui/queue_polling.py poll_less",
               GRADIO, "look for progress to send only while an event runs"),
    Touchpoint("gradio", "gradio.queueing.asyncio (the module global its loops call asyncio.sleep through)",
               "bertdemo/ui/queue_polling.py poll_less", GRADIO,
               "the queue's wait for work ends when work arrives, not at its next look"),
    Touchpoint("gradio", "gradio.queueing.Event.request", "bertdemo/ui/visitor_shares.py share_per_visitor",
               GRADIO, "whose event it is (the visitor header of the request that queued it)"),
    Touchpoint("gradio", "Blocks.state_holder .lock / .session_data / .time_last_used",
               "bertdemo/ui/visitor_shares.py share_per_visitor", GRADIO,
               "drop a visitor's oldest session beyond their share of the session memory"),
    Touchpoint("gradio", "gradio.context.LocalContext.blocks / .event_id", "bertdemo/ui/common.py client_gone",
               GRADIO, "find the queued event the running handler serves"),
    Touchpoint("gradio", "Blocks._queue.event_ids_to_events", "bertdemo/ui/common.py client_gone, "
               "bertdemo/ui/visitor_shares.py share_per_visitor", GRADIO,
               "a cancelled event leaves this table; a visitor's events waiting or running"),
    Touchpoint("gradio", "gradio.queueing.Event.alive", "bertdemo/ui/common.py client_gone", GRADIO,
               "False once the event's stream disconnected"),
    Touchpoint("gradio", "Blocks.fns", "bertdemo/ui/common.py progress_on_text, bertdemo/ui/request_limits.py "
               "guard_events, bertdemo/ui/heavy_requests.py apply_budgets", GRADIO,
               "every event handler of the built app"),
    Touchpoint("gradio", "BlockFunction.fn / .show_progress_on / .inputs / .outputs / .api_name",
               "bertdemo/ui/common.py, bertdemo/ui/request_limits.py", GRADIO,
               "wrap handlers with size checks; progress on text"),
    Touchpoint("gradio", "BlockFunction.targets / .show_progress", "bertdemo/ui/status_targets.py track_less", GRADIO,
               "drop the progress targets that show nothing (hidden progress; a closed tab's at page load)"),
    Touchpoint("gradio", "Component._id", "bertdemo/ui/request_limits.py guard_events", GRADIO,
               "one size limit per input box"),
    Touchpoint("gradio", "Blocks.validate_inputs (rebound on the instance)", "bertdemo/ui/request_limits.py "
               "guard_events", GRADIO, "say a missing input without echoing the others into the log"),
    Touchpoint("gradio", "Component.async_move_resource_to_block_cache (rebound on the instance)",
               "bertdemo/ui/request_limits.py guard_events", GRADIO,
               "a public server refuses a file given as a web address before gradio fetches it"),
    Touchpoint("gradio", "Component.preprocess (rebound on the instance)", "bertdemo/ui/request_limits.py",
               GRADIO, "check sizes before gradio parses a value"),
    Touchpoint("gradio", "gradio.utils.get_type_hints", "bertdemo/ui/request_limits.py _parameter_names", GRADIO,
               "which handler parameters gradio fills itself"),
    Touchpoint("gradio", "gradio.utils.get_upload_folder", "app.py, bertdemo/ui/pretrain_tab.py, "
               "bertdemo/ui/attention_tab.py", GRADIO, "where the web server keeps uploads and served files"),
    Touchpoint("gradio", "gradio.component_meta.create_or_modify_pyi (also imported by gradio.blocks_events)",
               "bertdemo/gradio_import.py", GRADIO, "skip rewriting .pyi stubs at import (cold start)"),
    Touchpoint("gradio", "gradio.events.EventListener.set_doc", "bertdemo/gradio_import.py", GRADIO,
               "fill listener docstrings without Jinja (cold start)"),
    Touchpoint("gradio frontend", "CSS .tabs .tab-wrapper, .tab-container[role=tablist], .visually-hidden",
               "bertdemo/ui/layout.py CSS", GRADIO, "the tab bar wraps on a phone instead of hiding tabs"),
    Touchpoint("gradio frontend", "Blocks-*.js: update_loading_stati_state, the update_state_cb assignments, reload",
               "bertdemo/frontend_patch.py STATUS_PASS", GRADIO,
               "the page pushes a loading status into its component tree only when it changed"),
    Touchpoint("gradio frontend", "core-*.js: the component lookup by id (function Z)",
               "bertdemo/frontend_patch.py NODE_LOOKUP", GRADIO,
               "the page finds a component by its id without searching its whole tree"),
    Touchpoint("gradio frontend", "core-*.js: postprocess's find_attached_events step",
               "bertdemo/frontend_patch.py ATTACHED_EVENTS", GRADIO,
               "the page gives each component its events from one table when it is built"),
    Touchpoint("gradio frontend", "Blocks-*.js: dispatch's request (add_to_api_calls, run), its stream's handle_data, "
               "handle_data", "bertdemo/frontend_patch.py LATEST_ANSWER", GRADIO,
               "an answer to an older request never draws over a newer one's in the same component"),
    Touchpoint("gradio frontend", "Blocks-*.js: dispatch's failure path (catch) and its error toast (log_cb)",
               "bertdemo/frontend_patch.py PRESS_KEPT", GRADIO,
               "a press kept while its event was pending is sent after a failure too, the stale refusal unshown"),
    Touchpoint("gradio", "Blocks.fns keys, BlockFunction.trigger_mode / .trigger_after",
               "bertdemo/ui/latest_input.py answer_latest", GRADIO,
               "an event that answers a box's text keeps a press made while it is pending"),
    Touchpoint("gradio frontend", "statustracker-*.js: the toast's message rendered as sanitized HTML",
               "bertdemo/frontend_patch.py TOAST_TEXT", GRADIO,
               "a toast shows its message as written; the server sends refusals as plain text"),
    Touchpoint("gradio frontend", "statustracker-*.js: the screen-reader announcement of a finished event "
               "(i18n common.complete)", "bertdemo/frontend_patch.py DONE_ANNOUNCED", GRADIO,
               "a screen reader hears 'Complete' after an event, not 'common.complete'"),
    Touchpoint("gradio frontend", "CSS .image-frame", "bertdemo/ui/phone.py CSS", GRADIO,
               "the attention overview scrolls sideways on a phone"),
    Touchpoint("gradio frontend", "[data-testid='status-tracker']", "tests/e2e/test_browser.py wait_idle", GRADIO,
               "the browser tests wait until nothing is processing"),
    Touchpoint("transformers", "AutoModelForMaskedLM._model_mapping", "bertdemo/models/attention_modes.py "
               "implementation_for", TRANSFORMERS, "whether a config's masked-LM class takes a custom attention"),
    Touchpoint("transformers", "PreTrainedModel._can_record_outputs", "bertdemo/models/attention_modes.py "
               "_attention_class", TRANSFORMERS, "which module class computes the attention weights"),
    Touchpoint("transformers", "PretrainedConfig._attn_implementation", "bertdemo/models/attention_modes.py "
               "supports_modes, bertdemo/models/partial_forward.py, bertdemo/pretrain/locality.py", TRANSFORMERS,
               "which attention function a model runs now"),
    Touchpoint("transformers", "PreTrainedModel._init_weights", "bertdemo/finetune/engine.py _draw_again",
               TRANSFORMERS, "draw a new classifier head the way the model's own initialisation does"),
    Touchpoint("transformers", "transformers.models.bert.modeling_bert.eager_attention_forward",
               "bertdemo/models/partial_forward.py", TRANSFORMERS,
               "the attention function of a model whose implementation has no registered function"),
    Touchpoint("transformers", "transformers.masking_utils.create_bidirectional_mask",
               "bertdemo/models/partial_forward.py encode_at", TRANSFORMERS,
               "the padding mask in the form the model's attention function takes"),
    Touchpoint("gradio", "Blocks.mcp_server_obj.tool_to_endpoint", "bertdemo/ui/mcp_tools.py offer_read_only_views",
               GRADIO, "the MCP server offers the read-only views alone, under their endpoint's name"),
    Touchpoint("gradio", "BlockFunction.api_description", "bertdemo/ui/mcp_tools.py offer_read_only_views",
               GRADIO, "each MCP tool says what it answers"),
    Touchpoint("gradio", "Blocks.mcp_server_obj.mcp_server.request_handlers[mcp.types.CallToolRequest] / "
               "ServerResult.root: CallToolResult.isError, .content[i].text",
               "bertdemo/ui/mcp_tools.py offer_read_only_views", GRADIO,
               "a refused tool call names a long value by its length instead of echoing it"),
    Touchpoint("gradio", "Blocks.state_holder (its class, subclassed on the instance) / "
               "gradio.state_holder.SessionState(blocks) reading blocks.default_config and blocks.blocks / "
               "SessionState.config_values / BlocksConfig.config_for_block",
               "bertdemo/ui/session_configs.py make_session_configs_lazy", GRADIO,
               "a new page session's copy of every component's configuration made when read, not at its first event"),
    Touchpoint("gradio", "Blocks.postprocess_data(block_fn, predictions, state) (rebound on the instance) / "
               "BlockFunction.outputs / .batch / .is_validator_function / "
               "gradio.blocks.convert_component_dict_to_list / Block.stateful",
               "bertdemo/ui/skipped_outputs.py pass_skipped_outputs", GRADIO,
               "an output an answer leaves as it is (gr.skip()) is not rebuilt and configured again for nothing"),
    Touchpoint("gradio", "Blocks.preprocess_data(block_fn, inputs, state, explicit_call) (rebound on the instance) / "
               "gradio.exceptions.InvalidPathError", "bertdemo/ui/request_limits.py guard_events", GRADIO,
               "a file input naming a path nobody uploaded is refused in words, without a traceback in the log"),
    Touchpoint("gradio", "Blocks.call_function(block_fn, processed_input, iterator, requests, ...) (rebound on the "
               "instance; called once per answer, each step of a generator too, with the request)",
               "bertdemo/ui/callers.py serve_as_visitors", GRADIO,
               "every event of a public server runs as its visitor: the one place the run-access rule learns who asks"),
    Touchpoint("gradio", "Queue.sleep_when_free / Queue.progress_update_sleep_when_free (set on the instance)",
               "bertdemo/ui/queue_polling.py poll_less", GRADIO,
               "the queue looks for work every 5 ms, not every 1 ms, while it has none"),
    Touchpoint("torch", "Tensor._version", "bertdemo/models/loading.py weights_stamp", TORCH,
               "answers cached per weights: changes on any in-place edit"),
    Touchpoint("torch", "torch.cpu._is_avx512_bf16_supported / _is_amx_tile_supported",
               "bertdemo/pretrain/hardware.py cpu_has_native_bf16", TORCH, "train in bf16 where the CPU has it"),
)

# The frontend strings the CSS and the browser tests rely on (looked for in gradio's built assets).
FRONTEND_STRINGS = ("tab-wrapper", "tab-container", "visually-hidden", "image-frame", "status-tracker")


# --- gradio ---------------------------------------------------------------------------------------------------
def wrap_queue_push(blocks: Any, make: Callable[[Callable], Callable]) -> None:
    """Replace the queue's ``push`` (``async push(body, request, username) -> (joined, message, code)``), the
    one door every event passes, with ``make(original push)``."""
    queue = blocks._queue
    queue.push = make(queue.push)


def wrap_queue_process_events(blocks: Any, make: Callable[[Callable], Callable]) -> None:
    """Replace the queue's ``process_events`` (``async process_events(events, batch, begin_time, fn)``, which
    runs an event and frees its worker when it returns) with ``make(original process_events)``."""
    queue = blocks._queue
    queue.process_events = make(queue.process_events)


def route_queue_sleeps(sleep: Callable[..., Any]) -> None:
    """Every ``asyncio.sleep(delay)`` gradio's queue module awaits goes through ``sleep(delay)`` (its loops'
    waits for work and for progress); the rest of ``asyncio`` it reaches is asyncio itself. Idempotent."""
    import asyncio

    from gradio import queueing

    class QueueAsyncio:
        """``asyncio`` as gradio.queueing sees it: the module, but for ``sleep``."""

        def __getattr__(self, name: str) -> Any:
            return getattr(asyncio, name)

    view = QueueAsyncio()
    view.sleep = sleep
    queueing.asyncio = view


def queue_running(blocks: Any) -> bool:
    """True while the queue runs an event (one of its workers holds one)."""
    return any(job is not None for job in blocks._queue.active_jobs)


def queued_events(blocks: Any) -> list[Any]:
    """The queue's events now waiting or running."""
    return list(blocks._queue.event_ids_to_events.values())


def event_request(event: Any) -> Any:
    """The request that queued ``event`` (None where gradio keeps none)."""
    return getattr(event, "request", None)


def drop_session(blocks: Any, session_hash: str) -> None:
    """Forget one session's page state in gradio's state holder (nothing where the app has none)."""
    holder = getattr(blocks, "state_holder", None)
    if holder is None:
        return
    with holder.lock:
        holder.session_data.pop(session_hash, None)
        holder.time_last_used.pop(session_hash, None)


def current_event() -> tuple[dict | None, str | None]:
    """The queue's table of live events and the id of the event the running handler serves (None, None outside a
    queued event, or where gradio keeps them differently)."""
    from gradio.context import LocalContext

    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    events = getattr(getattr(blocks, "_queue", None), "event_ids_to_events", None)
    return (events, event_id) if isinstance(events, dict) and event_id else (None, None)


def event_alive(event: Any) -> bool | None:
    """A queued event's ``alive`` flag (None where gradio has none)."""
    return getattr(event, "alive", None)


def event_handlers(blocks: Any) -> Iterable[Any]:
    """Every event handler (``BlockFunction``) of a built app."""
    return blocks.fns.values()


def event_handlers_by_id(blocks: Any) -> Iterable[tuple[int, Any]]:
    """Every event handler of a built app with its id (the number a chained handler's ``trigger_after`` names)."""
    return blocks.fns.items()


def component_id(component: Any) -> int:
    """A component's id within its app."""
    return component._id


def replace_input_count_check(blocks: Any, check: Callable[[Any, list], None]) -> None:
    """Make ``check(block_fn, inputs)`` the app's check that an event got all its inputs (gradio calls
    ``blocks.validate_inputs`` before preprocessing)."""
    blocks.validate_inputs = check


def wrap_postprocess(blocks: Any, make: Callable[[Callable], Callable]) -> None:
    """Replace the app's step that turns an event's answer into what the page gets (``blocks.postprocess_data(
    block_fn, predictions, state)``, a coroutine gradio calls on the instance) with ``make(the original)``."""
    blocks.postprocess_data = make(blocks.postprocess_data)


def wrap_preprocess(blocks: Any, make: Callable[[Callable], Callable]) -> None:
    """Replace the app's step that turns what the page sent into an event's inputs (``blocks.preprocess_data(
    block_fn, inputs, state, explicit_call)``, a coroutine gradio calls on the instance; a file input given by a
    path that was not uploaded raises :func:`invalid_path_error` there) with ``make(the original)``."""
    blocks.preprocess_data = make(blocks.preprocess_data)


def invalid_path_error() -> type[Exception]:
    """What gradio raises for a file input whose path is not one of its uploads (a forged ``FileData``)."""
    from gradio.exceptions import InvalidPathError

    return InvalidPathError


def wrap_call_function(blocks: Any, make: Callable[[Callable], Callable]) -> None:
    """Replace the app's step that runs an event's handler (``blocks.call_function(block_fn, processed_input,
    iterator, requests, ...)``, a coroutine gradio calls on the instance for each answer — each step of a generator
    too) with ``make(the original)``."""
    blocks.call_function = make(blocks.call_function)


def call_request(call_function: Callable, args: tuple, kwargs: dict) -> Any:
    """The request a ``call_function`` call serves (its ``requests``: one, or a batch's list, whose first is taken;
    None when gradio passed none)."""
    import inspect

    try:
        requests = inspect.signature(call_function).bind_partial(*args, **kwargs).arguments.get("requests")
    except TypeError:
        return None
    return requests[0] if isinstance(requests, list) and requests else requests


def event_outputs(block_fn: Any) -> list:
    """An event handler's output components, in order."""
    return list(block_fn.outputs)


def output_values(block_fn: Any, predictions: Any) -> list | None:
    """An event's answer as one value per output, as gradio reads it (a ``{component: value}`` dict with the
    outputs it leaves out skipped; one ``gr.skip()`` for all of them); None where gradio reads it otherwise or
    refuses it: one output, a batch, a validator, answers that do not fit the outputs."""
    from gradio.blocks import convert_component_dict_to_list
    from gradio.helpers import skip

    outputs = block_fn.outputs
    if len(outputs) < 2 or block_fn.batch or block_fn.is_validator_function:
        return None
    if isinstance(predictions, dict) and predictions == skip():
        return [skip() for _ in outputs]
    if isinstance(predictions, dict) and predictions:
        predictions = convert_component_dict_to_list(list(outputs), predictions)
    if not isinstance(predictions, (list, tuple)) or len(predictions) != len(outputs):
        return None
    return list(predictions)


def holds_state(component: Any) -> bool:
    """Whether the component is per-session state (gradio answers its output None, not an update)."""
    return bool(component.stateful)


def with_outputs(block_fn: Any, outputs: list) -> Any:
    """A copy of the event handler that lists only ``outputs`` (the original is left as it is)."""
    import copy

    part = copy.copy(block_fn)
    part.outputs = list(outputs)
    return part


def file_fetch(component: Any) -> Callable:
    """The component's coroutine that copies a file given by path or web address into gradio's cache."""
    return component.async_move_resource_to_block_cache


def replace_file_fetch(component: Any, fetch: Callable) -> None:
    """Make ``fetch`` (a coroutine taking the path or address) the component's file copy (see :func:`file_fetch`)."""
    component.async_move_resource_to_block_cache = fetch



def mcp_tool_table(blocks: Any) -> dict[str, str] | None:
    """The launched app's MCP tool table (tool name -> API endpoint, e.g. ``"/fill_mask"``), changed in place to
    change what the MCP server lists and calls; None when the app runs no MCP server."""
    server = getattr(blocks, "mcp_server_obj", None)
    return None if server is None else server.tool_to_endpoint


MCP_ECHO_CHARS = 100  # a quoted value longer than this in a refused call's text is named by its length instead


def plain_mcp_refusals(blocks: Any) -> None:
    """A refused MCP tool call never echoes a long value: the MCP package checks a call's arguments against the
    tool's schema before gradio sees them, and its refusal quotes the value whole ("Input validation error: 'xxxx…'
    is not one of […]": 5,313 characters for a 5,000-character model name); a quoted value past
    :data:`MCP_ECHO_CHARS` characters is named by its length. (A refusal is plain text, as the page's toast shows it
    and every API caller reads it: :data:`bertdemo.frontend_patch.TOAST_TEXT`.)"""
    import re

    long_quote = re.compile(f"'([^']{{{MCP_ECHO_CHARS + 1},}})'")

    from mcp import types

    handlers = blocks.mcp_server_obj.mcp_server.request_handlers
    answer = handlers[types.CallToolRequest]

    async def plain(request: Any) -> Any:
        result = await answer(request)
        if getattr(result.root, "isError", False):
            for part in result.root.content:
                if getattr(part, "type", "") == "text":
                    part.text = long_quote.sub(lambda m: f"a value of {len(m.group(1)):,} characters", part.text)
        return result

    handlers[types.CallToolRequest] = plain


def describe_endpoint(handler: Any, text: str) -> None:
    """Set an event handler's API description (what its API page and its MCP tool say about it)."""
    handler.api_description = text


def lazy_session_configs(blocks: Any, configs_class: Callable[[Any, list[int]], dict]) -> None:
    """The launched app's new sessions (``SessionState``) get ``configs_class(session's BlocksConfig, component
    ids)`` as their ``config_values`` instead of the copy gradio makes of every component at once; every other
    field is gradio's own (its ``__init__`` runs, given no components to copy)."""
    from types import SimpleNamespace

    from gradio.state_holder import SessionState

    class LazySessionState(SessionState):
        def __init__(self, app: Any) -> None:
            super().__init__(SimpleNamespace(default_config=app.default_config, blocks={}))
            self.config_values = configs_class(self.blocks_config,
                                               [k for k in self.blocks_config.blocks if k in app.blocks])

    holder = blocks.state_holder

    class LazyHolder(type(holder)):  # type: ignore[misc]
        def __getitem__(self, session_id: str) -> Any:
            if session_id not in self.session_data:
                self.session_data[session_id] = LazySessionState(self.blocks)
            return super().__getitem__(session_id)

    holder.__class__ = LazyHolder


def set_queue_polling(blocks: Any, free_s: float, progress_s: float) -> None:
    """How long the queued app's queue waits before it looks for work again when it has none (``free_s``) and
    for progress to send (``progress_s``); never shorter than gradio's own waits."""
    queue = blocks._queue
    queue.sleep_when_free = max(queue.sleep_when_free, free_s)
    queue.progress_update_sleep_when_free = max(queue.progress_update_sleep_when_free, progress_s)

def type_hints(fn: Callable) -> dict[str, Any]:
    """A handler's type hints, resolved the way gradio resolves them when it fills parameters."""
    import gradio as gr

    return gr.utils.get_type_hints(fn)


def frontend_assets() -> Path:
    """The folder of gradio's built page files (its script chunks, styles and fonts)."""
    import gradio

    return Path(gradio.__file__).parent / "templates" / "frontend" / "assets"


def upload_folder() -> str:
    """The folder where gradio keeps uploads and the files it serves (GRADIO_TEMP_DIR)."""
    from gradio.utils import get_upload_folder

    return get_upload_folder()


# --- transformers ---------------------------------------------------------------------------------------------
def masked_lm_class(config: Any) -> type:
    """The masked-LM class transformers builds for a config (KeyError / ValueError for none)."""
    from transformers import AutoModelForMaskedLM

    return AutoModelForMaskedLM._model_mapping[type(config)]


def attn_implementation(config: Any) -> str | None:
    """The attention implementation a model config runs now ("eager", "sdpa", a registered name; None if unset)."""
    return getattr(config, "_attn_implementation", None)


def init_weights(model: Any, module: Any) -> None:
    """Initialise ``module``'s parameters (and its children's) the way ``model``'s own initialisation does."""
    module.apply(model._init_weights)


def eager_attention() -> Callable:
    """BERT's plain attention function ``(module, q, k, v, mask, dropout=, scaling=) -> (out, weights)``."""
    from transformers.models.bert.modeling_bert import eager_attention_forward

    return eager_attention_forward


def bidirectional_mask(config: Any, inputs_embeds: Any, attention_mask: Any) -> Any:
    """A (B, T) padding mask in the form ``config``'s attention function takes (None where it needs none)."""
    from transformers.masking_utils import create_bidirectional_mask

    return create_bidirectional_mask(config=config, inputs_embeds=inputs_embeds, attention_mask=attention_mask)


def recorded_outputs(model: Any) -> dict:
    """What a model records for ``output_attentions`` and the like: name -> the module class (or its spec)."""
    return getattr(model.base_model, "_can_record_outputs", None) or getattr(model, "_can_record_outputs", None) or {}


# --- torch ----------------------------------------------------------------------------------------------------
def tensor_version(tensor: Any) -> int:
    """A tensor's in-place modification counter."""
    return tensor._version


def cpu_native_bf16() -> bool:
    """AVX512-BF16 or AMX on this CPU (False where torch does not say)."""
    import torch

    cpu = getattr(torch, "cpu", None)
    try:
        return bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())
    except AttributeError:
        return False

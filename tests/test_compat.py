"""Canaries: each private touchpoint of gradio, transformers and torch that bertdemo/compat.py lists still
exists and still behaves as the app uses it, on the installed versions. An upgrade that moves one fails here,
in the quick loop, instead of silently in the page."""

from __future__ import annotations

import importlib.metadata
import inspect
from pathlib import Path

import gradio as gr
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from bertdemo import compat
from tests.helpers import run_coroutine

ROOT = Path(__file__).resolve().parent.parent


def _queued_app() -> gr.Blocks:
    from gradio.state_holder import StateHolder

    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(lambda text: text, box, box)
    demo.queue(max_size=8)
    StateHolder().set_blocks(demo)  # what launch does
    return demo


def _canary_queue_push():
    from gradio.queueing import Queue

    demo = _queued_app()
    assert inspect.iscoroutinefunction(Queue.push)
    assert list(inspect.signature(Queue.push).parameters) == ["self", "body", "request", "username"]
    seen = []
    compat.wrap_queue_push(demo, lambda push: seen.append(push) or "wrapped")
    assert demo._queue.push == "wrapped" and seen[0].__func__ is Queue.push  # the instance's push is replaced


def _canary_event_request():
    from gradio.queueing import Event

    assert "request" in inspect.signature(Event.__init__).parameters  # kept on the event as .request
    assert compat.event_request(object()) is None


def _canary_state_holder():
    demo = _queued_app()
    holder = demo.state_holder
    holder["s1"]  # a session's state, made on first use
    assert "s1" in holder.session_data and "s1" in holder.time_last_used
    with holder.lock:  # a lock gradio holds while it changes the holder
        pass
    compat.drop_session(demo, "s1")
    assert "s1" not in holder.session_data and "s1" not in holder.time_last_used


def _canary_local_context():
    from gradio.context import LocalContext

    assert LocalContext.blocks.get(None) is None and LocalContext.event_id.get(None) is None
    assert compat.current_event() == (None, None)  # outside a queued event


def _canary_queue_table():
    with gr.Blocks() as demo:
        gr.Textbox()
    assert demo._queue.event_ids_to_events == {} and compat.queued_events(demo) == []


def _canary_event_alive():
    from gradio.queueing import Event

    assert "alive" in Event.__init__.__code__.co_names  # set in __init__ (an instance attribute)


def _built() -> tuple[gr.Blocks, gr.Textbox, gr.Markdown]:
    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Markdown()
        box.submit(lambda text: text, box, out, api_name="echo")
    return demo, box, out


def _canary_blocks_fns():
    demo, box, out = _built()
    [handler] = list(compat.event_handlers(demo))
    assert handler.inputs == [box] and handler.outputs == [out] and handler.api_name == "echo"


def _canary_block_function_fields():
    demo, _, out = _built()
    [handler] = list(compat.event_handlers(demo))
    assert handler.show_progress_on is None and handler.fn("hi") == "hi"
    handler.show_progress_on = [out]  # progress_on_text sets it after the build
    assert handler.get_config()["show_progress_on"] == [out._id]


def _canary_block_function_targets():
    with gr.Blocks() as demo:
        box = gr.Markdown()
        demo.load(lambda: "hi", None, box, show_progress="hidden")
    [handler] = list(compat.event_handlers(demo))
    assert handler.targets == [(demo._id, "load")] and handler.show_progress == "hidden"


def _canary_component_id():
    demo, box, _ = _built()
    assert isinstance(compat.component_id(box), int) and demo.blocks[compat.component_id(box)] is box


def _canary_preprocess_rebinding():
    box = gr.Textbox()
    box.preprocess = lambda payload: f"checked {payload}"  # guard_events rebinds it on the instance
    assert box.preprocess("x") == "checked x"


def _canary_validate_inputs():
    import inspect

    assert list(inspect.signature(gr.Blocks.validate_inputs).parameters) == ["self", "block_fn", "inputs"]
    demo, _, _ = _built()
    seen = []
    compat.replace_input_count_check(demo, lambda block_fn, inputs: seen.append((block_fn.api_name, inputs)))
    [handler] = list(compat.event_handlers(demo))
    demo.validate_inputs(handler, ["hi"])  # as gradio calls it before preprocessing an event's inputs
    assert seen == [("echo", ["hi"])]


def _canary_file_fetch():
    import inspect

    box = gr.File()
    assert inspect.iscoroutinefunction(compat.file_fetch(box))
    assert list(inspect.signature(compat.file_fetch(box)).parameters) == ["url_or_file_path"]

    async def refuse(url_or_file_path):
        return f"refused {url_or_file_path}"

    compat.replace_file_fetch(box, refuse)
    assert run_coroutine(box.async_move_resource_to_block_cache("https://example.org/x")) == "refused https://example.org/x"


def _canary_type_hints():
    def handler(text: str, request: gr.Request | None = None) -> str:
        return text

    assert compat.type_hints(handler)["request"] == gr.Request | None


def _canary_upload_folder():
    assert Path(compat.upload_folder()).is_absolute()


def _canary_create_or_modify_pyi():
    import gradio.blocks_events
    import gradio.component_meta

    assert callable(gradio.component_meta.create_or_modify_pyi)
    assert hasattr(gradio.blocks_events, "create_or_modify_pyi")  # imported by name there


def _canary_set_doc():
    from gradio.events import EventListener

    assert callable(EventListener.set_doc)


def _frontend_text(suffix: str) -> str:
    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    return "".join(path.read_text(encoding="utf-8", errors="replace") for path in assets.glob(f"*{suffix}"))


def _canary_tab_css():
    css = _frontend_text(".css")
    for name in ("tab-wrapper", "tab-container", "visually-hidden"):
        assert f".{name}" in css, name


def _canary_image_frame():
    assert ".image-frame" in _frontend_text(".css")


def _canary_status_tracker():
    assert "status-tracker" in _frontend_text(".js")


def _canary_status_pass():
    from bertdemo.frontend_patch import STATUS_PASS, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (STATUS_PASS,))) == 1  # every edit found once


def _canary_node_lookup():
    from bertdemo.frontend_patch import NODE_LOOKUP, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (NODE_LOOKUP,))) == 1  # the lookup's text found once


def _canary_latest_answer():
    from bertdemo.frontend_patch import LATEST_ANSWER, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (LATEST_ANSWER,))) == 1  # every edit found once


def _canary_press_kept():
    from bertdemo.frontend_patch import PRESS_KEPT, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (PRESS_KEPT,))) == 1  # the failure path's text found once


def _canary_trigger_mode():
    with gr.Blocks() as demo:
        box, button = gr.Textbox(), gr.Button()
        button.click(lambda t: t, box, box).then(lambda t: t, box, box)
    (first_id, first), (_, then) = sorted(compat.event_handlers_by_id(demo))
    assert first.trigger_mode == "once" and then.trigger_after == first_id and first._id == first_id
    first.trigger_mode = "always_last"  # answer_latest sets it after the build
    assert first.get_config()["trigger_mode"] == "always_last"


def _canary_toast_text():
    from bertdemo.frontend_patch import TOAST_TEXT, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (TOAST_TEXT,))) == 1  # the toast's rendering found once


def _canary_done_announced():
    from bertdemo.frontend_patch import DONE_ANNOUNCED, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (DONE_ANNOUNCED,))) == 1  # the announcement found once


def _canary_attached_events():
    from bertdemo.frontend_patch import ATTACHED_EVENTS, patched_scripts

    assert len(patched_scripts(compat.frontend_assets(), (ATTACHED_EVENTS,))) == 1  # the step's text found once


def _canary_model_mapping():
    assert compat.masked_lm_class(BertConfig()) is BertForMaskedLM


def _tiny_bert() -> BertForMaskedLM:
    return BertForMaskedLM(BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=16, max_position_embeddings=16))


def _canary_can_record_outputs():
    from transformers.models.bert.modeling_bert import BertSelfAttention

    target = compat.recorded_outputs(_tiny_bert())["attentions"]
    assert getattr(target, "target_class", target) is BertSelfAttention


def _canary_attn_implementation():
    model = _tiny_bert()
    model.set_attn_implementation("eager")
    assert compat.attn_implementation(model.config) == "eager"
    model.set_attn_implementation("sdpa")
    assert compat.attn_implementation(model.config) == "sdpa"


def _canary_init_weights():
    model = _tiny_bert()
    layer = model.bert.encoder.layer[0].output.dense
    torch.nn.init.zeros_(layer.weight)
    torch.nn.init.ones_(layer.bias)
    compat.init_weights(model, layer)
    assert float(layer.weight.detach().std()) == pytest.approx(model.config.initializer_range, rel=0.5)
    assert float(layer.bias.detach().abs().max()) == 0.0


def _canary_eager_attention():
    model = _tiny_bert().eval()
    attention = model.bert.encoder.layer[0].attention.self
    q = k = v = torch.randn(1, 2, 3, 4)  # (B, heads, T, d)
    out, weights = compat.eager_attention()(attention, q, k, v, None, dropout=0.0, scaling=0.5)
    assert out.shape == (1, 3, 2, 4) and torch.allclose(weights.sum(-1), torch.ones(1, 2, 3))


def _canary_bidirectional_mask():
    model = _tiny_bert()
    model.set_attn_implementation("eager")
    mask = compat.bidirectional_mask(model.config, torch.zeros(1, 3, 8), torch.tensor([[1, 1, 0]]))
    assert mask.shape[-1] == 3 and bool((mask[..., 2] < -1e30).all()) and bool((mask[..., :2] == 0).all())


def _canary_tensor_version():
    t = torch.zeros(3)
    before = compat.tensor_version(t)
    t.add_(1)
    assert compat.tensor_version(t) == before + 1


def _canary_cpu_bf16_checks():
    assert isinstance(torch.cpu._is_avx512_bf16_supported(), bool)
    assert isinstance(torch.cpu._is_amx_tile_supported(), bool)
    assert compat.cpu_native_bf16() == (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())



def _canary_mcp_tool_table():
    from gradio.mcp import GradioMCPServer  # what launch(mcp_server=True) builds and keeps on the app

    demo, _, _ = _built()
    demo.mcp_server_obj = GradioMCPServer(demo)
    table = compat.mcp_tool_table(demo)
    assert table == {"_lambda_": "/echo"}  # tool name (the function's, made a valid name) -> endpoint
    table.clear()
    table["echo"] = "/echo"
    assert demo.mcp_server_obj.get_input_schema("echo")[0]["type"] == "object"  # the server reads this table
    assert compat.mcp_tool_table(_built()[0]) is None


def _canary_api_description():
    from gradio.mcp import GradioMCPServer

    demo, _, _ = _built()
    [handler] = list(compat.event_handlers(demo))
    compat.describe_endpoint(handler, "Echoes the text.")
    server = GradioMCPServer(demo)
    [tool] = list(server.tool_to_endpoint)
    assert server.get_fn_description(handler, tool)[0] == "Echoes the text."


def _canary_plain_mcp_refusals():
    from gradio.mcp import GradioMCPServer
    from mcp import types

    demo, _, _ = _built()
    demo.mcp_server_obj = GradioMCPServer(demo)

    def refuse(name, arguments):  # a refusal as the MCP package's schema check writes it: the value quoted whole
        raise ValueError(f"Input validation error: '{'x' * 5000}' is not one of ['a', 'b'] (A->B & C)")

    demo.mcp_server_obj.get_selected_tools_from_request = lambda: None  # no MCP session here: every tool
    demo.mcp_server_obj._prepare_tool_call_args = refuse
    compat.plain_mcp_refusals(demo)
    call = types.CallToolRequest(method="tools/call", params=types.CallToolRequestParams(name="echo", arguments={}))
    result = run_coroutine(demo.mcp_server_obj.mcp_server.request_handlers[types.CallToolRequest](call), timeout=30)
    assert result.root.isError
    assert [part.text for part in result.root.content] == [
        "Input validation error: a value of 5,000 characters is not one of ['a', 'b'] (A->B & C)"]


def _canary_lazy_session_configs():
    from gradio.blocks import BlocksConfig
    from gradio.state_holder import SessionState

    from bertdemo.ui.session_configs import LazyConfigs

    demo = _queued_app()
    assert set(inspect.signature(SessionState.__init__).parameters) == {"self", "blocks"}
    assert isinstance(inspect.getattr_static(BlocksConfig, "config_for_block"), staticmethod)
    eager = SessionState(demo)
    compat.lazy_session_configs(demo, LazyConfigs)
    lazy = demo.state_holder["s1"]
    assert isinstance(lazy, SessionState) and isinstance(lazy.config_values, LazyConfigs)
    assert set(vars(lazy)) == set(vars(eager))  # every other field is gradio's own
    assert list(lazy.components) == list(eager.components)  # what gradio's deep-link route reads
    assert demo.state_holder["s1"] is lazy and "s1" in demo.state_holder.time_last_used


def _canary_postprocess_data():
    from gradio.blocks import Blocks, convert_component_dict_to_list

    from bertdemo.ui.skipped_outputs import SKIP

    assert list(inspect.signature(Blocks.postprocess_data).parameters) == ["self", "block_fn", "predictions", "state"]
    assert "await self.postprocess_data(" in inspect.getsource(Blocks.process_api)  # looked up on the instance
    assert gr.skip() == SKIP
    with gr.Blocks() as demo:
        box, out, memory = gr.Textbox(), gr.Markdown(), gr.State()
        box.submit(lambda text: text, box, [out, memory])
    [handler] = list(compat.event_handlers(demo))
    assert (handler.batch, handler.is_validator_function) == (False, False)
    assert compat.event_outputs(handler) == [out, memory] and compat.holds_state(memory) and not compat.holds_state(out)
    assert convert_component_dict_to_list([out, memory], {out: "hi"}) == ["hi", SKIP]
    assert compat.output_values(handler, gr.skip()) == [SKIP, SKIP]
    part = compat.with_outputs(handler, [out])
    assert part.outputs == [out] and handler.outputs == [out, memory] and part.fn is handler.fn
    seen = []
    compat.wrap_postprocess(demo, lambda original: lambda *args: seen.append(original) or original(*args))
    demo.postprocess_data(handler, ["hi", None], None).close()  # a coroutine: made, not run
    assert seen and seen[0].__func__ is Blocks.postprocess_data


def _canary_preprocess_data():
    from gradio import processing_utils
    from gradio.blocks import Blocks

    assert list(inspect.signature(Blocks.preprocess_data).parameters) == \
        ["self", "block_fn", "inputs", "state", "explicit_call"]
    assert "await self.preprocess_data(" in inspect.getsource(Blocks.process_api)  # looked up on the instance
    assert "raise InvalidPathError(" in inspect.getsource(processing_utils._check_allowed)
    assert issubclass(compat.invalid_path_error(), Exception)
    demo, _, _ = _built()
    seen = []
    compat.wrap_preprocess(demo, lambda original: lambda *args: seen.append(original) or original(*args))
    [handler] = list(compat.event_handlers(demo))
    demo.preprocess_data(handler, ["hi"], None).close()  # a coroutine: made, not run
    assert seen and seen[0].__func__ is Blocks.preprocess_data


def _canary_queue_polling():
    from gradio.queueing import Queue

    demo = _queued_app()
    assert demo._queue.sleep_when_free == 0.001 and demo._queue.progress_update_sleep_when_free == 0.01  # gradio's
    assert "self.sleep_when_free" in inspect.getsource(Queue.start_processing)  # read at every wait, not copied
    assert "self.progress_update_sleep_when_free" in inspect.getsource(Queue.start_progress_updates)
    compat.set_queue_polling(demo, 0.005, 0.05)
    assert (demo._queue.sleep_when_free, demo._queue.progress_update_sleep_when_free) == (0.005, 0.05)


def _canary_queue_process_events():
    from gradio.queueing import Queue

    loop = inspect.getsource(Queue.start_processing)
    assert "self.process_events" in loop and "self.active_jobs.index(None)" in loop  # run on a free worker
    assert "self.active_jobs[self.active_jobs.index(events)] = None" in inspect.getsource(Queue.process_events)
    assert list(inspect.signature(Queue.process_events).parameters) == ["self", "events", "batch", "begin_time",
                                                                          "fn"]
    demo = _queued_app()
    seen = []
    compat.wrap_queue_process_events(demo, lambda run: seen.append(run) or "wrapped")
    assert demo._queue.process_events == "wrapped" and seen[0].__func__ is Queue.process_events


def _canary_queue_active_jobs():
    from gradio.queueing import Queue

    demo = _queued_app()
    assert "self.active_jobs = [None] * self.max_thread_count" in inspect.getsource(Queue.start)  # free workers
    assert "events = [evt for job in self.active_jobs if job is not None for evt in job]" in \
        inspect.getsource(Queue.start_progress_updates)  # progress is sent for the active jobs' events only
    demo._queue.active_jobs = [None, None]
    assert not compat.queue_running(demo)
    demo._queue.active_jobs[1] = ["an event"]
    assert compat.queue_running(demo)


def _canary_queue_asyncio():
    import asyncio

    from gradio import queueing

    loop = inspect.getsource(queueing.Queue.start_processing)
    assert loop.count("await asyncio.sleep(self.sleep_when_free)") == 3  # idle, every worker busy, nothing to start
    assert queueing.asyncio is asyncio or type(queueing.asyncio).__name__ == "QueueAsyncio"
    before = queueing.asyncio
    try:
        compat.route_queue_sleeps(print)
        assert queueing.asyncio.sleep is print and queueing.asyncio.Event is asyncio.Event
    finally:
        queueing.asyncio = before


def _canary_call_function():
    """Gradio runs each answer (each step of a generator too) through ``Blocks.call_function`` on the instance, with
    the request: a context variable set around it reaches the handler in its worker thread."""
    import contextvars

    from gradio.blocks import Blocks

    params = list(inspect.signature(Blocks.call_function).parameters)
    assert params[:5] == ["self", "block_fn", "processed_input", "iterator", "requests"]
    assert "await self.call_function(" in inspect.getsource(Blocks.process_api)  # looked up on the instance
    seen = contextvars.ContextVar("canary_request", default=None)

    def steps(text):
        yield f"{text}:{seen.get()}"
        yield f"{text}:{seen.get()}"

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(lambda text: f"{text}:{seen.get()}", box, out)
        box.change(steps, box, out)
    plain, generator = list(compat.event_handlers(demo))

    def make(original):
        async def call_function(*args, **kwargs):
            reset = seen.set(compat.call_request(original, args, kwargs))
            try:
                return await original(*args, **kwargs)
            finally:
                seen.reset(reset)
        return call_function

    compat.wrap_call_function(demo, make)

    async def answers():
        first = await demo.call_function(plain, ["hi"], None, "request 1")
        step = await demo.call_function(generator, ["hi"], None, ["request 2"])
        later = await demo.call_function(generator, [], step["iterator"], ["request 3"])
        return first["prediction"], step["prediction"], later["prediction"]

    assert run_coroutine(answers()) == ("hi:request 1", "hi:request 2", "hi:request 3")


CANARIES = {
    "gradio.queueing.Queue.push(body, request, username) (replaced on the instance)": _canary_queue_push,
    "gradio.queueing.Queue.process_events(events, batch, begin_time, fn) (replaced on the instance)":
        _canary_queue_process_events,
    "Blocks._queue.active_jobs (None: a free worker)": _canary_queue_active_jobs,
    "gradio.queueing.asyncio (the module global its loops call asyncio.sleep through)": _canary_queue_asyncio,
    "gradio.queueing.Event.request": _canary_event_request,
    "Blocks.state_holder .lock / .session_data / .time_last_used": _canary_state_holder,
    "gradio.context.LocalContext.blocks / .event_id": _canary_local_context,
    "Blocks._queue.event_ids_to_events": _canary_queue_table,
    "gradio.queueing.Event.alive": _canary_event_alive,
    "Blocks.fns": _canary_blocks_fns,
    "Blocks.mcp_server_obj.tool_to_endpoint": _canary_mcp_tool_table,
    "BlockFunction.api_description": _canary_api_description,
    "Blocks.mcp_server_obj.mcp_server.request_handlers[mcp.types.CallToolRequest] / "
    "ServerResult.root: CallToolResult.isError, .content[i].text": _canary_plain_mcp_refusals,
    "BlockFunction.fn / .show_progress_on / .inputs / .outputs / .api_name": _canary_block_function_fields,
    "BlockFunction.targets / .show_progress": _canary_block_function_targets,
    "Component._id": _canary_component_id,
    "Blocks.validate_inputs (rebound on the instance)": _canary_validate_inputs,
    "Component.async_move_resource_to_block_cache (rebound on the instance)": _canary_file_fetch,
    "Component.preprocess (rebound on the instance)": _canary_preprocess_rebinding,
    "gradio.utils.get_type_hints": _canary_type_hints,
    "gradio.utils.get_upload_folder": _canary_upload_folder,
    "gradio.component_meta.create_or_modify_pyi (also imported by gradio.blocks_events)":
        _canary_create_or_modify_pyi,
    "gradio.events.EventListener.set_doc": _canary_set_doc,
    "CSS .tabs .tab-wrapper, .tab-container[role=tablist], .visually-hidden": _canary_tab_css,
    "CSS .image-frame": _canary_image_frame,
    "Blocks-*.js: update_loading_stati_state, the update_state_cb assignments, reload": _canary_status_pass,
    "core-*.js: the component lookup by id (function Z)": _canary_node_lookup,
    "core-*.js: postprocess's find_attached_events step": _canary_attached_events,
    "Blocks-*.js: dispatch's request (add_to_api_calls, run), its stream's handle_data, handle_data":
        _canary_latest_answer,
    "Blocks-*.js: dispatch's failure path (catch) and its error toast (log_cb)": _canary_press_kept,
    "Blocks.fns keys, BlockFunction.trigger_mode / .trigger_after": _canary_trigger_mode,
    "statustracker-*.js: the toast's message rendered as sanitized HTML": _canary_toast_text,
    "statustracker-*.js: the screen-reader announcement of a finished event (i18n common.complete)":
        _canary_done_announced,
    "[data-testid='status-tracker']": _canary_status_tracker,
    "AutoModelForMaskedLM._model_mapping": _canary_model_mapping,
    "PreTrainedModel._can_record_outputs": _canary_can_record_outputs,
    "PretrainedConfig._attn_implementation": _canary_attn_implementation,
    "PreTrainedModel._init_weights": _canary_init_weights,
    "transformers.models.bert.modeling_bert.eager_attention_forward": _canary_eager_attention,
    "transformers.masking_utils.create_bidirectional_mask": _canary_bidirectional_mask,
    "Tensor._version": _canary_tensor_version,
    "torch.cpu._is_avx512_bf16_supported / _is_amx_tile_supported": _canary_cpu_bf16_checks,
    "Blocks.state_holder (its class, subclassed on the instance) / gradio.state_holder.SessionState(blocks) "
    "reading blocks.default_config and blocks.blocks / SessionState.config_values / BlocksConfig.config_for_block":
        _canary_lazy_session_configs,
    "Queue.sleep_when_free / Queue.progress_update_sleep_when_free (set on the instance)": _canary_queue_polling,
    "Blocks.preprocess_data(block_fn, inputs, state, explicit_call) (rebound on the instance) / "
    "gradio.exceptions.InvalidPathError": _canary_preprocess_data,
    "Blocks.postprocess_data(block_fn, predictions, state) (rebound on the instance) / BlockFunction.outputs / "
    ".batch / .is_validator_function / gradio.blocks.convert_component_dict_to_list / Block.stateful":
        _canary_postprocess_data,
    "Blocks.call_function(block_fn, processed_input, iterator, requests, ...) (rebound on the instance; called once "
    "per answer, each step of a generator too, with the request)": _canary_call_function,
}


def test_every_touchpoint_has_a_canary():
    assert sorted(t.name for t in compat.TOUCHPOINTS) == sorted(CANARIES)


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_the_touchpoint_still_exists(name):
    CANARIES[name]()


def test_the_touchpoints_were_checked_on_the_pinned_versions():
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
                if "==" in line and not line.startswith("#"))
    assert (pins["gradio"], pins["transformers"], pins["torch"]) == (compat.GRADIO, compat.TRANSFORMERS, compat.TORCH)
    assert {t.checked_on for t in compat.TOUCHPOINTS} == {compat.GRADIO, compat.TRANSFORMERS, compat.TORCH}


def test_what_a_space_installs_is_what_the_touchpoints_were_checked_on():
    """requirements.txt (what a Space installs) pins each library whose internals are touched exactly, and
    the README's front matter asks the Space for the same gradio."""
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    pins = dict(line.split("==") for line in lines if "==" in line)
    assert (pins["gradio"], pins["transformers"], pins["torch"]) == (compat.GRADIO, compat.TRANSFORMERS, compat.TORCH)
    front_matter = (ROOT / "README.md").read_text(encoding="utf-8").split("---")[1]
    assert f"sdk_version: {compat.GRADIO}\n" in front_matter


def test_the_installed_versions_are_the_checked_ones():
    """Run on other versions, the canaries above say which touchpoint moved; this says that they differ."""
    installed = (importlib.metadata.version("gradio"), importlib.metadata.version("transformers"),
                 importlib.metadata.version("torch").split("+")[0])
    assert installed == (compat.GRADIO, compat.TRANSFORMERS, compat.TORCH)


def test_compat_imports_no_library_at_import_time():
    import subprocess
    import sys

    probe = ("import sys, bertdemo.compat; "
             "print(sorted(m for m in ('gradio', 'torch', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr[-500:]

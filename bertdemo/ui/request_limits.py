"""Size before work: every value that reaches an event handler is checked against a declared limit
before the handler runs — before any tokenizing or allocation.

One table (:data:`MAX_CHARS`, by parameter name, with per-endpoint overrides in
:data:`ENDPOINT_MAX_CHARS`) says how long each text may be; a text parameter the table does not name
gets :data:`DEFAULT_MAX_CHARS`, so a new endpoint cannot forget its limit. Numbers must be finite and
within :data:`MAX_ABS_NUMBER`; dicts and lists (the run settings) within :data:`MAX_STRUCT_CHARS` of
JSON (per-endpoint overrides in :data:`ENDPOINT_MAX_STRUCT_CHARS`: a fine-tuning start carries the
learner's own lines) and :data:`MAX_DEPTH` deep. :func:`guard_events` wraps every handler of a built app; a refusal
names the parameter, its size and the limit — never the value.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio_client.utils import is_http_url_like

from bertdemo import compat, limits
from bertdemo.finetune import own_data
from bertdemo.models.load_errors import MAX_NAME_CHARS

TEXT_CHARS = limits.MAX_TEXT_CHARS  # a sentence (pair) to look at: far beyond what a model reads
WORD_LIST_CHARS = 2_000  # comma-separated words, targets, answers, head lists
TOKEN_CHARS = 256  # owner and admin tokens, run ids
DEFAULT_MAX_CHARS = 2_000  # any text parameter not named below
STEP_CHARS = 40  # a learning-path step's key, e.g. "no-positions"
MAX_STRUCT_CHARS = 20_000  # a dict / list parameter, as JSON
# a fine-tuning start may carry the learner's own labelled lines (own_data bounds them before any work)
OWN_DATA_STRUCT_CHARS = 2 * own_data.MAX_PASTE_CHARS  # JSON escapes each tab and line break: up to twice as long
ENDPOINT_MAX_STRUCT_CHARS: dict[str, dict[str, int]] = {
    "start_finetune": {"settings": OWN_DATA_STRUCT_CHARS},
}
MAX_DEPTH = 8  # nesting of a dict / list parameter
MAX_ABS_NUMBER = 1e9
MAX_ECHO_CHARS = 200  # the most of gradio's own preprocessing error a client gets back (it may quote the payload)

MAX_CHARS: dict[str, int] = {
    "text": TEXT_CHARS, "text_pair": TEXT_CHARS, "sentence_a": TEXT_CHARS, "sentence_b": TEXT_CHARS,
    "targets": WORD_LIST_CHARS, "words": WORD_LIST_CHARS, "answers": WORD_LIST_CHARS, "heads": WORD_LIST_CHARS,
    "model": MAX_NAME_CHARS, "second_model": MAX_NAME_CHARS, "left": MAX_NAME_CHARS, "right": MAX_NAME_CHARS,
    "owner_token": TOKEN_CHARS, "admin_token": TOKEN_CHARS, "run_id": TOKEN_CHARS,
    "step": STEP_CHARS,
    "expected": limits.MAX_EXPECTED_CHARS,  # the word a probe expects at its first [MASK]
    "mlm_model": MAX_NAME_CHARS, "ltr_model": MAX_NAME_CHARS,  # the twin comparison's pair
    "pasted": own_data.MAX_PASTE_CHARS, "hub_name": 200, "text_column": 100, "label_column": 100,  # own data
}
ENDPOINT_MAX_CHARS: dict[str, dict[str, int]] = {
    "set_probe": {"text": limits.MAX_PROBE_CHARS},  # kept at every evaluation and sent to every page
    "set_probe_from_page": {"text": limits.MAX_PROBE_CHARS},
    "order_probe": {"text": limits.MAX_PROBE_CHARS},
    "twin_side_by_side": {"text": limits.MAX_PROBE_CHARS},  # one sentence, both models
}


def limit_for(endpoint: str | None, parameter: str) -> int:
    """Most characters the text ``parameter`` of ``endpoint`` may have."""
    return ENDPOINT_MAX_CHARS.get(endpoint or "", {}).get(parameter, MAX_CHARS.get(parameter, DEFAULT_MAX_CHARS))


def struct_limit_for(endpoint: str | None, parameter: str) -> int:
    """Most characters of JSON the dict / list ``parameter`` of ``endpoint`` may have."""
    return ENDPOINT_MAX_STRUCT_CHARS.get(endpoint or "", {}).get(parameter, MAX_STRUCT_CHARS)


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max([_depth(v, level + 1) for v in value.values()], default=level)
    if isinstance(value, (list, tuple)):
        return max([_depth(v, level + 1) for v in value], default=level)
    return level - 1


def check_value(endpoint: str | None, parameter: str, value: Any, limit: int | None = None) -> None:
    """ValueError when ``value`` is over its limit (the message names sizes, never the value); ``limit``:
    the most characters of a text, when the caller knows it already (else the table's)."""
    if isinstance(value, str):
        limit = limit_for(endpoint, parameter) if limit is None else limit
        if len(value) > limit:
            raise ValueError(f"{parameter} is {len(value):,} characters long; this takes at most {limit:,}.")
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{parameter} must be a finite number.")
        if abs(value) > MAX_ABS_NUMBER:
            raise ValueError(f"{parameter} must be between {-MAX_ABS_NUMBER:,.0f} and {MAX_ABS_NUMBER:,.0f}.")
    elif isinstance(value, (dict, list, tuple)):
        if _depth(value) > MAX_DEPTH:
            raise ValueError(f"{parameter} is nested more than {MAX_DEPTH} levels deep.")
        try:
            size = len(json.dumps(value, default=str, ensure_ascii=False))  # a character of any script: one
        except (TypeError, ValueError, RecursionError):
            raise ValueError(f"{parameter} is not plain JSON.") from None
        most = struct_limit_for(endpoint, parameter)
        if size > most:
            raise ValueError(f"{parameter} is {size:,} characters of JSON; this takes at most {most:,}.")


TEXT_HINTS = (str, str | None)
NUMBER_HINTS = (int, float, int | None, float | None)


def check_type(parameter: str, hint: Any, value: Any) -> None:
    """ValueError when ``value`` (not None) is not of the plain kind the handler declares for ``parameter``
    (text, a number): an API call may send any JSON, and a wrong kind must get a sentence, not a traceback."""
    if value is None:  # a cleared box: the handler says what it needs, unless it takes a number and nothing else
        if hint in (int, float):
            raise ValueError(f"{parameter} must be a number, got nothing.")
        return
    if hint in TEXT_HINTS and not isinstance(value, str):
        raise ValueError(f"{parameter} must be text, got {_kind(value)}.")
    if hint in NUMBER_HINTS and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{parameter} must be a number, got {_kind(value)}.")


def _kind(value: Any) -> str:
    """What a JSON value is, in words (never the value itself)."""
    return {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object", type(None): "nothing"}.get(type(value), type(value).__name__)


def _checked(fn: Callable, endpoint: str | None, server_side: frozenset[str] = frozenset()) -> Callable:
    """``fn`` that first checks its arguments (same kind of callable: generator, coroutine or plain);
    ``server_side``: parameters fed by a ``gr.State`` (the server's own values, not a visitor's)."""
    signature = inspect.signature(fn)
    hints = compat.type_hints(fn)

    def check(args: tuple, kwargs: dict) -> None:
        try:
            bound = signature.bind_partial(*args, **kwargs)
        except TypeError:
            return  # gradio's own argument error says it better
        for name, value in bound.arguments.items():
            if name in server_side:
                continue
            try:
                check_type(name, hints.get(name), value)
                check_value(endpoint, name, value)
            except ValueError as exc:
                raise gr.Error(str(exc), duration=None, print_exception=False) from None

    if inspect.isasyncgenfunction(fn):
        @functools.wraps(fn)
        async def guarded_agen(*args, **kwargs):
            check(args, kwargs)
            async for item in fn(*args, **kwargs):
                yield item
        return guarded_agen
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def guarded_gen(*args, **kwargs):
            check(args, kwargs)
            yield from fn(*args, **kwargs)
        return guarded_gen
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def guarded_coro(*args, **kwargs):
            check(args, kwargs)
            return await fn(*args, **kwargs)
        return guarded_coro

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        check(args, kwargs)
        return fn(*args, **kwargs)
    return guarded


def check_number_payload(parameter: str, payload: Any, optional: bool) -> None:
    """ValueError when a number box's raw ``payload`` is not a number (None passes when the box may be empty):
    gradio compares it with the box's bounds first, and a list, an object or nothing failed there as an internal
    error with no message ("Error" alone), or true passed as 1."""
    if payload is None and optional:
        return
    if isinstance(payload, bool) or not isinstance(payload, (int, float)):
        raise ValueError(f"{parameter} must be a number, got {_kind(payload)}.")


def _checked_preprocess(preprocess: Callable, parameter: str, limit: int, number: str = "") -> Callable:
    """A component's ``preprocess`` that first checks the raw payload (gradio's own errors may echo it);
    ``number``: "slider" or "number" for a number box (:func:`check_number_payload`; a Number may be empty)."""

    @functools.wraps(preprocess)
    def guarded(payload, *args, **kwargs):
        try:
            if number:
                check_number_payload(parameter, payload, optional=number == "number")
            check_value(None, parameter, payload, limit)
        except ValueError as exc:
            raise gr.Error(str(exc), duration=None, print_exception=False) from None
        try:
            return preprocess(payload, *args, **kwargs)
        except gr.Error as exc:  # e.g. a Radio's "Value: <the whole payload> is not in the list of choices"
            text = str(getattr(exc, "message", exc))
            if len(text) > MAX_ECHO_CHARS:
                text = f"{parameter}: {text[:MAX_ECHO_CHARS]}…"
            elif number:  # a number box's bounds: "Value -5 is less than minimum value 1." says not which box
                text = f"{parameter}: {text}"
            # the sender's mistake: no traceback in the server's log (about 3 KB of it a request)
            raise gr.Error(text, duration=None, print_exception=False) from None

    return guarded


def _parameter_names(fn: Callable) -> list[str]:
    """The parameters gradio fills from the event's inputs, in order: not the ones it fills itself
    (a ``gr.Request``, a ``gr.Progress``)."""
    hints = compat.type_hints(fn)
    return [name for name, p in inspect.signature(fn).parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and hints.get(name) not in (gr.Request, gr.Request | None) and not isinstance(p.default, gr.Progress)]


URL_REFUSED = ("A file here must be uploaded to this server (the Upload button, or the API's upload route); "
               "a web address is not fetched.")


def _uploads_only(move: Callable) -> Callable:
    """A component's ``async_move_resource_to_block_cache`` that refuses a web address: gradio would fetch
    it into its cache before any handler runs, with no size cap and outside the door's upload budget."""

    @functools.wraps(move)
    async def guarded(url_or_file_path, *args, **kwargs):
        if isinstance(url_or_file_path, str) and is_http_url_like(url_or_file_path):  # gradio's own test for a URL
            raise gr.Error(URL_REFUSED, duration=None, print_exception=False)
        return await move(url_or_file_path, *args, **kwargs)

    return guarded


NOT_UPLOADED = ("A file here must be uploaded to this server first (the Upload button, or the API's upload "
                "route); a path on the server is not read.")


def _uploads_or_refusal(preprocess: Callable) -> Callable:
    """The app's ``preprocess_data`` with a file input that names a path nobody uploaded (gradio refuses it, then
    logs its traceback, with the path, as a fault) refused as what it is: the sender's mistake, in words."""
    not_uploaded = compat.invalid_path_error()

    @functools.wraps(preprocess)
    async def guarded(*args, **kwargs):
        try:
            return await preprocess(*args, **kwargs)
        except not_uploaded:
            raise gr.Error(NOT_UPLOADED, duration=None, print_exception=False) from None

    guarded.__bertdemo_guarded__ = True
    return guarded


def _trailing_defaults(fn: Any, count: int) -> list[Any]:
    """The default values of ``fn``'s last parameters that take inputs (a ``gr.Request`` takes none), as
    long as they have defaults, in order; [] when its parameters do not map one to one onto ``count`` inputs."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.annotation is not gr.Request and str(p.annotation) not in ("gr.Request", "Request")]
    except (TypeError, ValueError):
        return []
    if len(params) != count or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return []
    defaults: list[Any] = []
    for p in reversed(params):
        if p.default is p.empty:
            break
        defaults.insert(0, p.default)
    return defaults


def input_count_check(block_fn: Any, inputs: list) -> None:
    """Gradio's check that an event got all its inputs (``Blocks.validate_inputs``), saying how many:
    gradio's own message lists every received value in full and is printed to the server log, so a
    client sending megabytes with one input missing wrote them all to the log. Optional parameters left
    out at the end (a raw REST call of ``/run_status`` with ``[]``) take their defaults, as gradio_client
    fills them: adding an optional parameter to an endpoint breaks no caller."""
    missing = len(block_fn.inputs) - len(inputs)
    if missing <= 0:
        return
    defaults = _trailing_defaults(block_fn.fn, len(block_fn.inputs)) if block_fn.fn else []
    if len(defaults) < missing:
        raise ValueError(f"An event handler ({block_fn.name}) got {len(inputs)} of its {len(block_fn.inputs)} inputs.")
    inputs.extend(defaults[len(defaults) - missing:])  # gradio preprocesses the list it checked


def guard_events(demo: gr.Blocks, public: bool = False) -> int:
    """Wrap every event handler of ``demo`` (API or page) with the size checks, and the inputs' own
    preprocessing too (so not even gradio's parsing sees an oversized value); on a ``public`` server an
    input's file given as a web address is refused before gradio fetches it; a missing input is reported
    without echoing the others (:func:`input_count_check`). How many handlers were wrapped."""
    wrapped = 0
    box_limits: dict[int, tuple[Any, str, int]] = {}  # component id -> (component, parameter, most characters)
    spread_names: set[str] = set()  # the names of forms' ``*values``
    for block_fn in compat.event_handlers(demo):
        if block_fn.fn is None or getattr(block_fn.fn, "__bertdemo_guarded__", False):
            continue
        named = _parameter_names(block_fn.fn)
        spread = [p.name for p in inspect.signature(block_fn.fn).parameters.values() if p.kind is p.VAR_POSITIONAL]
        if spread:  # the inputs a ``*values`` takes (a form) get its name, so their preprocessing is guarded too
            named += [spread[0]] * (len(block_fn.inputs) - len(named))
            spread_names.add(spread[0])
        names = list(zip(block_fn.inputs, named))
        server_side = frozenset(name for component, name in names if isinstance(component, gr.State)
                                and name not in spread)  # a State among ``*values`` leaves the rest checked
        for component, name in names:
            if isinstance(component, gr.State):
                continue
            limit = limit_for(block_fn.api_name, name)
            known = box_limits.get(compat.component_id(component))
            # one box feeding several handlers: the largest of its limits, and on a tie the name a handler gives it
            # over a form's ``*values`` (a refusal names the box: "top_k: …", not "values: …")
            if known is None or limit > known[2] or (limit == known[2] and known[1] in spread_names
                                                      and name not in spread_names):
                box_limits[compat.component_id(component)] = (component, name, limit)
        block_fn.fn = _checked(block_fn.fn, block_fn.api_name, server_side)
        block_fn.fn.__bertdemo_guarded__ = True
        wrapped += 1
    for component, name, limit in box_limits.values():
        if callable(getattr(component, "preprocess", None)) and not getattr(component, "__bertdemo_guarded__", False):
            number = "slider" if isinstance(component, gr.Slider) else "number" if isinstance(component, gr.Number) else ""
            component.preprocess = _checked_preprocess(component.preprocess, name, limit, number)
            component.__bertdemo_guarded__ = True
    compat.replace_input_count_check(demo, input_count_check)  # no echo of the inputs into the log
    if not getattr(demo.preprocess_data, "__bertdemo_guarded__", False):  # a forged path: a refusal, not a fault
        compat.wrap_preprocess(demo, _uploads_or_refusal)
    inputs = {compat.component_id(c): c for f in compat.event_handlers(demo) for c in f.inputs
              if not isinstance(c, gr.State)}
    for component in inputs.values() if public else ():  # every input, named parameter or ``*values``
        if not getattr(component, "__bertdemo_uploads_only__", False):
            compat.replace_file_fetch(component, _uploads_only(compat.file_fetch(component)))
            component.__bertdemo_uploads_only__ = True
    return wrapped

"""One rule for every request that runs a model: the endpoint registry and the wrapper that applies it.

:data:`ENDPOINTS` declares every event handler of the app by its API name (a page event's name too; a
name gradio numbers, ``fill_3``, is declared by its stem, ``fill``): ``LIGHT`` (no model runs: tokenizing,
run control, redrawing held results) or a :class:`Endpoint` of kind ``"model"`` with its allowance. After
the app is built, :func:`apply_budgets` wraps every model handler so that, before the handler runs, it

* takes one of the server's heavy slots (``ctx.heavy``) when the endpoint is ``heavy``: a request beyond
  them is refused at once with a message, the ordinary requests keep flowing;
* gets its own :class:`~bertdemo.request_budget.WorkBudget` (:func:`current_budget`): on a public
  server the endpoint's GFLOP allowance, on every server a deadline, and a stop once its client has gone
  (:func:`bertdemo.ui.common.client_gone`).

The logic charges the budget with its own estimate as soon as it knows the request's size (steps x tokens x
the model's size, :mod:`bertdemo.request_budget`) and checks it between batches, so a request past
the allowance is refused before its work starts, with a sentence saying what to lower. A handler cannot
skip the wrapper: it is applied to the built app, and ``tests/test_heavy_requests.py`` fails for any
handler the registry does not declare and for any model handler the wrapper did not reach.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gradio as gr

from bertdemo import compat
from bertdemo.limits import MAX_LOCAL_REQUEST_SECONDS, MAX_REQUEST_GFLOP, MAX_REQUEST_SECONDS
from bertdemo.request_budget import WorkBudget, unbounded
from bertdemo.ui.common import client_gone

if TYPE_CHECKING:
    from bertdemo.context import AppContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoint:
    """How one endpoint is served: ``kind`` "light" (no model runs) or "model"; a model endpoint's
    ``max_gflop`` (a public server's allowance per request), ``seconds`` (its deadline on a public server;
    a local one allows :data:`MAX_LOCAL_REQUEST_SECONDS`) and whether it takes a ``heavy`` slot, named
    ``what`` when none is free."""

    kind: str
    max_gflop: float = MAX_REQUEST_GFLOP
    seconds: float = MAX_REQUEST_SECONDS
    heavy: bool = False
    what: str = ""


LIGHT = Endpoint("light")
MODEL = Endpoint("model")  # one forward or a few, bounded by the view's input limits
ATTRIBUTION = Endpoint("model", heavy=True, what="attribution")
INDEX = Endpoint("model", max_gflop=2_000, seconds=60.0)  # a corpus index is built once per model and layer
PROBES = Endpoint("model", max_gflop=6_000, seconds=240.0, heavy=True, what="layer probes")
LAYER_CHANGE = Endpoint("model", max_gflop=6_000, seconds=240.0, heavy=True, what="the layer change")

ENDPOINTS: dict[str, Endpoint] = {
    # Learn
    "learn_step": MODEL, "answer_or_skip": MODEL, "render": LIGHT, "keep_exploring": LIGHT, "open_link": LIGHT,
    # Learn: predict, then reveal; the concept check; the learner's progress (kept in their browser)
    "draw_step": LIGHT, "check_guess": LIGHT, "show_me": LIGHT, "grade_concept": LIGHT,
    "learn_wordpiece": LIGHT,
    # the code panels, examples, the model picker (loading has its own rules: bertdemo.models.policy)
    "fill": LIGHT, "refresh": LIGHT, "load_example": LIGHT, "on_change": LIGHT, "cleared": LIGHT, "partial": LIGHT, "lambda": LIGHT,
    # Tokenizer: the tokenizer only
    "lookup": LIGHT, "run_lookup": LIGHT, "compare_tokenizers": LIGHT, "encode": LIGHT, "tokenize": LIGHT,
    "run_page": LIGHT,
    # Fill-Mask: its extra passes (PLL, whole words) charge the budget and take a heavy slot in the handler
    "fill_mask": MODEL, "run_fill_mask": MODEL, "refresh_second": LIGHT,
    # Attention: one forward; the controls redraw the held result
    "attention": MODEL, "show": MODEL, "attention_rollout": MODEL, "head_ablation": MODEL,
    "attention_weights": MODEL,  # the MCP tool's endpoint: one view's numbers
    "redraw": LIGHT, "make_csvs": LIGHT, "shape_sliders": LIGHT, "pick": LIGHT,
    # Inside BERT
    "inside_embeddings": MODEL, "inside_layer": MODEL, "logit_lens": MODEL, "mlm_loss": MODEL, "handler": MODEL,
    "param_breakdown": LIGHT,
    # Word in context
    "word_in_context": MODEL, "compare": MODEL, "readout": MODEL,
    "corpus_neighbours": INDEX, "find": INDEX, "picture": INDEX,
    "attribution": ATTRIBUTION, "explain": ATTRIBUTION,
    # Masking lab: tokenizing and sampling; next-sentence prediction runs the model
    "mask_sample": LIGHT, "mask_epochs": LIGHT, "mask_stats": LIGHT, "nsp_pairs": LIGHT, "page": LIGHT,
    "next_epoch": LIGHT, "nsp_predict": MODEL,
    # Pretraining: a run has its own caps (bertdemo.pretrain.service); the pages read its state
    "start_run": LIGHT, "start_from_page": LIGHT, "time_estimate": LIGHT, "run_status": LIGHT, "pause_run": LIGHT,
    "resume_run": LIGHT, "stop_run": LIGHT, "pause_from_page": LIGHT, "resume_from_page": LIGHT,
    "stop_from_page": LIGHT, "gpu_burst": LIGHT, "gpu_burst_from_page": LIGHT, "set_probe": LIGHT,
    "set_probe_from_page": LIGHT, "draw": LIGHT, "curves": LIGHT, "probe_ranks": LIGHT, "run_metrics_csv": LIGHT,
    "ask_delete": LIGHT, "delete_from_page": LIGHT, "delete_run": LIGHT, "shape_markdown": LIGHT,
    "order_probe": MODEL,
    # Fine-tuning
    "start_finetune": LIGHT, "start_finetune_from_page": LIGHT, "task_view": LIGHT, "download_csv": LIGHT,
    "delete_finetune": LIGHT, "delete_finetune_from_page": LIGHT, "show_code": LIGHT, "status_text": LIGHT,
    "classify": MODEL, "classify_from_page": MODEL, "compute_landmarks": PROBES,
    "probe_layers": PROBES, "probe_layers_from_page": PROBES, "probe_checkpoints": PROBES,
    # The B in BERT (Pretrain tab): masked LM beside left-to-right LM, what the heads became, what a run cost
    "twin_heldout": Endpoint("model", max_gflop=2_000, seconds=120.0, heavy=True, what="the held-out comparison"),
    "twin_cloze": MODEL, "twin_side_by_side": MODEL, "head_roles": MODEL,
    "head_roles_over_checkpoints": Endpoint("model", max_gflop=2_000, seconds=120.0, heavy=True,
                                            what="heads over checkpoints"),
    "run_cost": LIGHT, "refresh_pairs": LIGHT,
    # Fine-tuning, Find the names: one forward of one sentence to tag it; the per-word layer probes
    "start_names": LIGHT, "curve_now": LIGHT, "report_now": LIGHT, "tag": MODEL, "tag_from_page": MODEL, "probe_words_from_page": PROBES,
    # Fine-tune: what fine-tuning changed (two encoders and two masked LMs over the validation sentences)
    "layer_change": LAYER_CHANGE, "layer_change_from_page": LAYER_CHANGE,
    # the run queue and classes
    "queue_place": LIGHT, "cancel_queued_run": LIGHT, "share_link": LIGHT, "create_class": LIGHT, "join_class": LIGHT,
    "teacher_report": LIGHT, "teacher_tick": LIGHT, "class_csv": LIGHT, "read_link": LIGHT, "close_class": LIGHT,
    "send_learning_answers": MODEL,  # a member's guess graded on the server: the step's question asked again
    # Fine-tuning on the learner's own sentences (the run has its own caps; classifying is one forward)
    "own_example": LIGHT, "own_start": LIGHT, "own_poll": LIGHT, "own_show": LIGHT, "own_refresh": LIGHT,
    "own_classify": MODEL, "own_download": LIGHT, "own_data_csv": LIGHT,
    # Table 5 in miniature (Pretrain tab): a live cell is a fine-tuning run with the run caps; the page polls it
    "start_table5_cell": LIGHT, "table5_cell_from_page": LIGHT, "table5_stop_from_page": LIGHT, "table5_poll": LIGHT,
    # the learner's own word labels: the example pasted (tagging is own_classify's one forward)
    "own_words_example": LIGHT,
    # the API's view of a start the busy slot queued (bertdemo.ui.run_starts)
    "queue_status": LIGHT, "cancel_queued": LIGHT,
    # a run tab's one poll (ui/tab_poll.py): drawn when the tab is shown, then at each tick while a run is live
    "tab_shown": LIGHT, "tab_tick": LIGHT,
    # a tab's first answer, sent when the tab is shown (ui/first_show.py): the Learn step answered and drawn
    "answer_shown": MODEL,
    # a run tab's first request when shown (ui/tab_poll.py): its status line, before the curves and run lists
    "tab_first": LIGHT,
}

_NUMBERED = re.compile(r"_\d+$")  # gradio numbers a repeated name: fill, fill_1, fill_2, ...
_CURRENT: contextvars.ContextVar[WorkBudget | None] = contextvars.ContextVar("bertdemo_request_budget", default=None)
MARK = "__bertdemo_budget__"  # set on a handler the wrapper reached


def declaration(api_name: str | None) -> Endpoint | None:
    """The registry's entry for a handler's API name (its own, else its stem without gradio's number)."""
    name = api_name or ""
    return ENDPOINTS.get(name) or ENDPOINTS.get(_NUMBERED.sub("", name))


def current_budget() -> WorkBudget:
    """The budget of the request the running handler serves (an unbounded one outside a wrapped handler,
    e.g. a handler called in-process by a script)."""
    return _CURRENT.get() or unbounded()


def budget_for(endpoint: Endpoint, public: bool, should_stop: Callable[[], bool] = lambda: False) -> WorkBudget:
    """A new request's budget on a public or local server: a local server refuses nothing for its size and
    allows :data:`MAX_LOCAL_REQUEST_SECONDS`."""
    if public:
        return WorkBudget(max_gflop=endpoint.max_gflop, seconds=endpoint.seconds, should_stop=should_stop)
    return WorkBudget(max_gflop=math.inf, seconds=max(endpoint.seconds, MAX_LOCAL_REQUEST_SECONDS),
                      should_stop=should_stop)


def budgeted(fn: Callable, endpoint: Endpoint, ctx: AppContext) -> Callable:
    """``fn`` (a plain function: every model handler is one) run under the endpoint's rule: a heavy slot when
    declared, and its own budget for :func:`current_budget`."""
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(f"{getattr(fn, '__name__', fn)}: a model handler must be a plain function.")
    public = ctx.settings.is_public

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with contextlib.ExitStack() as held:
            if endpoint.heavy:
                try:
                    held.enter_context(ctx.heavy.take(endpoint.what))
                except ValueError as exc:  # the server is busy with other long requests
                    raise gr.Error(str(exc), duration=None, print_exception=False) from None
            token = _CURRENT.set(budget_for(endpoint, public, client_gone()))
            try:
                return fn(*args, **kwargs)
            finally:
                _CURRENT.reset(token)

    setattr(run, MARK, True)
    return run


def apply_budgets(demo: gr.Blocks, ctx: AppContext) -> list[str]:
    """Wrap every model handler of the built ``demo`` (:func:`budgeted`); the API names of the handlers
    the registry does not declare (logged; the test of the registry fails for each)."""
    undeclared = []
    for block_fn in compat.event_handlers(demo):
        if block_fn.fn is None or getattr(block_fn.fn, MARK, False):
            continue
        endpoint = declaration(block_fn.api_name)
        if endpoint is None:
            undeclared.append(block_fn.api_name)
            log.warning("Endpoint %s is not declared in bertdemo/ui/heavy_requests.py", block_fn.api_name)
        elif endpoint.kind == "model":
            block_fn.fn = budgeted(block_fn.fn, endpoint, ctx)
    return undeclared


def goes_through_budget(fn: Any) -> bool:
    """Whether a (possibly further wrapped) handler was wrapped by :func:`budgeted`."""
    return bool(getattr(fn, MARK, False))

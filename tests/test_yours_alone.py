"""Yours alone, in every view (issue 52, audit F4): on a public server, visitor B sending visitor A's private run —
its ``ft:<id>`` model, its ``run:<id>/checkpoint``, its plain run ids — to any event of the built app learns
nothing a run that does not exist would not tell them, while A is served.

The events are not listed by hand: every handler of the built app is read, and each input that takes a model name or
a run id (by its parameter's name, else its component's label) is tried with each of A's runs and with a name of the
same shape that names no run. B's answers must be the same for both (names swapped back); A's must differ for the
views the audit broke and the run pickers. A new event that takes a model name or a run id and skips the rule fails
here the day it is written. Everything runs in-process through gradio's own ``call_function`` with a request the
HTTP door would have made (the visitor header), so the page's one place that says who asks is in the path too."""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
import shutil
from pathlib import Path

import gradio as gr
import pytest
from starlette.requests import Request

from bertdemo import compat, storage
from bertdemo.context import AppContext
from bertdemo.models import embedded
from bertdemo.traffic import VISITOR_HEADER
from bertdemo.ui import build_app
from tests.helpers import run_coroutine, tiny_finetune_config, tiny_run_config, word_task

A, B = "10.2.0.1", "10.2.0.2"
TOKEN_A = "A-token-xyz"
PT, FT = "20261201-221000-custom", "20261201-221129-ft-own-embedded"  # A's pretraining (an upload) and own-data runs
NONE_SUCH = {PT: "20261201-221001-custom", FT: "20261201-221130-ft-own-embedded"}  # the same shapes, no such runs
CANDIDATES = [f"ft:{FT}", f"run:{PT}/checkpoint", PT, FT]
# what names a model or a run: a parameter's name, else (a handler's *values) its component's label
NAME_PARAM = re.compile(r"^(\w*model\w*|name|run_id|ids|compare|current|start_from|left|right|init)$")
NAME_LABEL = re.compile(r"^(model|run|start from)$|\b(model|run|runs|checkpoint)$|^resume from|^your runs",
                        re.IGNORECASE)
# the views the audit broke, and the run pickers: A must be served there (the test reaches the runs)
SERVED_TO_A = {"fill_mask", "word_in_context", "encode", "head_roles", "classify_from_page", "layer_change",
               "download_csv", "run_metrics_csv", "run_cost", "order_probe", "own_show", "own_data_csv", "on_change"}
CHANGES_THINGS = re.compile(r"delete|start|table5_cell")  # A's side not called: it would delete or start a run


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _private_to_a(folder: Path) -> None:
    """What a run A started on their own data records (written as the files are, so this runs on any code)."""
    storage.write_text(folder / "owner.sha256", _digest(TOKEN_A))
    storage.write_text(folder / "visitor.sha256", _digest(A))
    storage.write_text(folder / "access.json", json.dumps({"private": True, "starter": _digest(A)}))


@pytest.fixture(scope="module")
def server(tmp_path_factory, corpus):
    """A public server whose runs folder holds A's two private runs: a pretraining run on a text file of theirs
    (two checkpoints) and an own-data fine-tuning run started from it."""
    from bertdemo.finetune.engine import run_finetune
    from bertdemo.finetune.metrics import FinetuneMetrics
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training
    from bertdemo.runs.control import RunControl

    tmp = tmp_path_factory.mktemp("yours-alone")
    ctx = AppContext.for_tests(tmp, public=True, default_model=embedded.EMBEDDED_MLM_NAME)
    runs = Path(ctx.settings.runs_dir)
    cfg = tiny_run_config(corpus, runs, steps=20, eval_every=10, checkpoint_every=10, cache_dir=str(tmp / "cache"))
    assert run_training(cfg, metrics=MetricsBuffer(), run_folder=runs / PT) == "finished"
    start = next(p for p in sorted((runs / PT / "steps").iterdir()) if (p / "config.json").is_file())
    tuned = runs / ".finetune" / FT
    ft_cfg = tiny_finetune_config(start, init=f"run:{PT}/checkpoint", epochs=2)
    assert run_finetune(ft_cfg, word_task(), FinetuneMetrics(), RunControl(), tuned / "model") == "finished"
    (tuned / "own_data.csv").write_text("text,label,held-out prediction\nZEBRAQUARTZ is well,secretpos,secretpos\n")
    for folder in (runs / PT, tuned):
        _private_to_a(folder)
    demo = build_app(ctx)
    ctx.loader.start()  # as app.py does once the page is served
    yield ctx, demo
    ctx.runs.shutdown(timeout=60)


def _request(address: str) -> gr.Request:
    scope = {"type": "http", "method": "POST", "path": "/", "query_string": b"",
             "headers": [(VISITOR_HEADER.encode(), address.encode())]}
    return gr.Request(request=Request(scope))


def _input_names(block_fn) -> list[tuple[str, bool]]:
    """(parameter name, whether it is a *values parameter) for each input of an event, as gradio fills them."""
    params = [p for p in inspect.signature(block_fn.fn).parameters.values()
              if p.annotation not in (gr.Request, "gr.Request", "gr.Request | None", gr.EventData, "gr.EventData")
              and not isinstance(p.default, (gr.Progress, gr.Request))]
    named = [(p.name, False) for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "")
    return (named + [(rest, True)] * len(block_fn.inputs))[: len(block_fn.inputs)]


def name_inputs(demo: gr.Blocks) -> list[tuple[object, int]]:
    """Every (event, input position) of the built app that takes a model name or a run id."""
    found = []
    for block_fn in compat.event_handlers(demo):
        if block_fn.fn is None:
            continue
        for i, ((param, varargs), component) in enumerate(zip(_input_names(block_fn), block_fn.inputs)):
            label = str(getattr(component, "label", "") or "")
            if NAME_LABEL.search(label) if varargs else NAME_PARAM.match(param):
                found.append((block_fn, i))
    return found


def _answer(demo: gr.Blocks, block_fn, position: int, value: object, who: str, **others: object) -> str:
    """An event's answer (or refusal) with ``value`` at ``position`` (``others``: more, as ``at_<position>``) and
    every other input at its default, for the visitor at ``who``; the run ids shown as <id>, object addresses and
    temporary paths dropped."""
    inputs = [copy.deepcopy(component.value) for component in block_fn.inputs]
    multi = getattr(block_fn.inputs[position], "multiselect", False)
    inputs[position] = [value] if multi else value
    for at, other in others.items():
        inputs[int(at.removeprefix("at_"))] = other
    try:
        answer = repr(run_coroutine(demo.call_function(block_fn, inputs, None, _request(who)))["prediction"])
    except Exception as exc:  # noqa: BLE001 - a refusal is an answer too
        answer = f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
    for real, fake in NONE_SUCH.items():
        answer = answer.replace(real, "<id>").replace(fake, "<id>")
    answer = re.sub(r" at 0x[0-9a-f]+", "", answer)
    return re.sub(r"/tmp/[^'\"\s]*", "<tmp>", answer)


def _none_such(value: str) -> str:
    for real, fake in NONE_SUCH.items():
        value = value.replace(real, fake)
    return value


@pytest.mark.slow  # every event of the built app, twice
def test_every_event_that_takes_a_model_or_run_answers_another_visitor_as_if_the_run_were_none(server):
    ctx, demo = server
    inputs = name_inputs(demo)
    names = {block_fn.api_name for block_fn, _ in inputs}
    assert {"fill_mask", "word_in_context", "encode", "head_roles", "download_csv", "own_show", "tab_shown",
            "run_metrics_csv", "probe_checkpoints", "twin_cloze"} <= names  # the enumeration reaches them
    leaks, served = [], set()
    for block_fn, position in inputs:
        for value in CANDIDATES:
            stranger = [_answer(demo, block_fn, position, asked, B) for asked in (value, _none_such(value))]
            if stranger[0] != stranger[1]:
                leaks.append(f"{block_fn.api_name}[{position}] {value}: {stranger[0][:200]} != {stranger[1][:200]}")
            if CHANGES_THINGS.search(block_fn.api_name or "") or block_fn.api_name not in SERVED_TO_A:
                continue  # A's own answers are asked only where they are checked
            if _answer(demo, block_fn, position, value, A) != _answer(demo, block_fn, position, _none_such(value), A):
                served.add(block_fn.api_name)
    assert leaks == [], "answered B with A's run: " + " ".join(sorted({leak.split("[")[0] for leak in leaks}))
    assert SERVED_TO_A <= served, sorted(SERVED_TO_A - served)
    assert (Path(ctx.settings.runs_dir) / PT).is_dir() and (Path(ctx.settings.runs_dir) / ".finetune" / FT).is_dir()
    assert ctx.runs.manager.latest is None  # nothing B sent started a run


def test_the_api_starts_take_no_strangers_run_to_start_from(server):
    """The two API starts name a run inside their settings: resuming A's checkpoint, or fine-tuning from it."""
    ctx, demo = server
    handlers = {f.api_name: f for f in compat.event_handlers(demo)}
    for api, key, value in (("start_run", "resume_from", f"run:{PT}/checkpoint"),
                            ("start_finetune", "init", f"run:{PT}/checkpoint"),
                            ("start_finetune", "init", f"random:run:{PT}/checkpoint")):  # its shape is A's too
        answers = [_answer(demo, handlers[api], 0, {key: asked}, B, at_1="B-token")
                   for asked in (value, _none_such(value))]
        assert answers[0] == answers[1] and "no run '<id>/checkpoint'" in answers[0], answers
    assert ctx.runs.manager.latest is None


def test_a_strangers_lists_and_run_status_name_no_private_run(server):
    """Every list a page asks for (the run pickers refreshed when opened, the model box, the tabs' first draw) and
    /run_status, as B sees them: none of A's runs; A's own lists offer both."""
    _ctx, demo = server
    asked = [f for f in compat.event_handlers(demo) if f.fn is not None and not CHANGES_THINGS.search(f.api_name or "")
             and (f.api_name in ("run_status", "tab_first") or (f.api_name or "").startswith("tab_shown")
                  or (not f.inputs and any(isinstance(out, gr.Dropdown) for out in f.outputs)))]
    seen = {}
    for who in (A, B):
        answers = []
        for block_fn in asked:
            inputs = [copy.deepcopy(component.value) for component in block_fn.inputs]
            try:
                answers.append(repr(run_coroutine(demo.call_function(block_fn, inputs, None, _request(who)))))
            except Exception as exc:  # noqa: BLE001 - a refusal is an answer too
                answers.append(repr(exc))
        seen[who] = "\n".join(answers)
    assert PT not in seen[B] and FT not in seen[B]
    assert PT in seen[A] and FT in seen[A]


def test_a_live_private_run_is_no_strangers_to_watch(server):
    """While A's private run holds the slot, /run_status and the Pretrain tab's poll tell B only that the slot is
    taken; A (their address, or their token from anywhere) sees it all."""
    from tests.test_address_shares import StubKind, StubRun

    ctx, demo = server
    handlers = {f.api_name: f for f in compat.event_handlers(demo)}
    StubRun.private = True
    run = None
    try:
        run = StubKind(ctx.runs).start({"hold": True}, TOKEN_A, visitor=A)
        seen = {label: _answer(demo, handlers["run_status"], 0, token, who)
                + _answer(demo, handlers["tab_first"], 1, "", who)  # the Pretrain tab's status line
                for label, who, token in (("A", A, ""), ("B", B, ""), ("B's token", B, "B-token"))}
        by_token = _answer(demo, handlers["run_status"], 0, TOKEN_A, B)
    finally:
        StubRun.private = False
        if run is not None:
            run.stop()
            run.join(60)
    assert run.run_id in seen["A"] and run.run_id in by_token
    for answer in (seen["B"], seen["B's token"]):
        assert run.run_id not in answer and "stub-" not in answer and TOKEN_A not in answer
        assert "'private': True" in answer and "Another visitor's stand-in run on their own data" in answer


def test_a_start_from_my_run_on_the_page_queues_its_control_of_the_runs_shape(server):
    """Issue 54: starting a fine-tune from my own pretraining run starts it, and its control (random weights of the
    run's shape: the same seed, data order and budget) waits behind it, kept as a restart would make it again."""
    ctx, demo = server
    handlers = {f.api_name: f for f in compat.event_handlers(demo)}
    page_start = handlers["start_finetune_from_page"]
    inputs = [copy.deepcopy(component.value) for component in page_start.inputs]
    inputs[0], inputs[1], inputs[-1] = TOKEN_A, f"run:{PT}/checkpoint", True  # owner, Start from, then its control
    for kind in ctx.runs.kinds:  # A keeps at most 3 runs: PT, the run and its control; the others go
        for folder in kind.root.glob("2*"):
            if folder.name != PT:
                shutil.rmtree(folder)
    try:
        status, _ = run_coroutine(demo.call_function(page_start, inputs, None, _request(A)))["prediction"]
        assert "Its control, random weights of the run's shape, waits behind it." in status
        run = ctx.runs.manager.latest
        assert run is not None and run.cfg.init == f"run:{PT}/checkpoint"
        (waiting,) = json.loads(ctx.runs.queue.path.read_text())
        control = waiting["recipe"]["settings"]
        assert control["init"] == f"random:run:{PT}/checkpoint"
        assert (control["learning_rate"], control["batch_size"], control["epochs"], control["seed"]) == (
            run.cfg.learning_rate, run.cfg.batch_size, run.cfg.epochs, run.cfg.seed)  # the same recipe
    finally:
        ctx.runs.queue.cancel(ctx.runs.queue_key(TOKEN_A, A))
        ctx.runs.shutdown(timeout=60)


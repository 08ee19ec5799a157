"""Shared UI glue: turning logic errors into page messages, the model picker and its status line."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import gradio as gr

from bertdemo import compat
from bertdemo.explore.messages import no_head_message
from bertdemo.models import availability
from bertdemo.models.load_errors import mask_paths
from bertdemo.traffic import VISITOR_HEADER
from bertdemo.ui.plotly_figure import PlotlyFigure
from bertdemo.viz.model_info import model_summary
from bertdemo.viz.text import literal

if TYPE_CHECKING:
    from bertdemo.lazy import ModelSource as ModelStore

log = logging.getLogger(__name__)


def unexpected_error_message(exc: BaseException, public: bool) -> str:
    """What the page says of a failure nobody planned for: on a public server with every path masked."""
    text = f"{type(exc).__name__}: {exc}"
    return f"Something went wrong: {mask_paths(text) if public else text}"


def user_errors(fn: Callable | None = None, *, public: bool = False) -> Callable:
    """Run a handler; a ``ValueError`` from the logic becomes a ``gr.Error`` with the same message.

    Any other exception is logged and shown as a short message (no server path on a public
    server), so the server keeps serving. Use as ``@user_errors`` or ``@user_errors(public=...)``.
    """
    if fn is None:
        return functools.partial(user_errors, public=public)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ValueError as exc:
            raise gr.Error(str(exc), duration=None, print_exception=False) from exc  # not a fault; plain text: the
            # page shows a toast's message as written (frontend_patch.TOAST_TEXT), an API caller reads it so
        except Exception as exc:  # the page must get an answer, never a hung spinner
            log.exception("Handler %s failed", fn.__name__)
            raise gr.Error(unexpected_error_message(exc, public), duration=None,
                           print_exception=False) from exc  # logged once, above

    return wrapper


HEAVY_OUTPUTS = (PlotlyFigure, gr.Plot, gr.JSON, gr.Dataframe, gr.Image, gr.Gallery, gr.blocks.BlockContext)  # figures, tables,
# JSON, images and containers (a container's every component is copied with it)


def text_outputs(outputs) -> list:
    """The outputs an event shows its progress on: its text (Markdown, HTML), never a figure, table or JSON."""
    return [c for c in outputs if isinstance(c, (gr.Markdown, gr.HTML)) and not isinstance(c, PlotlyFigure)]


def progress_on_text(demo: gr.Blocks) -> int:
    """Every event of ``demo`` that would show its progress on a figure, table, JSON or container (its
    outputs, when it names no ``show_progress_on``) shows it on its text instead; how many were changed.

    Gradio 6's page refreshes the loading status of every progress target of every event that has run
    in it, at each status change of any event, finding each in the component tree and copying its
    value: a figure among them is copied again at every click in every tab (measured in
    docs/lab/benchmarks.md, "Progress on text"). An event that names its own targets keeps them.
    """
    changed = 0
    for block_fn in compat.event_handlers(demo):
        if block_fn.show_progress_on is None and any(isinstance(c, HEAVY_OUTPUTS) for c in block_fn.outputs):
            block_fn.show_progress_on = text_outputs(block_fn.outputs)
            changed += 1
    return changed


def progress_callback(progress: gr.Progress) -> Callable[[float, str], None]:
    """Adapt ``gr.Progress`` to the ``(fraction, message)`` callback the loaders take."""
    return lambda fraction, message: progress(fraction, desc=message)


# inline HTML, which a Markdown and an HTML component both show in bold
REFUSED_NOTE = "<strong>Refused</strong> (the message at the top of the page says why). Change the input and try again."


def clear_on_refusal(event, outputs: list, note: gr.Markdown | gr.HTML | None = None,
                     note_text: str = REFUSED_NOTE) -> None:
    """A refused request (a ``gr.Error``) leaves no answer of the input before on screen: gradio keeps the last
    answer under its "Error" badges, which a learner reads as the answer to what they just typed. When ``event``
    fails, every component of ``outputs`` is emptied (a ``gr.State`` too, so that a control moved afterwards has
    nothing old to redraw) and ``note``, one of them, says it was refused; the toast says why. Page events only:
    an API caller gets the error and nothing else."""
    def cleared() -> tuple:
        return tuple(note_text if box is note else None for box in outputs)

    # its own status replaces the "Error" badges, which would cover the note
    event.failure(cleared, None, list(outputs), api_visibility="private", queue=False, show_progress="minimal")


def visitor_of(request: gr.Request | None) -> str:
    """The address a request came from, as the HTTP door worked it out (:mod:`bertdemo.traffic`); "" when
    the door did not run (a handler called in-process)."""
    headers = getattr(request, "headers", None)
    return str(headers.get(VISITOR_HEADER, "")) if headers is not None else ""


def client_gone() -> Callable[[], bool]:
    """For the handler running now: a check that is True once its client has gone (page closed, API
    connection dropped), for the logic to call between batches.

    Gradio lets a running plain function finish whatever happens to its caller. When the event stream
    of a queued event disconnects, gradio marks the event no longer ``alive``; when the client cancels
    it (``/cancel``, gradio_client's ``job.cancel()``), the queue drops the event from its table. This
    reads both on the event the handler serves (found through gradio's per-call context). Outside a
    queued event, or where gradio keeps them differently, the check is always False and the request's
    deadline still ends the work (tests/e2e/test_hostile.py checks both on the installed gradio)."""
    events, event_id = compat.current_event()
    event = events.get(event_id) if events is not None else None
    if event is None or compat.event_alive(event) is None:
        return lambda: False
    return lambda: not compat.event_alive(event) or events.get(event_id) is not event


def labelled_choices(store: ModelStore) -> list[tuple[str, str]]:
    """The store's model choices, those that cannot load right now marked in their labels."""
    return availability.label_choices(store.choices(), store.default, store.hub)


def model_hint(public: bool) -> str:
    """The model box's hint: public servers load no folders, so they do not offer them."""
    if public:
        return "Pick one, or type the hub id of a masked-LM (e.g. bert-base-uncased)."
    return "Pick one, or type any hub id or local folder of a masked-LM."


def model_dropdown(store: ModelStore, label: str = "Model", **kwargs) -> gr.Dropdown:
    """A dropdown of curated models, the embedded one and run checkpoints; free text allowed."""
    return gr.Dropdown(
        choices=labelled_choices(store),
        value=store.default,
        label=label,
        allow_custom_value=True,
        info=model_hint(store.policy.public),
        **kwargs,
    )


def answered_line(requested: str, loaded) -> str:
    """The one line shown next to every result: the model that really answered."""
    return f"*Answered by* **{availability.answered_by(requested, loaded)}**"


def head_notice(loaded) -> str:
    """A persistent notice when a model cannot fill masks (no trained masked-LM head); "" otherwise."""
    return "" if loaded.has_mlm_head else f"> ⚠️ {no_head_message(loaded.name)}"


def model_status(store: ModelStore, public: bool = False) -> Callable:
    """The model picker's handler: ``(model, last) -> (status, notice, last, picker update)``.

    ``last`` (a per-page ``gr.State``) is the model that last loaded. When a choice fails to
    load, the status line says why and which model still answers, and the picker goes back to
    it (that change is then a no-op, so the message stays); no toast covers the status line.
    """

    def on_change(model: str, last: str | None, progress=gr.Progress()):
        requested = availability.requested_name(store, model)
        if last and requested == last:
            return gr.skip(), gr.skip(), last, gr.skip()
        try:
            loaded = store.get(requested, progress=progress_callback(progress))
        except ValueError as exc:
            if not last:
                raise gr.Error(str(exc), duration=None, print_exception=False) from exc
            still = store.get(last)
            status = (f"⚠️ **{literal(requested)}** could not load: {literal(str(exc))}  \n"
                      f"Still answering: **{availability.answered_by(last, still)}**")
            return status, head_notice(still), last, gr.update(value=last)
        status = f"Model in use: {model_summary(loaded)}  \n{answered_line(requested, loaded)}"
        return status, head_notice(loaded), requested, gr.skip()

    return user_errors(on_change, public=public)


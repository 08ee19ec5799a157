"""Shared UI glue: turning logic errors into page messages, and the model picker."""

from __future__ import annotations

import functools
import logging
from typing import Callable

import gradio as gr

from bertdemo.models.store import ModelStore

log = logging.getLogger(__name__)


def user_errors(fn: Callable) -> Callable:
    """Run a handler; a ``ValueError`` from the logic becomes a ``gr.Error`` with the same message.

    Any other exception is logged and shown as a short message, so the server keeps serving.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ValueError as exc:
            raise gr.Error(str(exc), duration=None) from exc
        except Exception as exc:  # noqa: BLE001 - the page must get an answer, never a hung spinner
            log.exception("Handler %s failed", fn.__name__)
            raise gr.Error(f"Something went wrong: {type(exc).__name__}: {exc}", duration=None) from exc

    return wrapper


def progress_callback(progress: gr.Progress) -> Callable[[float, str], None]:
    """Adapt ``gr.Progress`` to the ``(fraction, message)`` callback the loaders take."""
    return lambda fraction, message: progress(fraction, desc=message)


def model_dropdown(store: ModelStore, label: str = "Model", **kwargs) -> gr.Dropdown:
    """A dropdown of curated models, the embedded one and run checkpoints; free text allowed."""
    return gr.Dropdown(
        choices=store.choices(),
        value=store.default,
        label=label,
        allow_custom_value=True,
        info="Pick one, or type any hub id or local folder of a masked-LM.",
        **kwargs,
    )


def refresh_choices(store: ModelStore) -> Callable[[str], dict]:
    """A handler that refreshes a dropdown's choices (new checkpoints), keeping its value."""

    def refresh(value: str):
        return gr.update(choices=store.choices(), value=value)

    return refresh


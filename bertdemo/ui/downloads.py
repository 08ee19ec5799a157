"""A button that builds a file when pressed and downloads it in the same click (issue 54, walk D7).

A gradio ``DownloadButton`` downloads the file it already holds when it is pressed, then runs its click: a click
that builds the file gave nothing the first time (the class's CSV: 15 s of nothing, until a second press) and the
previous file the next. So such a file is built by a plain button into a hidden file holder, and once built (and
only then) the page itself hands it to the browser, in the same click; a ``note`` (a Markdown beside the button)
shows the build's progress while it runs and what was downloaded after. (A ``DownloadButton`` whose file is made
before it is pressed, e.g. when a run is picked, needs none of this.) Wiring only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

# the file just built, handed to the browser as a link it follows (a same-origin link with a name downloads)
DOWNLOAD_JS = """(file) => {
  const f = Array.isArray(file) ? file[0] : file;
  const url = f && (f.url || (f.path ? '/gradio_api/file=' + f.path : ''));
  if (!url) return;
  const a = document.createElement('a');
  a.href = url;
  a.download = f.orig_name || url.split('/').pop();
  document.body.appendChild(a);
  a.click();
  a.remove();
}"""


def button(label: str, elem_id: str, **kwargs: Any) -> tuple[gr.Button, gr.File]:
    """A button ``elem_id`` and its hidden file holder ``<elem_id>-file`` (build inside the layout)."""
    pressed = gr.Button(label, elem_id=elem_id, **kwargs)
    return pressed, holder(elem_id)


def holder(elem_id: str) -> gr.File:
    """The hidden file holder of the button ``elem_id``, on its own: outside a group that is shown later (a group's
    showing showed the holder too: an empty file box in the Class teacher's button row)."""
    return gr.File(visible="hidden", interactive=False, elem_id=f"{elem_id}-file")


def wire(pressed: gr.Button, fn: Callable, inputs: Sequence[Any] | Any, holder: gr.File,
         note: gr.Markdown | None = None, **kwargs: Any) -> Any:
    """``fn(*inputs)`` builds the file (its path; with ``note``: (path, the note's text)) when ``pressed`` is
    clicked; the page then downloads it. ``kwargs``: the click's (api_name, api_visibility, …). The click event."""
    outputs = [holder, *([note] if note is not None else [])]
    if note is not None:
        kwargs.setdefault("show_progress_on", [note])  # the holder is hidden: the note shows the build going
    event = pressed.click(fn, inputs, outputs, **kwargs)
    event.success(None, holder, None, js=DOWNLOAD_JS, api_visibility="private", show_progress="hidden")
    return event

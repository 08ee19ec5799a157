"""A tab's work sent when the tab is on screen, not with every page open.

Each event a page open sends is a queue round trip the server pays for every visitor (30 phones opening a
teacher's link at once), and a tab the link does not show needs none of its answers yet. A tab's first answer
therefore hangs on a hidden box, :func:`model_shown`: the box holds the model the tab was last shown with, and
its ``change`` (the server work) fires only when that value changes. It is written in the page alone, by the
tab's ``select`` (a click, or a deep link opening the tab) and by a change of the Model box while the tab is on
screen; writing the value it already holds sends nothing. So the work runs the first time the tab is shown and
again when it is shown with another model — never for a tab the visitor has not opened, never again when they
come back to it. A page that opens on the tab itself (the first tab, a link to it) writes the box from its own
load event (:mod:`bertdemo.ui.deep_links`).
"""

from __future__ import annotations

import json

import gradio as gr

SHOWN = "shown:"  # the box's value: this, then the model's name (never empty, so a first show always changes it)


def shown_value(model: object) -> str:
    """What the box holds once its tab is on screen with ``model`` (as the tab's select writes it)."""
    return f"{SHOWN}{model or ''}"


def _on_screen_js(tab_id: str) -> str:
    """JS ``(model, held) -> held value``: the model when the tab ``tab_id`` is the one shown, else what it held."""
    return ("(model, held) => { const b = [...document.querySelectorAll('button[role=tab]')].find("
            f"b => b.dataset.tabId === {json.dumps(tab_id)} && b.offsetParent !== null);"
            f" return b && b.getAttribute('aria-selected') === 'true' ? {json.dumps(SHOWN)} + (model || '') : held; }}")


def model_shown(tab: gr.Tab, tab_id: str, model_box: gr.Dropdown, elem_id: str) -> gr.Textbox:
    """A hidden box (build it inside the Blocks context) holding the Model box's value once the tab ``tab_id``
    is shown; wire the tab's first answer to its ``change``. Its value is the model the tab is shown with."""
    held = gr.Textbox("", visible=False, elem_id=elem_id)
    tab.select(None, model_box, held, js=f"(model) => {json.dumps(SHOWN)} + (model || '')", api_visibility="private",
               show_progress="hidden")
    model_box.change(None, [model_box, held], held, js=_on_screen_js(tab_id), api_visibility="private",
                     show_progress="hidden")
    return held

"""A tab's work sent when the tab is on screen, not with every page open.

Each event a page open sends is a queue round trip the server pays for every visitor (30 phones opening a
teacher's link at once), and a tab the link does not show needs none of its answers yet. A tab's first answer
therefore hangs on a hidden box, :func:`model_shown`: the box holds the model the tab was last shown with, and
its ``change`` (the server work) fires only when that value changes. It is written in the page alone, by the
tab's ``select`` (a click, or a deep link opening the tab) and by a change of the Model box while the tab is on
screen; writing the value it already holds sends nothing. So the work runs the first time the tab is shown and
again when it is shown with another model — never for a tab the visitor has not opened, never again when they
come back to it.

While the page opens, the page's first tab is on screen (and gradio sends it a ``select``) even when the link
opens another tab a moment later: until the deep link has been followed (:data:`LINK_FOLLOWED`, set by
:mod:`bertdemo.ui.deep_links` before it opens the link's tab) the box is left alone, and the deep link's own load
event writes the box of the tab the page opens on (the Learn tab: its first answer, in the same request count).
"""

from __future__ import annotations

import json

import gradio as gr

SHOWN = "shown:"  # the box's value: this, then the model's name (never empty, so a first show always changes it)
LINK_FOLLOWED = "bertdemoLinkFollowed"  # window flag: the page's deep link has been followed (its tab is shown)


def shown_value(model: object) -> str:
    """What the box holds once its tab is on screen with ``model`` (as the tab's select writes it)."""
    return f"{SHOWN}{model or ''}"


def _on_screen_js(tab_id: str | None) -> str:
    """JS ``(model, held) -> held value``: once the deep link has been followed, the model when the tab ``tab_id``
    is the one shown (``None``: the tab was just selected), else what the box held."""
    shown = "true" if tab_id is None else (
        "(() => { const b = [...document.querySelectorAll('button[role=tab]')].find("
        f"b => b.dataset.tabId === {json.dumps(tab_id)} && b.offsetParent !== null);"
        " return !!b && b.getAttribute('aria-selected') === 'true'; })()")
    return (f"(model, held) => window[{json.dumps(LINK_FOLLOWED)}] && {shown}"
            f" ? {json.dumps(SHOWN)} + (model || '') : held")


def link_followed_js() -> str:
    """A JS statement for the deep link's follow-up: the link is followed (tab selects count from now on)."""
    return f"window[{json.dumps(LINK_FOLLOWED)}] = true;"


def model_shown(tab: gr.Tab, tab_id: str, model_box: gr.Dropdown, elem_id: str) -> gr.Textbox:
    """A hidden box (build it inside the Blocks context) holding the Model box's value once the tab ``tab_id``
    is shown; wire the tab's first answer to its ``change``. Its value is the model the tab is shown with."""
    held = gr.Textbox("", visible=False, elem_id=elem_id)
    tab.select(None, [model_box, held], held, js=_on_screen_js(None), api_visibility="private",
               show_progress="hidden")
    model_box.change(None, [model_box, held], held, js=_on_screen_js(tab_id), api_visibility="private",
                     show_progress="hidden")
    return held

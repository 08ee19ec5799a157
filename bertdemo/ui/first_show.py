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
A tab the visitor opened themselves before the link was followed (a click within a second of opening) is written
when the link is followed (:func:`follow_up_js`): its first answer comes then, not never.
"""

from __future__ import annotations

import json

import gradio as gr

SUFFIX = "-shown"  # a tab's box: elem_id "<tab id>-shown"
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


def selected_tab_js() -> str:
    """A JS expression: the ``data-tab-id`` of the tab on screen (null while none is)."""
    return ("(() => { const b = [...document.querySelectorAll('button[role=tab]')].find("
            "b => b.offsetParent !== null && b.getAttribute('aria-selected') === 'true');"
            " return b ? b.dataset.tabId : null; })()")


def follow_up_js(tab_ids: list[str]) -> str:
    """JS for the deep link's follow-up, in a function of ``(value, model, ...held)`` (``held``: the boxes of
    ``tab_ids``, in order): a statement that sets :data:`LINK_FOLLOWED` and binds ``shown``, the values to return
    for the boxes: the box of the tab on screen becomes ``shown:<model>`` unless the link opens another tab
    (whose select then writes its own box); every other box keeps what it held."""
    return (link_followed_js() + f" const onScreen = {selected_tab_js()}; const tabIds = {json.dumps(tab_ids)};"
            " const opens = value && value.tab && value.tab !== onScreen;"
            f" const shown = held.map((h, i) => !opens && tabIds[i] === onScreen ? {json.dumps(SHOWN)} + (model || '')"
            " : h);")


def shown_boxes(components: dict[str, object]) -> dict[str, gr.Textbox]:
    """Each tab's box among ``components`` (elem_id -> component), by tab id."""
    return {elem_id[:-len(SUFFIX)]: box for elem_id, box in components.items() if elem_id.endswith(SUFFIX)
            and isinstance(box, gr.Textbox)}


def model_shown(tab: gr.Tab, tab_id: str, model_box: gr.Dropdown) -> gr.Textbox:
    """A hidden box (build it inside the Blocks context; elem_id ``<tab_id>-shown``) holding the Model box's value
    once the tab ``tab_id`` is shown; wire the tab's first answer to its ``change``. Its value is the model the
    tab is shown with."""
    held = gr.Textbox("", visible=False, elem_id=tab_id + SUFFIX)
    tab.select(None, [model_box, held], held, js=_on_screen_js(None), api_visibility="private",
               show_progress="hidden")
    model_box.change(None, [model_box, held], held, js=_on_screen_js(tab_id), api_visibility="private",
                     show_progress="hidden")
    return held

"""What the page does for a keyboard, a screen reader and a phone, beyond gradio's own markup: the head
script (``static/access.js``) and its CSS (``static/access.css``), and :data:`ANSWERS`, where each tab's main
button sends a phone's screen when it is pressed.

The script, for every gradio component of the page (it watches the page as gradio redraws it):

- the tab list follows the ARIA tabs pattern: ←/→ (and Home/End) move to the previous/next tab and open it;
  only the open tab is a Tab stop, so one Tab press goes on into the open tab;
- a dropdown's option list is no Tab stop of its own (Chromium makes a scrolling box one, and the list
  closes under the focus, which then fell to the page's body), and the list closes when the focus moves on to
  another control (gradio left it open over the buttons under it);
- a box that scrolls (a wide table on a phone) takes the focus, so a keyboard can scroll it;
- a toast's close button is its one control (gradio made the header that holds it a button too), and a press of a
  button of the page closes the error toasts before it (gradio gathered every error of a visit into one);
- an empty file or image box is read as a picture named by its box's label ("CSV: …: empty"; gradio's "Empty
  value" on a bare div), a control drawn without a name gets one (:data:`NAMES`), a text box with a copy button is
  named by its label, an upload area by its own words, and a JSON viewer's line numbers are not read;
- controls named without their context get it: an Examples table is named by its label, a file box's download
  links by their files (gradio: "2.5 KB ⇣"), a picture's download link by its button (which gradio put inside it: a
  control inside a control), a chart's toolbar by its chart ("Chart tools: …"), and the footer's buttons lose their
  icons' alt text that repeated their words ("Settings Settings");
- every chart drawn by :class:`~bertdemo.ui.plotly_figure.PlotlyFigure` gets its text twin: a table per trace of
  the numbers it shows (a heatmap's every cell, a bar's every bar; a long curve summarised), named by the chart's
  title (or its label), its panel's title and its own name, read by a screen reader, not shown;
- on a screen narrower than :data:`~bertdemo.ui.plotly_figure.NARROW_PX`, pressing a main button scrolls its
  answer (:data:`ANSWERS`) to the top of the screen.
"""

from __future__ import annotations

import json

from bertdemo.ui import static
from bertdemo.ui.plotly_figure import NARROW_PX

# main button's elem_id -> the element its answer starts with (scrolled to on a phone when it is pressed)
ANSWERS: dict[str, str] = {
    "learn-next": "#learn-question",
    "learn-prev": "#learn-question",
    "tok-run": "#tok-chips",
    "fm-run": "#fm-plot",
    "att-run": "#att-heatmap",
    "in-run": "#in-emb-info",
    "wic-run": "#wic-sim-info",
    "ml-run": "#ml-chips",
    "pt-start": "#pt-status",
    "ft-start": "#ft-status",
}

# a control gradio draws without a name -> its name for a screen reader
NAMES: dict[str, str] = {
    # gradio names every code box "Code input container" (an editor's name); ours are read-only code to copy
    ".code-panel .cm-content": "Python code that reproduces this view's numbers (read only)",
    "#att-overview .image-container > button": "Every layer × head's attention: pick a head to enlarge it above "
                                               "(or set Layer and Head; the heatmap's numbers are read out with it)",
    # the same picture before it is drawn (gradio's "Empty value": the box has no label of its own)
    "#att-overview .empty[aria-label]": "Every layer × head's attention: not drawn yet",
}


def script() -> str:
    """The page's accessibility script: the settings above, then ``access.js`` (a test page adds it as it is)."""
    settings = json.dumps({"answers": ANSWERS, "names": NAMES, "narrow": NARROW_PX})
    return f"window.BERTDEMO_ACCESS = {settings};\n{static.read('access.js')}"


def head() -> str:
    """The ``<script>`` for ``launch(head=...)``: :func:`script`."""
    return f"<script>{script()}</script>"


CSS = static.read("access.css")  # for launch(css=...)

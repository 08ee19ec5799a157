"""``PlotlyFigure``: the app's one plot component, a plotly figure drawn in place in the page.

A ``gr.HTML`` subclass (gradio's supported route for a custom widget: ``html_template``,
``css_template``, ``js_on_load``, ``head``) whose script (``static/plotly_figure.js``) keeps one
drawing element per component and draws each new figure into it with ``Plotly.react``, so plotly
updates the figure it holds instead of laying out a new one. plotly.js is the installed ``plotly``
package's own file, served by this app (:func:`plotly_js`): the page works offline.

Use it where ``gr.Plot`` would be used::

    fig = PlotlyFigure(label="Attention heatmap", elem_id="att-heatmap")
    button.click(make_figure, inputs, fig)        # the handler returns a plotly Figure (or dict, or None)
    fig.select(on_point, None, info)              # a click on a point: evt.index, evt.value

- **value**: a ``plotly.graph_objects.Figure``, a figure dict (``{"data": [...], "layout": {...}}``),
  its JSON text, or ``None`` (nothing drawn). An API client receives ``{"type": "plotly", "plot":
  "<figure JSON>"}``, as from ``gr.Plot``.
- **On a phone** (narrower than :data:`NARROW_PX`) the page fits the layout, never the data: a grid
  of subplots stacked into one column, a fixed width dropped, titles broken into lines that fit, a one-panel
  figure's colour bar at the plot's right edge (``colorbar`` x 1, anchored left) laid across the top of the plot.
  Wider again, the server's layout is drawn.
- **Hidden** (a closed accordion, another tab, ``visible=False``), a figure is drawn when it is shown.
- **lazy=True**: a new figure more than a screen's height from the viewport is drawn when it comes
  that close (a long page's figures far below what the learner reads wait until they scroll towards
  them); a figure already drawn is refitted wherever it is. ``lazy=0.5``: the same within half a
  screen's height (any fraction of a screen, in hundredths), for figures just below the first screen that
  a click would otherwise draw at once. Until it is drawn, a new figure's old picture is hidden (never
  shown as the answer to the new input).
- **select** event: a click on a point; the handler's ``evt: gr.SelectData`` has ``index`` (plotly's
  point index: ``[row, column]`` in a heatmap, an int in a bar or line trace) and ``value``
  (``{"x", "y", "z", "text", "curve"}``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from bertdemo.file_aliases import FileAliases
from bertdemo.ui import static

LAZY_CLASS = "pf-lazy"  # the block of a PlotlyFigure(lazy=True) (static/plotly_figure.js reads it)


def lazy_classes(lazy: bool | float) -> list[str]:
    """The block classes that tell the page script how near the viewport a new figure is drawn: none (at
    once), ``pf-lazy`` (within a screen's height) or ``pf-lazy pf-lazy-50`` (within half of one)."""
    if lazy is False or lazy is None:
        return []
    screens = 1.0 if lazy is True else float(lazy)
    if not 0 <= screens <= 10:
        raise ValueError(f"lazy is a number of screens' heights from 0 to 10, not {lazy!r}")
    percent = round(screens * 100)
    return [LAZY_CLASS] if percent == 100 else [LAZY_CLASS, f"{LAZY_CLASS}-{percent}"]
NARROW_PX = 640  # below this width (CSS px) a figure is fitted to one column (also static/page.css's breakpoint)


def plotly_js() -> Path:
    """The installed plotly package's own plotly.js (the version its figures' JSON is written for)."""
    spec = importlib.util.find_spec("plotly")  # found, not imported: building the page stays light
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the plotly package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))).resolve() / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly.min.js is missing from the installed plotly package ({path.parent.name}/)")
    return path


PLOTLY_ADDRESS = "bertdemo/plotly.min.js"  # where the page loads plotly.js (relative: under a proxy's path prefix too)


def serve_plotly_js() -> str:
    """Let gradio serve :func:`plotly_js` (and nothing else of the package); the ``<script>`` tag that loads it,
    from :data:`PLOTLY_ADDRESS` (:func:`file_aliases`: the page never names the server's folders).

    Called once, at import: gradio keeps its static paths for the process (``gr.set_static_paths``
    adds to them), and a component is built anew for every ``gr.update`` of it.
    """
    gr.set_static_paths([plotly_js()])
    return f'<script src="{PLOTLY_ADDRESS}"></script>'


def file_aliases() -> Middleware:
    """The middleware a server with PlotlyFigures needs (``launch(app_kwargs={"middleware": [...]})``): plotly.js
    at :data:`PLOTLY_ADDRESS` (:class:`bertdemo.file_aliases.FileAliases`)."""
    return Middleware(FileAliases, aliases={"/" + PLOTLY_ADDRESS: str(plotly_js())})


SCRIPT = static.read("plotly_figure.js")  # the component's js_on_load
STYLE = static.read("plotly_figure.css")  # its css_template
HEAD = serve_plotly_js()  # its head: plotly.js, from this app


def figure_json(value: Any) -> str | None:
    """``value`` (a plotly Figure, a figure dict or its JSON text, or None) as figure JSON, or None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if value.get("type") == "plotly" and isinstance(value.get("plot"), str):  # already this component's value
            return value["plot"]
        return json.dumps(value, separators=(",", ":"), default=_plain)
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    raise ValueError(f"a figure must be a plotly Figure, a figure dict or JSON, not {type(value).__name__}")


def _plain(obj: Any) -> Any:
    """Numbers and arrays json does not know (numpy scalars and arrays) as plain values."""
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


class PlotlyFigure(gr.HTML):
    """A plotly figure, drawn in place in the page; see this module's docstring for the value and events.

    ``label`` is shown above the figure (``show_label=False`` hides it); ``elem_id``, ``visible``,
    ``scale``, ``min_width``, ``elem_classes`` are as on any gradio component; ``lazy``: drawn only near
    the screen, True within a screen's height, a number within that many screens (see the module's docstring).
    """

    def __init__(self, value: Any = None, *, label: str | None = None, show_label: bool = True,
                 elem_id: str | None = None, elem_classes: list[str] | str | None = None,
                 visible: bool = True, scale: int | None = None, min_width: int | None = None,
                 render: bool = True, key: Any = None, lazy: bool | float = False) -> None:
        label_html = "{{#if label}}<span class='pf-label'>{{label}}</span>{{/if}}" if show_label else ""
        # the page script reads the lazy flag from the block's classes (an update's props name only what it changes)
        if lazy is not False:
            elem_classes = [*([elem_classes] if isinstance(elem_classes, str) else elem_classes or []),
                            *lazy_classes(lazy)]
        super().__init__(
            value, label=label, show_label=False, html_template=label_html, css_template=STYLE,
            js_on_load=SCRIPT, head=HEAD, apply_default_css=False,
            container=True, padding=False, elem_id=elem_id, elem_classes=elem_classes, visible=visible,
            scale=scale, min_width=min_width, render=render, key=key, narrow=NARROW_PX,
        )

    def postprocess(self, value: Any) -> dict | None:  # type: ignore[override]
        """A figure (Figure, dict, JSON or None) -> ``{"type": "plotly", "plot": JSON}`` (gr.Plot's API shape)."""
        plot = figure_json(value)
        return None if plot is None else {"type": "plotly", "plot": plot}

    def preprocess(self, payload: Any) -> dict | None:  # type: ignore[override]
        """The figure as a dict (``data``, ``layout``), or None."""
        plot = figure_json(payload)
        return None if plot is None else json.loads(plot)

    def api_info(self) -> dict[str, Any]:
        return {"type": "object", "description": "a plotly figure",
                "properties": {"type": {"type": "string", "const": "plotly"}, "plot": {"type": "string"}}}

    def example_payload(self) -> Any:
        return {"type": "plotly", "plot": '{"data":[],"layout":{}}'}

    def example_value(self) -> Any:
        return {"data": [], "layout": {}}

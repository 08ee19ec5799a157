"""The Gradio UI: one module per tab, each only wiring components to the pure functions.

Importing it loads gradio but never torch or transformers: the logic arrives after the page is
served (:mod:`bertdemo.lazy`). ``app.py`` applies :mod:`bertdemo.gradio_import` before this (it must run before gradio is imported,
so it lives outside this package).
"""

from bertdemo.ui.layout import build_app

__all__ = ["build_app"]

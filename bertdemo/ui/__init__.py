"""The Gradio UI: one module per tab, each only wiring components to the pure functions.

Importing it loads gradio (minus the work described in :mod:`bertdemo.ui.gradio_import`) but
never torch or transformers: the logic arrives after the page is served (:mod:`bertdemo.ui.lazy`).
"""

from bertdemo.ui.gradio_import import skip_stub_rewrites

skip_stub_rewrites()

from bertdemo.ui.layout import build_app  # noqa: E402 - after the stub skipper

__all__ = ["build_app"]

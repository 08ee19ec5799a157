"""The Gradio UI: one module per tab, each only wiring components to the pure functions."""

from bertdemo.ui.layout import build_app

__all__ = ["build_app"]

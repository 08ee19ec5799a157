"""The model status line's words: which model, from where, its shape, on which device. Pure text."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bertdemo.models.store import LoadedModel


def model_summary(loaded: LoadedModel) -> str:
    """e.g. "**bert-base-uncased** (hub) — 12 layers · 12 heads · hidden 768 · cpu" (Markdown)."""
    layers, heads, hidden = loaded.shape
    text = f"**{loaded.name}** ({loaded.source}) — {layers} layers · {heads} heads · hidden {hidden} · {loaded.device.type}"
    return text if loaded.has_mlm_head else text + " · no trained masked-LM head"

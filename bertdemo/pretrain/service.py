"""Placeholder run service (replaced by the pretraining reshape)."""

from __future__ import annotations


class RunService:
    def __init__(self, settings) -> None:
        self.settings = settings

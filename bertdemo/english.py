"""Counts read as English, one noun form and one number format for every page: "1 word", "20,002 tokens".
Imports nothing, so the logic and the drawing modules both use it."""

from __future__ import annotations


def noun_for(n: int, noun: str, plural_noun: str | None = None) -> str:
    """``noun`` for 1, its plural otherwise ("word", "words")."""
    return noun if n == 1 else (plural_noun or noun + "s")


def plural(n: int, noun: str, plural_noun: str | None = None) -> str:
    """"1 word", "2 words", "20,002 tokens": counts as English, numbers formatted one way."""
    return f"{n:,} {noun_for(n, noun, plural_noun)}"

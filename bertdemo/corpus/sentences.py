"""Sentences of the embedded Wikipedia summaries: a small rule-based splitter, the same for every task.

A sentence ends at ``.``, ``!`` or ``?`` followed by white space and a capital letter, a digit or an
opening quote / bracket, unless the word before the stop is an abbreviation (``St.``, ``Dr.``, ``c.``,
``U.S.``, an initial such as ``J.``); a line break also ends one. White space (non-breaking spaces and
the double spaces left where the summaries dropped formulas) is collapsed to single spaces.
Torch-free.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    "st mr mrs ms dr jr sr sgt lt col capt maj cpl gen adm no vs etc inc ltd co mt ft gen gov sen rev prof approx ca c b d fl lit "
    "e.g i.e u.s u.k a.d b.c jan feb mar apr aug sept sep oct nov dec est op cf al".split()
)
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“'‘(\[])")


def normalise_space(text: str) -> str:
    """``text`` with every run of white space (non-breaking included) turned into one space, trimmed."""
    return " ".join(text.split())


def _ends_with_abbreviation(chunk: str) -> bool:
    last = chunk.rsplit(" ", 1)[-1].rstrip(".!?").lstrip("(\"'“‘").lower()
    if not chunk.endswith("."):
        return False
    return last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()) or bool(re.fullmatch(r"(\w\.)+\w", last))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order (white space normalised, empty ones dropped)."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = normalise_space(line)
        if not line:
            continue
        pending = ""
        for chunk in _BOUNDARY.split(line):
            pending = f"{pending} {chunk}" if pending else chunk
            if not _ends_with_abbreviation(pending):
                sentences.append(pending)
                pending = ""
        if pending:
            sentences.append(pending)
    return sentences


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` ("" when it has none)."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    parts = split_sentences(line)
    return parts[0] if parts else ""

"""The probe sentences a run tracks, and what their answers say about where the model stands.

The default probes are decided by the words next to the gap, not by knowledge of the world, so a tiny
model can get them right within minutes: each was checked on the embedded corpus, where the n-gram
guesser that uses both neighbours ranks the expected word in its top 5 and word frequency alone does
not (tests/test_probes.py). The learner's own probe (``probe_text`` with ``probe_expected``) is
tracked beside them. Each is followed as the rank of its expected word at every evaluation.

Plateau: while the model answers (nearly) the same top-5 for every probe, it has learned word
frequencies and not yet to look at the neighbours (:func:`answers_alike`). Torch-free.
"""

from __future__ import annotations

import itertools

from bertdemo.limits import MAX_EXPECTED_CHARS

# (sentence with one [MASK], the word local context decides there)
DEFAULT_PROBES: tuple[tuple[str, str], ...] = (
    ("He was born [MASK] London.", "in"),
    ("She [MASK] born in 1950.", "was"),
    ("The United [MASK] of America.", "states"),
    ("He lives in New [MASK] City.", "york"),
    ("It was the Second World [MASK].", "war"),
    ("It is one of the [MASK] cities in the world.", "largest"),
)
IN_TOP = 5  # a probe "comes right" when its word enters the top 5
PLATEAU_OVERLAP = 0.6  # mean share of top-5 words two probes have in common, at or above which answers are alike
PLATEAU_TEXT = ("The model answers the same words for every sentence: it has not learned to look at "
                "neighbours yet.")


def validate_expected(word: str) -> str:
    """The expected word of a probe: "" (none) or one word of at most MAX_EXPECTED_CHARS characters
    without spaces; ValueError otherwise. (Whether it is one vocabulary entry is checked with the
    tokenizer when the probe is asked: a word that is not gets no rank.)"""
    word = (word or "").strip()
    if len(word) > MAX_EXPECTED_CHARS:
        raise ValueError(f"The expected word is {len(word):,} characters; use at most {MAX_EXPECTED_CHARS}.")
    if any(ch.isspace() for ch in word) or "[MASK]" in word.upper():
        raise ValueError("The expected word must be one word (the answer at the probe's first [MASK]), e.g. 'in'.")
    return word


def tracked_probes(own_text: str, own_expected: str) -> list[tuple[str, str, bool]]:
    """(sentence, expected word, is the learner's own) of every probe a run tracks: the defaults, then
    the learner's own unless it is one of them."""
    probes = [(text, expected, False) for text, expected in DEFAULT_PROBES]
    if own_text and (own_text, own_expected) not in DEFAULT_PROBES:
        probes.append((own_text, own_expected, True))
    return probes


def answers_alike(top5s: list[list[str]]) -> bool:
    """Whether these top-5 lists (one per probe, at least three) are nearly the same: on average two
    of them share at least PLATEAU_OVERLAP of their words."""
    sets = [set(words) for words in top5s if words]
    if len(sets) < 3:
        return False
    pairs = list(itertools.combinations(sets, 2))
    shared = sum(len(a & b) / max(len(a), len(b)) for a, b in pairs) / len(pairs)
    return shared >= PLATEAU_OVERLAP

"""The app's sentence splitter as notebook code: the very source of :mod:`bertdemo.corpus.sentences`
(read with ``inspect``), so a snippet that splits the corpus cuts it where the page does."""

from __future__ import annotations

import inspect

from bertdemo.corpus import sentences


def splitter_code() -> str:
    """Python lines defining ``split_sentences(text)`` exactly as the app's (needs ``import re``)."""
    constants = (f"_ABBREVIATIONS = frozenset({sorted(sentences._ABBREVIATIONS)!r})\n"
                 f"_BOUNDARY = re.compile({sentences._BOUNDARY.pattern!r})\n\n")
    functions = [sentences.normalise_space, sentences._ends_with_abbreviation, sentences.split_sentences]
    return ("# the app's sentence splitter: . ! ? before a capital, digit or opening quote, or a line break, ends a\n"
            "# sentence, unless the word before the stop is an abbreviation (St., c., J., U.S.)\n"
            + constants + "\n".join(inspect.getsource(f) for f in functions))

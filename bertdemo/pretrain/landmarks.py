"""Loss landmarks: what simple guessers built from the run's own corpus score on the held-out [MASK]s.

A learner reads a loss curve against these lines: where the model stands among guessers that
know only word frequencies, only the word before the gap, or the words on both sides of it.

* uniform: every vocabulary entry alike, ln V nats.
* unigram ("knows which words are common"): word counts over the training blocks.
* left neighbour ("uses the word before"): counts of (word before, word), an interpolated bigram.
* both neighbours ("uses both neighbours"): counts of (word before, word, word after), an
  interpolated trigram around the gap.

Every level is interpolated with the one below by Witten-Bell (no tuned weight): with ``c`` the
count of a context and ``d`` the number of different words seen after it,
``P(w | ctx) = (c(ctx, w) + d · P_lower(w)) / (c + d)``; an unseen context falls back to the lower
level, whose own lower level is the uniform guess. A guesser sees what the model sees: a
neighbour that is itself a [MASK] is no context (the left-neighbour guesser then answers with word
frequencies; the two-sided one with the visible side alone). Counting is numpy over the cached
token blocks: seconds for the embedded corpus, bounded by :data:`MAX_COUNT_TOKENS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_COUNT_TOKENS = 4_000_000  # tokens of training blocks counted (a large upload counts its first ones)
LANDMARKS = ("uniform", "unigram", "left", "both")  # worst to best
LANDMARK_LABELS = {
    "uniform": "uniform guess",
    "unigram": "knows which words are common",
    "left": "uses the word before",
    "both": "uses both neighbours",
}


@dataclass(frozen=True)
class _Pairs:
    """Counts of (context, word) pairs: sorted keys ``context * V + word``, their counts, and per context
    (sorted ``contexts``) the number of occurrences and of different words."""

    keys: np.ndarray  # (P,) int64, sorted
    counts: np.ndarray  # (P,) int64
    contexts: np.ndarray  # (C,) int64, sorted
    context_total: np.ndarray  # (C,) occurrences of each context
    context_types: np.ndarray  # (C,) different words after each context

    @classmethod
    def count(cls, context: np.ndarray, word: np.ndarray, vocab_size: int) -> _Pairs:
        keys, counts = np.unique(context * vocab_size + word, return_counts=True)
        contexts, total = np.unique(context, return_counts=True)
        _, types = np.unique(keys // vocab_size, return_counts=True)  # same sorted contexts as above
        return cls(keys, counts, contexts, total, types)

    def lookup(self, context: np.ndarray, word: np.ndarray, vocab_size: int) -> tuple[np.ndarray, ...]:
        """(pair count, context count, context types) for each query; zeros where unseen."""
        return (_find(self.keys, self.counts, context * vocab_size + word),
                _find(self.contexts, self.context_total, context), _find(self.contexts, self.context_types, context))

    def row(self, context: int, vocab_size: int) -> tuple[np.ndarray, int, int]:
        """Dense counts of every word after ``context`` (V,), the context's count and its types."""
        lo, hi = np.searchsorted(self.keys, [context * vocab_size, (context + 1) * vocab_size])
        dense = np.zeros(vocab_size, dtype=np.float64)
        dense[self.keys[lo:hi] - context * vocab_size] = self.counts[lo:hi]
        total = _find(self.contexts, self.context_total, np.array([context]))[0]
        types = _find(self.contexts, self.context_types, np.array([context]))[0]
        return dense, int(total), int(types)


def _find(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``values`` at the positions of ``queries`` in the sorted ``keys``; 0 where a query is absent."""
    idx = np.searchsorted(keys, queries)
    idx = np.minimum(idx, max(len(keys) - 1, 0))
    found = (keys[idx] == queries) if len(keys) else np.zeros(len(queries), dtype=bool)
    return np.where(found, values[idx] if len(keys) else 0, 0)


def _interpolate(pair: np.ndarray, total: np.ndarray, types: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Witten-Bell: (c(ctx, w) + d · lower) / (c + d); the lower level where the context was never seen."""
    seen = total > 0
    return np.where(seen, (pair + types * lower) / np.maximum(total + types, 1), lower)


@dataclass(frozen=True)
class NgramCounts:
    """Word, (left, word), (word, right) and (left, word, right) counts of a corpus's blocks."""

    vocab_size: int
    unigram: np.ndarray  # (V,) count of each word as a predicted (non-special) token
    left: _Pairs  # context = the token before
    right: _Pairs  # context = the token after
    both: _Pairs  # context = left * V + right

    @property
    def n_tokens(self) -> int:
        return int(self.unigram.sum())

    def p_unigram(self) -> np.ndarray:
        """(V,) word frequencies interpolated with the uniform guess."""
        types = int((self.unigram > 0).sum())
        return (self.unigram + types / self.vocab_size) / max(self.n_tokens + types, 1)

    def log_probs(self, words: np.ndarray, left: np.ndarray | None, right: np.ndarray | None) -> dict[str, np.ndarray]:
        """ln P of each word under every landmark; ``left`` / ``right``: the neighbour ids, -1 where the
        neighbour is hidden (a [MASK]) or absent. Returns {landmark: (M,) log-probabilities}."""
        V = self.vocab_size
        words = np.asarray(words, dtype=np.int64)
        n = len(words)
        left = np.full(n, -1, np.int64) if left is None else np.asarray(left, dtype=np.int64)
        right = np.full(n, -1, np.int64) if right is None else np.asarray(right, dtype=np.int64)
        has_l, has_r = left >= 0, right >= 0
        l, r = np.where(has_l, left, 0), np.where(has_r, right, 0)
        p1 = self.p_unigram()[words]
        p_left = _interpolate(*self.left.lookup(l, words, V), p1)
        p_left = np.where(has_l, p_left, p1)
        p_right = np.where(has_r, _interpolate(*self.right.lookup(r, words, V), p1), p1)
        p_both = _interpolate(*self.both.lookup(l * V + r, words, V), p_left)
        p_both = np.where(has_l & has_r, p_both, np.where(has_l, p_left, p_right))
        return {"uniform": np.full(n, -math.log(V)), "unigram": np.log(p1), "left": np.log(p_left),
                "both": np.log(p_both)}

    def distribution(self, left: int = -1, right: int = -1) -> dict[str, np.ndarray]:
        """(V,) probabilities of every word at one gap under the unigram and both-neighbour guessers
        (``left`` / ``right``: neighbour ids, -1 when hidden): what they would answer for a probe."""
        V = self.vocab_size
        p1 = self.p_unigram()
        p_left = p1
        if left >= 0:
            p_left = _interpolate(*self.left.row(left, V), p1)
        if left >= 0 and right >= 0:
            p_both = _interpolate(*self.both.row(left * V + right, V), p_left)
        elif right >= 0:
            p_both = _interpolate(*self.right.row(right, V), p1)
        else:
            p_both = p_left
        return {"unigram": p1, "left": p_left, "both": p_both}


def count_ngrams(blocks: np.ndarray, vocab_size: int, special_ids: list[int] | np.ndarray,
                 max_tokens: int = MAX_COUNT_TOKENS) -> NgramCounts:
    """Counts over (N, T) token blocks, n-grams within a block; a predicted word is never a special
    token (its neighbours may be: [CLS], [SEP]). Only the first ``max_tokens`` tokens' blocks count."""
    blocks = np.asarray(blocks)
    rows = max(1, max_tokens // max(blocks.shape[1], 1))
    blocks = blocks[:rows].astype(np.int64)
    left, word, right = blocks[:, :-2].ravel(), blocks[:, 1:-1].ravel(), blocks[:, 2:].ravel()
    keep = ~np.isin(word, np.asarray(special_ids, dtype=np.int64))
    left, word, right = left[keep], word[keep], right[keep]
    return NgramCounts(vocab_size, np.bincount(word, minlength=vocab_size).astype(np.int64),
                       _Pairs.count(left, word, vocab_size), _Pairs.count(right, word, vocab_size),
                       _Pairs.count(left * vocab_size + right, word, vocab_size))


def landmark_losses(counts: NgramCounts, input_ids: np.ndarray, labels: np.ndarray, mask_id: int) -> dict[str, float]:
    """Mean -ln P of the true words at the predicted positions of a masked held-out set, per landmark.

    ``input_ids`` (N, T): what the model reads ([MASK] at the predicted positions); ``labels`` (N, T):
    the true id there, -100 elsewhere. A neighbour that is a [MASK] (or outside the block) is hidden."""
    input_ids, labels = np.asarray(input_ids, dtype=np.int64), np.asarray(labels, dtype=np.int64)
    rows, cols = np.nonzero(labels >= 0)
    if len(rows) == 0:
        raise ValueError("The held-out set has no predicted positions.")
    T = input_ids.shape[1]

    def neighbour(offset: int) -> np.ndarray:
        at = cols + offset
        inside = (at >= 0) & (at < T)
        ids = input_ids[rows, np.clip(at, 0, T - 1)]
        return np.where(inside & (ids != mask_id), ids, -1)

    logp = counts.log_probs(labels[rows, cols], neighbour(-1), neighbour(+1))
    return {name: float(-logp[name].mean()) for name in LANDMARKS}

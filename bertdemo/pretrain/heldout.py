"""The fixed held-out questions every evaluation asks: 15 % of the held-out tokens replaced by [MASK].

The same positions at every evaluation and for every run on the same held-out blocks, whatever its
training recipe (masking rate, 80/10/10 split, seed): each block's positions are drawn from a generator
seeded by that block's own tokens. Only [MASK] replacements (no kept or random tokens that could be
copied or spotted), so the loss says how well the model fills a gap, and runs trained with different
recipes stand on one scale. Numpy only: the n-gram landmarks score the very same questions.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

EVAL_RATE = 0.15  # share of a block's non-special tokens asked
EVAL_TOKENS = 20_480  # held-out tokens read per evaluation (160 blocks of 128): ~3,000 questions
IGNORE_INDEX = -100


@dataclass(frozen=True)
class HeldoutQuestions:
    """Held-out blocks with their fixed [MASK]s."""

    input_ids: np.ndarray  # (N, T) int64: the blocks with [MASK] at the asked positions
    labels: np.ndarray  # (N, T) int64: the true id at the asked positions, -100 elsewhere

    @property
    def count(self) -> int:
        return int((self.labels != IGNORE_INDEX).sum())


def data_seed(blocks: np.ndarray) -> int:
    """A seed from tokens (CRC-32 of their bytes as int64): the same block, the same masks."""
    return zlib.crc32(np.ascontiguousarray(blocks, dtype=np.int64).tobytes())


def heldout_questions(heldout: np.ndarray, special_ids: list[int] | np.ndarray, mask_id: int,
                      rate: float = EVAL_RATE, max_tokens: int = EVAL_TOKENS) -> HeldoutQuestions:
    """The first ``max_tokens`` tokens' worth of held-out blocks (at least one block), each with
    ``round(rate × its non-special tokens)`` (at least one) positions replaced by [MASK]."""
    heldout = np.asarray(heldout, dtype=np.int64)
    if heldout.ndim != 2 or len(heldout) == 0:
        raise ValueError("The held-out split has no blocks.")
    blocks = heldout[: max(1, max_tokens // heldout.shape[1])]
    candidates = ~np.isin(blocks, np.asarray(special_ids, dtype=np.int64))  # (N, T)
    draws = np.stack([np.random.default_rng(data_seed(row)).random(len(row)) for row in blocks])  # per block
    scores = np.where(candidates, draws, np.inf)
    labels = np.full_like(blocks, IGNORE_INDEX)
    order = np.argsort(scores, axis=1, kind="stable")
    for i, n in enumerate(candidates.sum(axis=1)):
        chosen = order[i, : max(1, round(rate * int(n)))] if n else order[i, :0]
        labels[i, chosen] = blocks[i, chosen]
    input_ids = np.where(labels != IGNORE_INDEX, mask_id, blocks)
    return HeldoutQuestions(input_ids, labels)

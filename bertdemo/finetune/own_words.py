"""Word labels as the own-data runs read them (:mod:`bertdemo.finetune.own_eval`): one example is a sentence,
each of its words with a tag; the model is a ``BertForTokenClassification`` trained as the names task trains
one (:mod:`bertdemo.finetune.token_engine`: each word's tag on its first piece, -100 on the rest, each word's
prediction read at its first piece). Scores are over words: accuracy and macro-F1 over the tags. The landmarks,
on the same folds or split: every word the training part's most common tag (majority), and per-word memory (the
tag each word, lower-cased, had most often in the training part; an unseen word gets the majority tag).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from transformers import BertForTokenClassification

from bertdemo.finetune.own_data import OwnWords, shown_codes
from bertdemo.finetune.scores import scores
from bertdemo.finetune.token_engine import (
    IGNORE,
    NO_PIECE,
    Encoded,
    _batch,
    _piece_labels,
    align,
    length_batches,
    pieceless,
    predict_words,
)

CPU = torch.device("cpu")
MAX_PIECES = 512  # the model's positions: a sentence is never cut (a cut word would have no prediction)
# pieces one forward holds, padding included: a default sentence-label batch's (16 examples of 48 pieces). Never-cut
# sentences of up to 200 words made batches of 16 × ~200 pieces: the largest legal paste (905 × 199 words) took a
# fine-tune from 0.57 to 2.39 GB; in parts of 768 pieces to 1.35 GB (2,048: 1.88 GB), at the same speed a sentence
MAX_BATCH_PIECES = 16 * 48


def majority_tag(tags: Sequence[Sequence[int]]) -> int:
    """The most common tag over these sentences' words (the smallest index on a tie)."""
    counts = Counter(t for row in tags for t in row)
    return min(counts, key=lambda t: (-counts[t], t))


def word_memory(words: Sequence[Sequence[str]], tags: Sequence[Sequence[int]]) -> dict[str, int]:
    """Each word (lower-cased) -> the tag it had most often in these sentences (the more common tag overall
    on a tie, then the smaller index)."""
    overall = Counter(t for row in tags for t in row)
    seen: dict[str, Counter] = {}
    for ws, ts in zip(words, tags, strict=True):
        for w, t in zip(ws, ts, strict=True):
            seen.setdefault(w.lower(), Counter())[t] += 1
    return {w: min(c, key=lambda t: (-c[t], -overall[t], t)) for w, c in seen.items()}


class Words:
    """Word labels for :func:`bertdemo.finetune.own_eval.cross_validate` and ``split_and_finetune`` (the same
    methods as :class:`bertdemo.finetune.own_eval.Sentences`)."""

    unit = "word"  # what one label is on
    model_class = BertForTokenClassification
    landmark_names = ("majority", "word_memory")
    chosen_on = "validation macro-F1"

    def __init__(self, data: OwnWords) -> None:
        self.data = data
        self.strata: list[int] = [0] * len(data)  # no sentence label: folds and splits are seeded shuffles
        self.groups: list[int] = data.groups()  # copies of one sentence: held out together
        self.items: list[Encoded] = []
        self.given = len(data)

    def prepare(self, tokenizer, max_len: int, positions: int) -> None:
        """Each sentence's pieces with its tags on each word's first piece, never cut: ``max_len`` does not apply
        (a cut word would have no prediction); a sentence longer than the model's ``positions`` (at most
        :data:`MAX_PIECES`) is refused, ValueError naming it."""
        limit = min(MAX_PIECES, positions)
        self.items = align(tokenizer, self.data.words, self.data.tags, limit)
        for number, item in enumerate(self.items, 1):
            if min(item.first_piece) < 0:
                words = self.data.words[number - 1]
                empty = pieceless(tokenizer, words, item)
                if empty is not None:
                    raise ValueError(f"sentence {number:,}, word {empty + 1} ({shown_codes(words[empty])!r}) "
                                     f"{NO_PIECE}; remove its line.")
                raise ValueError(f"sentence {number:,} (from {self.data.words[number - 1][0][:40]!r}) has more than "
                                 f"{limit} pieces, the model's limit: split it with a blank line.")

    def read_start(self, model: torch.nn.Module, pad_id: int, **reading: Any) -> None:
        """Nothing to read from the frozen start: the feature-based landmark is scored for sentence labels (every
        sentence is used: :attr:`given` is their number)."""

    def loss_of(self, model: torch.nn.Module, rows: Sequence[int], pad_id: int) -> Callable[[list[int]], torch.Tensor]:
        """``loss_of(indices into rows)``: the batch's cross-entropy over its words' first pieces. A batch over
        :data:`MAX_BATCH_PIECES` is computed in parts (:func:`~bertdemo.finetune.token_engine.length_batches`),
        each part's loss weighted by its share of the labelled pieces and backpropagated at once but the last,
        which is returned with the others' value added: the caller's backward then completes the whole batch's
        gradients (the parts' sum), and the value is the whole batch's loss."""
        items = [self.items[i] for i in rows]

        def part_loss(part: list[Encoded], weight: float) -> torch.Tensor:
            return model(**_batch(part, pad_id, CPU), labels=_piece_labels(part, CPU)).loss * weight

        def loss(idx: list[int]) -> torch.Tensor:
            batch = [items[i] for i in idx]
            parts = [[batch[i] for i in part] for part in length_batches(batch, len(batch), MAX_BATCH_PIECES)]
            if len(parts) == 1:
                return part_loss(batch, 1.0)
            labelled = [sum(label != IGNORE for item in part for label in item.piece_labels) for part in parts]
            done = 0.0
            for part, count in zip(parts[:-1], labelled):
                value = part_loss(part, count / sum(labelled))
                value.backward()  # its gradients kept: the optimiser step after the last part clears them
                done += float(value.detach())
            return part_loss(parts[-1], labelled[-1] / sum(labelled)) + done

        return loss

    def predict(self, model: torch.nn.Module, rows: Sequence[int], pad_id: int) -> list[np.ndarray]:
        """Each sentence's predicted tag ids, one a word, read at its first piece (the model's own forward, in
        batches of at most :data:`MAX_BATCH_PIECES` pieces)."""
        probs = predict_words(model, [self.items[i] for i in rows], pad_id, CPU, max_pieces=MAX_BATCH_PIECES).probs
        return [p.argmax(-1) for p in probs]

    def score(self, rows: Sequence[int], predicted: Sequence[Sequence[int]]) -> tuple[float, float]:
        """(accuracy, macro-F1 over the tags) of every word of these sentences."""
        true = [t for i in rows for t in self.data.tags[i]]
        return scores(true, [int(t) for row in predicted for t in row])

    def shown(self, predicted: Sequence[int]) -> list[str]:
        return [self.data.names[int(t)] for t in predicted]

    def landmarks(self, train: Sequence[int], rows: Sequence[int]) -> dict[str, list]:
        """Each landmark's tags for ``rows``' words, learned from ``train``."""
        tags = [self.data.tags[i] for i in train]
        common = majority_tag(tags)
        memory = word_memory([self.data.words[i] for i in train], tags)
        return {"majority": [[common] * len(self.data.words[i]) for i in rows],
                "word_memory": [[memory.get(w.lower(), common) for w in self.data.words[i]] for i in rows]}

    def split_landmarks(self, train: Sequence[int], val: Sequence[int], test: Sequence[int],
                        stopped: Callable[[], bool] = lambda: False) -> dict[str, dict]:
        """The landmarks' validation and test macro-F1 (nothing to choose; counting, quick: no stop to look for)."""
        marks = {part: self.landmarks(train, rows) for part, rows in (("validation", val), ("test", test))}
        return {name: {part: self.score(rows, marks[part][name])[1]
                       for part, rows in (("validation", val), ("test", test))} for name in self.landmark_names}

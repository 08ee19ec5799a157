"""Yardsticks for the topic task, computed from the same split a fine-tuning run uses.

* :func:`majority_baseline`: always answer the training split's most common topic.
* :func:`bag_of_words_baseline`: scikit-learn's multinomial ``LogisticRegression`` on which words a text
  contains (``CountVectorizer(binary=True)`` over lower-cased ``[a-z0-9]+`` words seen in at least two
  training texts); deterministic; the inverse penalty ``C`` is chosen among :data:`BOW_C_GRID` on
  validation accuracy.
* :func:`frozen_probe`: a linear head (:mod:`bertdemo.finetune.linear_head`) on a frozen model's
  pooled features at every layer (:mod:`bertdemo.finetune.features`); its best layer on validation is
  the landmark.

Everything is selected on validation; the test scores are the ones to draw. Each returns small frozen
dataclasses of plain numbers (accuracy and macro-F1 in [0, 1]).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from bertdemo.finetune.features import POOLINGS, ActivationCache
from bertdemo.finetune.linear_head import fit_choosing_c, train_linear_heads
from bertdemo.finetune.scores import scores

if TYPE_CHECKING:
    from datasets import DatasetDict

Progress = Callable[[float, str], None]
BOW_MIN_COUNT = 2
BOW_C_GRID = (0.1, 1.0, 10.0)
BOW_TOKEN_PATTERN = r"[a-z0-9]+"


@dataclass(frozen=True)
class Baseline:
    """One landmark for the accuracy chart."""

    name: str  # what to show, e.g. "bag of words"
    val_accuracy: float
    val_macro_f1: float
    test_accuracy: float
    test_macro_f1: float
    note: str = ""  # how it was computed, in a few words


@dataclass(frozen=True)
class LayerProbe:
    """A linear probe of every layer of one frozen model (index 0: the embeddings, l: layer l's output)."""

    model_name: str
    pooling: str  # "mean" (over real tokens) or "cls"
    val_accuracy: tuple[float, ...]
    val_macro_f1: tuple[float, ...]
    test_accuracy: tuple[float, ...]
    test_macro_f1: tuple[float, ...]
    n_train: int

    @property
    def best_layer(self) -> int:
        """The layer with the highest validation accuracy (the lowest such layer on a tie)."""
        return int(np.argmax(self.val_accuracy))

    def baseline(self, layer: int | None = None) -> Baseline:
        """The probe of ``layer`` (default: the best on validation) as a landmark."""
        layer = self.best_layer if layer is None else layer
        return Baseline(f"frozen {self.model_name}, layer {layer} ({self.pooling})", self.val_accuracy[layer],
                        self.val_macro_f1[layer], self.test_accuracy[layer], self.test_macro_f1[layer],
                        f"linear probe on {self.n_train:,} training examples")


def _labels(splits: DatasetDict, split: str) -> np.ndarray:
    return np.asarray(splits[split]["label"], dtype=np.int64)


def majority_baseline(splits: DatasetDict) -> Baseline:
    """Always the training split's most common label."""
    train = _labels(splits, "train")
    top = int(np.bincount(train).argmax())
    names = splits["train"].features["label"].names
    val, test = _labels(splits, "validation"), _labels(splits, "test")
    va, vf = scores(val, np.full_like(val, top))
    ta, tf = scores(test, np.full_like(test, top))
    return Baseline("majority class", va, vf, ta, tf, f"always {names[top]!r}")


def per_topic(train, n: int):
    """The first ``n`` rows of each label of ``train`` (a ``Dataset``), in their order."""
    taken = [0] * train.features["label"].num_classes
    keep = []
    for i, label in enumerate(train["label"]):
        if taken[label] < n:
            taken[label] += 1
            keep.append(i)
    return train.select(keep)


def bag_of_words_baseline(splits: DatasetDict, max_per_topic: int | None = None) -> Baseline:
    """Logistic regression on the words each text contains (see the module notes), trained on the whole
    training split or on its first ``max_per_topic`` examples of each topic."""
    from sklearn.feature_extraction.text import CountVectorizer

    train = splits["train"] if max_per_topic is None else per_topic(splits["train"], max_per_topic)
    vectorizer = CountVectorizer(binary=True, min_df=BOW_MIN_COUNT, token_pattern=BOW_TOKEN_PATTERN)
    x = vectorizer.fit_transform(train["text"])
    xv, xt = (vectorizer.transform(splits[s]["text"]) for s in ("validation", "test"))
    y = np.asarray(train["label"], dtype=np.int64)
    val_y, test_y = _labels(splits, "validation"), _labels(splits, "test")
    head, c, (va, vf) = fit_choosing_c(x, y, xv, val_y, BOW_C_GRID)
    ta, tf = scores(test_y, head.predict(xt))
    return Baseline("bag of words", va, vf, ta, tf, f"logistic regression on {len(vectorizer.vocabulary_):,} words, "
                                                    f"C {c:g} (chosen on validation), {x.shape[0]:,} training texts")


def frozen_probe(model_name: str, model: torch.nn.Module, tokenizer, splits: DatasetDict, cache: ActivationCache,
                 max_train: int | None = None, progress: Progress | None = None,
                 weights_key: object = None) -> dict[str, LayerProbe]:
    """A linear probe of every layer of the frozen ``model`` on the topic task, for each pooling
    (``{"mean": ..., "cls": ...}``). ``max_train``: use only the first that many training rows (a
    smaller, faster probe); validation and test are always whole. Features come from ``cache`` (under
    ``weights_key``, see :meth:`ActivationCache.get`)."""
    train = splits["train"] if max_train is None else splits["train"].select(range(min(max_train, len(splits["train"]))))
    texts = list(train["text"]) + list(splits["validation"]["text"]) + list(splits["test"]["text"])
    a = len(train)
    b = a + len(splits["validation"])
    feats = cache.get(model_name, model, tokenizer, texts, progress=progress, weights_key=weights_key)
    y = np.asarray(train["label"], dtype=np.int64)
    val_y, test_y = _labels(splits, "validation"), _labels(splits, "test")
    probes = {}
    for pooling in POOLINGS:
        f = feats.pooled(pooling)
        heads = train_linear_heads(f[:, :a], y, f[:, a:b], val_y, f[:, b:], test_y)
        probes[pooling] = LayerProbe(model_name, pooling, tuple(h.val_accuracy for h in heads),
                                     tuple(h.val_macro_f1 for h in heads),
                                     tuple(h.test_accuracy for h in heads), tuple(h.test_macro_f1 for h in heads), a)
    return probes

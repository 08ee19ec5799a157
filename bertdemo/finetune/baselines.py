"""Yardsticks for the topic task, computed from the same split a fine-tuning run uses.

* :func:`majority_baseline`: always answer the training split's most common topic.
* :func:`bag_of_words_baseline`: multinomial logistic regression on which words a text contains
  (lower-cased ``[a-z0-9]+`` words seen at least twice in training; binary features), L2-penalised,
  trained full-batch with L-BFGS from zero weights — deterministic; the penalty is chosen among
  :data:`BOW_L2_GRID` on validation accuracy.
* :func:`frozen_probe`: a linear head (:mod:`bertdemo.finetune.linear_head`) on a frozen model's
  pooled features at every layer (:mod:`bertdemo.finetune.features`); its best layer on validation is
  the landmark.

Each returns small frozen dataclasses of plain numbers (accuracy and macro-F1 in [0, 1]).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from bertdemo.finetune.features import POOLINGS, ActivationCache
from bertdemo.finetune.linear_head import scores, train_linear_heads

if TYPE_CHECKING:
    from datasets import DatasetDict

Progress = Callable[[float, str], None]
BOW_MIN_COUNT = 2
BOW_L2_GRID = (1e-5, 1e-4, 1e-3)
BOW_MAX_ITER = 100
_WORD = re.compile(r"[a-z0-9]+")


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


def words(text: str) -> list[str]:
    """The bag-of-words tokens of ``text``: lower-cased runs of letters and digits."""
    return _WORD.findall(text.lower())


def _bow_matrix(texts: Sequence[str], vocab: dict[str, int]) -> torch.Tensor:
    rows, cols = [], []
    for i, text in enumerate(texts):
        ids = sorted({vocab[w] for w in words(text) if w in vocab})
        rows.extend([i] * len(ids))
        cols.extend(ids)
    index = torch.tensor([rows, cols], dtype=torch.int64).reshape(2, -1)
    return torch.sparse_coo_tensor(index, torch.ones(len(rows)), (len(texts), len(vocab)),
                                   check_invariants=False).coalesce()


def _fit_bow(x: torch.Tensor, y: torch.Tensor, n_classes: int, l2: float) -> tuple[torch.Tensor, torch.Tensor]:
    w = torch.zeros(x.shape[1], n_classes, requires_grad=True)
    b = torch.zeros(n_classes, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=BOW_MAX_ITER, history_size=10, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(torch.sparse.mm(x, w) + b, y) + l2 * (w * w).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return w.detach(), b.detach()


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
    train = splits["train"] if max_per_topic is None else per_topic(splits["train"], max_per_topic)
    train_texts = list(train["text"])
    counts = Counter(w for text in train_texts for w in set(words(text)))
    vocab = {w: i for i, w in enumerate(sorted(w for w, c in counts.items() if c >= BOW_MIN_COUNT))}
    n_classes = splits["train"].features["label"].num_classes
    x = _bow_matrix(train_texts, vocab)
    y = torch.as_tensor(np.asarray(train["label"], dtype=np.int64))
    xv, xt = (_bow_matrix(list(splits[s]["text"]), vocab) for s in ("validation", "test"))
    val_y, test_y = _labels(splits, "validation"), _labels(splits, "test")
    best = None
    for l2 in BOW_L2_GRID:
        w, b = _fit_bow(x, y, n_classes, l2)
        va, vf = scores(val_y, (torch.sparse.mm(xv, w) + b).argmax(1).numpy())
        if best is None or va > best[0]:
            best = (va, vf, l2, w, b)
    va, vf, l2, w, b = best
    ta, tf = scores(test_y, (torch.sparse.mm(xt, w) + b).argmax(1).numpy())
    return Baseline("bag of words", va, vf, ta, tf,
                    f"logistic regression on {len(vocab):,} words, L2 {l2:g}, {len(train_texts):,} training texts")


def frozen_probe(model_name: str, model: torch.nn.Module, tokenizer, splits: DatasetDict, cache: ActivationCache,
                 max_train: int | None = None, progress: Progress | None = None) -> dict[str, LayerProbe]:
    """A linear probe of every layer of the frozen ``model`` on the topic task, for each pooling
    (``{"mean": ..., "cls": ...}``). ``max_train``: use only the first that many training rows (a
    smaller, faster probe); validation and test are always whole. Features come from ``cache``."""
    train = splits["train"] if max_train is None else splits["train"].select(range(min(max_train, len(splits["train"]))))
    texts = list(train["text"]) + list(splits["validation"]["text"]) + list(splits["test"]["text"])
    a = len(train)
    b = a + len(splits["validation"])
    feats = cache.get(model_name, model, tokenizer, texts, progress=progress)
    y = np.asarray(train["label"], dtype=np.int64)
    val_y, test_y = _labels(splits, "validation"), _labels(splits, "test")
    n_classes = splits["train"].features["label"].num_classes
    probes = {}
    for pooling in POOLINGS:
        f = feats.pooled(pooling)
        heads = train_linear_heads(f[:, :a], y, f[:, a:b], val_y, f[:, b:], test_y, n_classes)
        probes[pooling] = LayerProbe(model_name, pooling, tuple(h.val_accuracy for h in heads),
                                     tuple(h.val_macro_f1 for h in heads),
                                     tuple(h.test_accuracy for h in heads), tuple(h.test_macro_f1 for h in heads), a)
    return probes

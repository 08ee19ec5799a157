"""The paper's other way to use BERT (Devlin et al. 2019, §5.3 and Table 7, the feature-based approach), on a
learner's own sentences: the starting model stays frozen, its [CLS] vector is read once per sentence, and only a
logistic regression on top is trained — what a few dozen labelled sentences can usually support, where
fine-tuning every weight cannot.

The classifier is kept as a stock ``BertForSequenceClassification`` that gives the logistic regression's own
answers: the starting encoder untouched; its pooler (dense + tanh on [CLS], what the classifier reads) set to
:data:`POOLER_SCALE` × identity, where tanh is nearly straight, so the pooled vector is the [CLS] vector scaled
(tanh(0.1) = 0.0997: within 0.3 % for a value of 10); the standardisation and the regression's weights folded into
its ``classifier`` Linear layer. The features are read through that same pooler, so the saved folder's logits are
the regression's decision values, computed by stock transformers (:func:`keep_as_model`, tested against
:meth:`FrozenHead.predict`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from bertdemo.finetune.engine import evaluate

POOLER_SCALE = 0.01  # the pooler's dense weight: 0.01 × identity, bias 0 (tanh of a value under ~0.1: straight)
ABSENT = -1e4  # the logit of a label no training sentence had (never predicted)
CPU = torch.device("cpu")


def frozen_model(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` (a ``BertForSequenceClassification`` as built) with its pooler set to
    :data:`POOLER_SCALE` × identity: the frozen feature reader, and the model kept when its classifier wins."""
    frozen = copy.deepcopy(model).eval()
    dense = frozen.bert.pooler.dense
    with torch.no_grad():
        dense.weight.copy_(torch.eye(dense.weight.shape[0], dtype=dense.weight.dtype) * POOLER_SCALE)
        dense.bias.zero_()
    for p in frozen.parameters():
        p.requires_grad_(False)
    return frozen


def features(frozen: torch.nn.Module, ids: Sequence[Sequence[int]], pad_id: int) -> np.ndarray:
    """(N, D) float64: each sentence's pooled vector as the frozen model's classifier reads it (eval mode)."""
    with torch.inference_mode():
        found = evaluate(frozen, ids, [0] * len(ids), pad_id, CPU, keep_vectors=len(ids))
    return found.vectors.astype(np.float64)


@dataclass(frozen=True)
class FrozenHead:
    """A logistic regression on standardised features: the training rows' mean and spread, the regression's
    labels (``classes``, the label ids it saw), weights and intercepts (one row per class; two classes: one row)."""

    mean: np.ndarray
    scale: np.ndarray
    classes: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray

    def logits(self, x: np.ndarray, n_labels: int) -> np.ndarray:
        """(N, n_labels): each label's decision value (a label no training row had: :data:`ABSENT`)."""
        z = (np.asarray(x, dtype=np.float64) - self.mean) / self.scale
        w, b = self.weights(n_labels)
        return z @ w.T + b

    def predict(self, x: np.ndarray, n_labels: int) -> np.ndarray:
        """Each row's predicted label id."""
        return self.logits(x, n_labels).argmax(-1)

    def weights(self, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
        """(n_labels, D) weights and (n_labels,) biases on the standardised features whose softmax is the
        regression's probabilities (two classes: ±half the one row, so the difference is its decision value)."""
        w = np.zeros((n_labels, self.coef.shape[1]))
        b = np.full(n_labels, ABSENT)
        if len(self.classes) == 1:  # one label in training: it is always the answer
            b[self.classes[0]] = 0.0
        elif len(self.classes) == 2:
            for sign, label in zip((-0.5, 0.5), self.classes):
                w[label], b[label] = sign * self.coef[0], sign * self.intercept[0]
        else:
            for row, label in enumerate(self.classes):
                w[label], b[label] = self.coef[row], self.intercept[row]
        return w, b


def fit_head(x: np.ndarray, y: Sequence[int], c: float) -> FrozenHead:
    """A logistic regression (inverse penalty ``c``, scikit-learn's L-BFGS) on standardised ``x``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    y = np.asarray(y, dtype=np.int64)
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    classes = np.unique(y)
    if len(classes) == 1:
        return FrozenHead(scaler.mean_, scale, classes, np.zeros((1, x.shape[1])), np.zeros(1))
    with threadpool_limits(limits=1, user_api="blas"):  # small products: threads cost more than they give
        head = LogisticRegression(C=c, max_iter=2000).fit((x - scaler.mean_) / scale, y)
    return FrozenHead(scaler.mean_, scale, head.classes_, head.coef_, head.intercept_)


def keep_as_model(frozen: torch.nn.Module, head: FrozenHead) -> torch.nn.Module:
    """``frozen`` (:func:`frozen_model`) with ``head`` folded into its classifier: a stock
    ``BertForSequenceClassification`` whose logits are ``head``'s decision values (weights ÷ spread; the mean
    moved into the bias)."""
    w, b = head.weights(frozen.config.num_labels)
    weight = w / head.scale
    bias = b - weight @ head.mean
    with torch.no_grad():
        frozen.classifier.weight.copy_(torch.as_tensor(weight, dtype=frozen.classifier.weight.dtype))
        frozen.classifier.bias.copy_(torch.as_tensor(bias, dtype=frozen.classifier.bias.dtype))
    return frozen

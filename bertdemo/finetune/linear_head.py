"""A small, deterministic linear head: softmax regression on fixed features, with its scores.

Features are standardised with the training rows' mean and standard deviation (a feature constant
over the training rows becomes 0); the weights start at
zero and are trained full-batch with Adam on cross-entropy plus an L2 penalty, evaluated on the
validation rows every ``eval_every`` steps, stopped when validation accuracy has not improved for
``patience`` evaluations, and the best evaluation's weights are kept (early stopping). With no
randomness anywhere, the same inputs give the same head. Inputs are numpy arrays (float features,
int labels); results are plain numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

L2 = 1e-3
LEARNING_RATE = 0.05
MAX_STEPS = 200
EVAL_EVERY = 5
PATIENCE = 4


@dataclass(frozen=True)
class HeadResult:
    """Scores of one trained head (accuracies and macro-F1 in [0, 1]; test ones NaN when no test rows)."""

    val_accuracy: float
    val_macro_f1: float
    test_accuracy: float
    test_macro_f1: float
    steps: int  # training steps of the kept weights


def scores(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, float]:
    """(accuracy, macro-F1): F1 averaged over the classes that occur in ``y_true`` or ``y_pred``
    (scikit-learn's ``f1_score(average="macro")``)."""
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if len(y_true) == 0:
        return float("nan"), float("nan")
    f1s = []
    for c in np.union1d(y_true, y_pred):
        tp = np.sum((y_pred == c) & (y_true == c))
        fp = np.sum((y_pred == c) & (y_true != c))
        fn = np.sum((y_pred != c) & (y_true == c))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return float(np.mean(y_pred == y_true)), float(np.mean(f1s))


def _tensor(x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.float32)


def train_linear_head(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
                      test_x: np.ndarray | None = None, test_y: np.ndarray | None = None,
                      n_classes: int | None = None, **options: float) -> HeadResult:
    """Train a softmax-regression head on (``train_x``, ``train_y``) — (n, d) features, n int labels —
    early-stopped on the validation rows, and score it on validation and (when given) test rows.
    ``n_classes`` defaults to the largest label + 1; ``options``: ``l2``, ``lr``, ``max_steps``,
    ``eval_every``, ``patience`` (see :func:`train_linear_heads`)."""
    test = None if test_x is None else np.asarray(test_x)[None]
    return train_linear_heads(np.asarray(train_x)[None], train_y, np.asarray(val_x)[None], val_y, test, test_y,
                              n_classes, **options)[0]


def train_linear_heads(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
                       test_x: np.ndarray | None = None, test_y: np.ndarray | None = None,
                       n_classes: int | None = None, l2: float = L2, lr: float = LEARNING_RATE,
                       max_steps: int = MAX_STEPS, eval_every: int = EVAL_EVERY,
                       patience: int = PATIENCE) -> list[HeadResult]:
    """One head per leading index of ``train_x`` (k, n, d) — e.g. one per layer — on the same labels, trained
    together in one batched loop. Each head is standardised, stopped and scored on its own, so it comes
    out exactly as :func:`train_linear_head` would give it alone."""
    train_y = np.asarray(train_y, dtype=np.int64)
    val_y = np.asarray(val_y, dtype=np.int64)
    if len(train_y) == 0 or len(val_y) == 0:
        raise ValueError("The linear head needs training and validation rows.")
    if np.asarray(train_x).ndim != 3 or len(train_x) != len(val_x) or np.asarray(train_x).shape[1] != len(train_y):
        raise ValueError("train_x must be (heads, rows, features) with one row per training label.")
    n_classes = int(n_classes or max(train_y.max(), val_y.max()) + 1)
    x = _tensor(train_x)
    mu = x.mean(1, keepdim=True)
    sd = x.std(1, keepdim=True)
    scale = torch.where(sd > 1e-6, 1.0 / sd.clamp_min(1e-6), 0.0)  # a constant feature stays 0, not rounding noise
    x = (x - mu) * scale
    xv = (_tensor(val_x) - mu) * scale
    k = x.shape[0]
    y = torch.as_tensor(train_y).repeat(k)
    w = torch.zeros(k, x.shape[2], n_classes, requires_grad=True)
    b = torch.zeros(k, 1, n_classes, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=lr)
    best_acc = np.full(k, -1.0)
    best_step = np.zeros(k, dtype=np.int64)
    best_w = w.detach().clone()
    best_b = b.detach().clone()
    since_best = np.zeros(k, dtype=np.int64)
    active = np.ones(k, dtype=bool)
    with torch.enable_grad():
        for step in range(1, max_steps + 1):
            opt.zero_grad(set_to_none=True)
            logits = torch.baddbmm(b, x, w)  # (k, n, classes)
            # summed over heads: each head's gradient is its own loss's, as if trained alone
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, n_classes), y, reduction="sum") / len(train_y)
            loss = loss + l2 * (w * w).sum()
            loss.backward()
            opt.step()
            if step % eval_every and step != max_steps:
                continue
            with torch.no_grad():
                acc = (torch.baddbmm(b, xv, w).argmax(2).numpy() == val_y).mean(1)
                for h in np.flatnonzero(active):
                    if acc[h] > best_acc[h]:
                        best_acc[h], best_step[h], since_best[h] = acc[h], step, 0
                        best_w[h] = w[h]
                        best_b[h] = b[h]
                    else:
                        since_best[h] += 1
                        active[h] = since_best[h] < patience
            if not active.any():
                break
    results = []
    with torch.no_grad():
        val_pred = torch.baddbmm(best_b, xv, best_w).argmax(2).numpy()
        test_pred = None
        if test_x is not None and test_y is not None:
            test_pred = torch.baddbmm(best_b, (_tensor(test_x) - mu) * scale, best_w).argmax(2).numpy()
    for h in range(k):
        val_acc, val_f1 = scores(val_y, val_pred[h])
        test_acc, test_f1 = (float("nan"), float("nan")) if test_pred is None else scores(np.asarray(test_y), test_pred[h])
        results.append(HeadResult(val_acc, val_f1, test_acc, test_f1, int(best_step[h])))
    return results

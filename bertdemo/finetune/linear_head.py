"""A small, deterministic linear head: softmax regression on fixed features, with its scores.

Features are standardised with the training rows' mean and standard deviation (a feature constant
over the training rows, up to rounding, becomes 0); the weights start at
zero and are trained full-batch with Adam (numpy, float32) on cross-entropy plus an L2 penalty, evaluated on the
validation rows every ``eval_every`` steps, stopped when validation accuracy has not improved for
``patience`` evaluations, and the best evaluation's weights are kept (early stopping). With no
randomness anywhere, the same inputs give the same head. Inputs are numpy arrays (float features,
int labels); results are plain numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from bertdemo.finetune.scores import confusion_matrix, macro_f1

L2 = 1e-3
LEARNING_RATE = 0.05
MAX_STEPS = 200
EVAL_EVERY = 5
PATIENCE = 4
CONSTANT_SD = 1e-4  # a feature whose spread is below this (relative to its size) is constant


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
    (scikit-learn's ``f1_score(average="macro")``, :func:`bertdemo.finetune.scores.macro_f1`)."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if len(y_true) == 0:
        return float("nan"), float("nan")
    n_classes = int(max(y_true.max(), y_pred.max())) + 1
    return float(np.mean(y_pred == y_true)), macro_f1(confusion_matrix(y_true, y_pred, n_classes))


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


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def train_linear_heads(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
                       test_x: np.ndarray | None = None, test_y: np.ndarray | None = None,
                       n_classes: int | None = None, l2: float = L2, lr: float = LEARNING_RATE,
                       max_steps: int = MAX_STEPS, eval_every: int = EVAL_EVERY,
                       patience: int = PATIENCE) -> list[HeadResult]:
    """One head per leading index of ``train_x`` (k, n, d) — e.g. one per layer — on the same labels, trained
    together in one batched loop. Each head is standardised, stopped and scored on its own, so it comes
    out exactly as :func:`train_linear_head` would give it alone. Plain numpy (float32), with numpy's
    OpenBLAS held to one thread meanwhile: products this small gain nothing from threads, and on a busy
    machine two spinning threads took 15 times the CPU time of one."""
    with ThreadpoolController().select(internal_api="openblas").limit(limits=1):
        return _train_heads(train_x, train_y, val_x, val_y, test_x, test_y, n_classes, l2, lr, max_steps,
                            eval_every, patience)


def _train_heads(train_x, train_y, val_x, val_y, test_x, test_y, n_classes, l2, lr, max_steps, eval_every,
                 patience) -> list[HeadResult]:
    train_y = np.asarray(train_y, dtype=np.int64)
    val_y = np.asarray(val_y, dtype=np.int64)
    if len(train_y) == 0 or len(val_y) == 0:
        raise ValueError("The linear head needs training and validation rows.")
    x = np.asarray(train_x, dtype=np.float32)
    xv = np.asarray(val_x, dtype=np.float32)
    if x.ndim != 3 or len(x) != len(xv) or x.shape[1] != len(train_y):
        raise ValueError("train_x must be (heads, rows, features) with one row per training label.")
    n_classes = int(n_classes or max(train_y.max(), val_y.max()) + 1)
    mu = x.mean(1, keepdims=True)
    sd = x.std(1, ddof=1, keepdims=True) if x.shape[1] > 1 else np.zeros_like(mu)
    # a feature constant over the training rows (up to float rounding between batches) stays 0
    scale = np.where(sd > CONSTANT_SD * (1 + np.abs(mu)), 1.0 / np.maximum(sd, 1e-12), 0.0).astype(np.float32)
    x = (x - mu) * scale
    xv = (xv - mu) * scale
    xt_ = np.ascontiguousarray(np.swapaxes(x, 1, 2))  # (k, d, n) for the gradient
    k, n, d = x.shape
    onehot = np.eye(n_classes, dtype=np.float32)[train_y]  # (n, classes)
    w = np.zeros((k, d, n_classes), dtype=np.float32)
    b = np.zeros((k, 1, n_classes), dtype=np.float32)
    m_w, v_w, m_b, v_b = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
    beta1, beta2, eps = 0.9, 0.999, 1e-8  # Adam, as torch.optim.Adam's defaults
    best_acc = np.full(k, -1.0)
    best_step = np.zeros(k, dtype=np.int64)
    best_w, best_b = w.copy(), b.copy()
    since_best = np.zeros(k, dtype=np.int64)
    active = np.ones(k, dtype=bool)
    for step in range(1, max_steps + 1):
        err = (_softmax(x @ w + b) - onehot) / n  # d(mean cross-entropy)/d(logits), (k, n, classes)
        g_w = xt_ @ err + 2 * l2 * w
        g_b = err.sum(1, keepdims=True)
        for p, g, m, v in ((w, g_w, m_w, v_w), (b, g_b, m_b, v_b)):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            p -= lr * (m / (1 - beta1 ** step)) / (np.sqrt(v / (1 - beta2 ** step)) + eps)
        if step % eval_every and step != max_steps:
            continue
        acc = ((xv @ w + b).argmax(2) == val_y).mean(1)
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
    val_pred = (xv @ best_w + best_b).argmax(2)
    test_pred = None
    if test_x is not None and test_y is not None:
        test_pred = (((np.asarray(test_x, dtype=np.float32) - mu) * scale) @ best_w + best_b).argmax(2)
    results = []
    for h in range(k):
        val_acc, val_f1 = scores(val_y, val_pred[h])
        test_acc, test_f1 = (float("nan"), float("nan")) if test_pred is None else scores(np.asarray(test_y), test_pred[h])
        results.append(HeadResult(val_acc, val_f1, test_acc, test_f1, int(best_step[h])))
    return results

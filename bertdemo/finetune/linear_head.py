"""A small, deterministic linear head on fixed features: scikit-learn's ``StandardScaler`` then
multinomial ``LogisticRegression`` (L-BFGS from zero weights, then warm-started along the ``C`` grid, so the
same inputs give the same head).

The inverse penalty ``C`` is chosen among :data:`C_GRID` by validation accuracy (the smallest ``C`` on a
tie); the head with that ``C`` is then scored on validation and test. Selection never sees the test rows,
so its test scores are the ones to report. Inputs are numpy arrays (float features, int labels); results
are plain numbers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from bertdemo.finetune.scores import scores

C_GRID = (0.01, 0.1, 1.0)
MAX_ITER = 300
TOL = 1e-3  # L-BFGS stops when the largest gradient entry falls below this


@dataclass(frozen=True)
class HeadResult:
    """Scores of one trained head (accuracies and macro-F1 in [0, 1]; test ones NaN when no test rows)."""

    val_accuracy: float
    val_macro_f1: float
    test_accuracy: float
    test_macro_f1: float
    c: float  # the inverse L2 penalty chosen on validation


def fit_choosing_c(x, y: np.ndarray, val_x, val_y: np.ndarray,
                   c_grid: tuple[float, ...] = C_GRID) -> tuple[LogisticRegression, float, tuple[float, float]]:
    """A logistic regression fitted on (``x``, ``y``) for each ``C`` of ``c_grid``, smallest first, each fit
    starting from the previous one's weights (``warm_start``: the same optimum in fewer steps): the one
    with the best validation accuracy (the smallest ``C`` on a tie), its ``C`` and its validation
    (accuracy, macro-F1)."""
    best = None
    head = LogisticRegression(max_iter=MAX_ITER, tol=TOL, warm_start=True)
    for c in sorted(c_grid):
        head.set_params(C=c).fit(x, y)
        val = scores(val_y, head.predict(val_x))
        if best is None or val[0] > best[2][0]:
            best = (copy.deepcopy(head), float(c), val)
    return best


def train_linear_head(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
                      test_x: np.ndarray | None = None, test_y: np.ndarray | None = None,
                      c_grid: tuple[float, ...] = C_GRID) -> HeadResult:
    """Standardise (train rows' mean and spread), fit a logistic regression on (``train_x`` (n, d),
    ``train_y``) for each ``C`` of ``c_grid``, keep the one with the best validation accuracy and score it
    on validation and (when given) test rows."""
    train_y = np.asarray(train_y, dtype=np.int64)
    val_y = np.asarray(val_y, dtype=np.int64)
    if len(train_y) == 0 or len(val_y) == 0:
        raise ValueError("The linear head needs training and validation rows.")
    scaler = StandardScaler().fit(train_x)
    # small products gain nothing from BLAS threads, and on a busy machine spinning threads cost many times the CPU
    with threadpool_limits(limits=1, user_api="blas"):
        head, c, (val_acc, val_f1) = fit_choosing_c(scaler.transform(train_x), train_y, scaler.transform(val_x),
                                                    val_y, c_grid)
        test_acc, test_f1 = (float("nan"), float("nan")) if test_x is None or test_y is None else \
            scores(np.asarray(test_y, dtype=np.int64), head.predict(scaler.transform(test_x)))
    return HeadResult(val_acc, val_f1, test_acc, test_f1, c)


def train_linear_heads(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
                       test_x: np.ndarray | None = None, test_y: np.ndarray | None = None,
                       c_grid: tuple[float, ...] = C_GRID) -> list[HeadResult]:
    """One head per leading index of ``train_x`` (k, n, d), e.g. one per layer, on the same labels, each
    standardised, selected and scored on its own (:func:`train_linear_head`)."""
    if np.ndim(train_x) != 3 or len(train_x) != len(val_x) or np.shape(train_x)[1] != len(train_y):
        raise ValueError("train_x must be (heads, rows, features) with one row per training label.")
    return [train_linear_head(train_x[h], train_y, val_x[h], val_y, None if test_x is None else test_x[h], test_y,
                              c_grid) for h in range(len(train_x))]

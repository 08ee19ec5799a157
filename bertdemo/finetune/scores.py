"""Classification scores as the app reports them, from scikit-learn's metrics: accuracy, macro-F1 (averaged
over the classes that occur in the true or predicted labels) and the confusion matrix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn import metrics


def confusion_matrix(true: Sequence[int], pred: Sequence[int], n_classes: int) -> np.ndarray:
    """(C, C) counts: rows the true class, columns the predicted one."""
    return metrics.confusion_matrix(true, pred, labels=np.arange(n_classes))


def scores(true: Sequence[int], pred: Sequence[int]) -> tuple[float, float]:
    """(accuracy, macro-F1) in [0, 1]; (NaN, NaN) when there are no rows."""
    if len(true) == 0:
        return float("nan"), float("nan")
    return (float(metrics.accuracy_score(true, pred)),
            float(metrics.f1_score(true, pred, average="macro", zero_division=0.0)))

"""Classification scores from predictions, shared by fine-tuning and the linear probes: the confusion
matrix, and macro-F1 read from it (numpy only)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def confusion_matrix(true: Sequence[int], pred: Sequence[int], n_classes: int) -> np.ndarray:
    """(C, C) counts: rows the true class, columns the predicted one."""
    cm = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(cm, (np.asarray(true, dtype=np.int64), np.asarray(pred, dtype=np.int64)), 1)
    return cm


def macro_f1(cm: np.ndarray) -> float:
    """The mean over classes of F1 = 2·TP / (2·TP + FP + FN); a class never true nor predicted is left out
    (scikit-learn's ``f1_score(average="macro")``)."""
    tp = np.diag(cm).astype(float)
    denom = 2 * tp + (cm.sum(0) - tp) + (cm.sum(1) - tp)
    seen = denom > 0
    return float(np.mean(2 * tp[seen] / denom[seen])) if seen.any() else math.nan

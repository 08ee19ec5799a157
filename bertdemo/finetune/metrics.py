"""The metrics of one fine-tuning run behind a lock: written by the run's thread, copied by the pages.

`FinetuneSnapshot` holds plain values (lists, floats, strings) so the page, the API (``/run_status``),
the CSV and the tests read the same thing. Every evaluation appends to every evaluation series, so the
series stay aligned by index with ``eval_steps``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass, field

from bertdemo.runs.status import ACTIVE_STATUSES, SMOOTHING, LockedSnapshot, Status, debiased_ema

TASK = "topic"  # the one fine-tuning task: a Wikipedia summary's first sentence -> its topic


@dataclass
class FinetuneSnapshot:
    run_id: str = ""
    kind: str = "finetune"  # what /run_status says the run is (pretraining runs: "pretrain")
    task: str = TASK
    status: str = Status.PREPARING
    message: str = ""
    note: str = ""  # a setting the server changed at the start, said for the whole run (a budget lowered under the cap)
    init: str = ""  # embedded | random | run:<id>/checkpoint
    init_label: str = ""  # what the page calls the start ("the embedded pretrained model", "random weights", …)
    new_weights: list[str] = field(default_factory=list)  # parameter groups newly initialised (head, pooler)
    settings: dict = field(default_factory=dict)  # FinetuneConfig.flat()
    labels: list[str] = field(default_factory=list)  # the topics, in class order
    device: str = ""
    param_count: int = 0
    step: int = 0
    total_steps: int = 0  # the planned steps (epochs × batches); the time budget may end the run first
    epoch: float = 0.0
    elapsed_s: float = 0.0
    steps: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)  # mean over each log interval
    wall_s: list[float] = field(default_factory=list)  # training seconds at `steps`
    lr: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_wall_s: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_accuracy: list[float] = field(default_factory=list)
    val_macro_f1: list[float] = field(default_factory=list)
    probe_text: str = ""
    probe_probs: list[list[float]] = field(default_factory=list)  # at each evaluation: P(topic | probe_text)
    baselines: dict[str, float] = field(default_factory=dict)  # landmark -> validation accuracy
    confusion: list[list[int]] = field(default_factory=list)  # final, validation: rows true topic, columns predicted
    eval_examples: int = 0  # how many validation examples each point of the curves scores (a fixed sample)
    val_accuracy_all: float = math.nan  # final, on the whole validation split
    val_macro_f1_all: float = math.nan
    test_accuracy: float = math.nan  # final, on the test split (never used to choose anything)
    test_macro_f1: float = math.nan
    pca_before: list[list[float]] = field(default_factory=list)  # validation sentence vectors in 2D, before
    pca_after: list[list[float]] = field(default_factory=list)  # ... and after (the same examples, own PCA)
    pca_labels: list[int] = field(default_factory=list)
    pca_texts: list[str] = field(default_factory=list)
    checkpoint: str = ""  # the saved model's folder (the service shows it as ft:<id>)
    # the "names" task (task == "names"): val_accuracy / test_accuracy are word accuracy and val_macro_f1 /
    # test_macro_f1 the word-level F1 of NAME, over the words that carry a label; here the rest (the rule, the
    # landmarks, entity-level scores, the test split's errors): bertdemo.finetune.token_engine.names_report
    names: dict = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def train_loss_smooth(self) -> list[float]:
        return debiased_ema(self.train_loss, SMOOTHING)

    @property
    def per_topic_accuracy(self) -> list[float]:
        """Recall of each topic on the validation split, from the final confusion matrix (NaN: no example)."""
        return [row[i] / sum(row) if sum(row) else math.nan for i, row in enumerate(self.confusion)]


def accuracy_label(snap: FinetuneSnapshot) -> str:
    """A run's one figure for a list, named with what it scores: its test score once measured (the figure its report
    leads with: a picker and a report never quote two figures for one run), else the whole validation split's, else
    the fixed validation sample's latest while it trains. A names run is named by its F1 of NAME: its word accuracy
    flatters (nearly every word is O, so tagging nothing scores high)."""
    names = snap.task == "names"
    metric = "names F1" if names else "accuracy"
    test = snap.test_macro_f1 if names else snap.test_accuracy
    if math.isfinite(test):
        return f"{metric} {test:.1%} (test)"
    whole = snap.val_macro_f1_all if names else snap.val_accuracy_all
    if math.isfinite(whole):
        return f"{metric} {whole:.1%} (validation)"
    sample = snap.val_macro_f1 if names else snap.val_accuracy
    if sample:
        return f"{metric} {sample[-1]:.1%} (validation sample of {snap.eval_examples:,})"
    return f"{metric} —"


_FIELDS = tuple(f.name for f in dataclasses.fields(FinetuneSnapshot))
NAN_FIELDS = ("val_accuracy_all", "val_macro_f1_all", "test_accuracy", "test_macro_f1")  # NaN until the run ends


class FinetuneMetrics(LockedSnapshot):
    """Thread-safe holder of a FinetuneSnapshot; every writer goes through its methods."""

    snapshot_type = FinetuneSnapshot

    def log_train(self, step: int, loss: float, lr: float, wall_s: float) -> None:
        with self._lock:
            s = self._snap
            s.steps.append(step)
            s.train_loss.append(loss)
            s.lr.append(lr)
            s.wall_s.append(wall_s)

    def log_eval(self, step: int, wall_s: float, loss: float, accuracy: float, macro_f1: float,
                 probe_probs: list[float]) -> None:
        """One validation evaluation: every series gets a value (NaN where one is missing)."""
        with self._lock:
            s = self._snap
            s.eval_steps.append(step)
            s.eval_wall_s.append(wall_s)
            s.val_loss.append(loss)
            s.val_accuracy.append(accuracy)
            s.val_macro_f1.append(macro_f1)
            s.probe_probs.append(list(probe_probs) or [math.nan] * len(s.labels))


def history_dict(snap: FinetuneSnapshot) -> dict:
    """Everything of a snapshot as JSON-ready values (saved beside the checkpoint: the overlay and CSV read it)."""
    data = dataclasses.asdict(snap)
    for name in NAN_FIELDS:  # JSON has no NaN
        if not math.isfinite(data[name]):
            data[name] = None
    return data


def snapshot_from_history(data: dict) -> FinetuneSnapshot:
    """A saved run's snapshot (names it does not know are ignored: older files)."""
    values = {name: data[name] for name in _FIELDS if name in data}
    for name in NAN_FIELDS:
        if values.get(name) is None:
            values[name] = math.nan
    return FinetuneSnapshot(**values)


def _cell(text: str) -> str:
    """A label as a CSV cell a spreadsheet shows as text: no line breaks, no leading formula sign."""
    text = " ".join(str(text).split())
    return "'" + text if text[:1] in "=+-@\t" else text


def finetune_csv(snap: FinetuneSnapshot) -> str:
    """One row per logged or evaluated step: step, wall_s, train loss (raw and smoothed), lr, the validation
    metrics and the probe sentence's probability of each topic."""
    rows: dict[int, dict] = {}
    smooth = snap.train_loss_smooth
    for i, step in enumerate(snap.steps):
        rows.setdefault(step, {}).update(wall_s=snap.wall_s[i], train_loss=snap.train_loss[i],
                                         train_loss_smooth=smooth[i], lr=snap.lr[i])
    probe_cols = [f"p({_cell(label)})" for label in snap.labels]
    for i, step in enumerate(snap.eval_steps):
        row = rows.setdefault(step, {})
        row.update(wall_s=snap.eval_wall_s[i], val_loss=snap.val_loss[i], val_accuracy=snap.val_accuracy[i],
                   val_macro_f1=snap.val_macro_f1[i])
        row.update(zip(probe_cols, snap.probe_probs[i]))
    columns = ["step", "wall_s", "train_loss", "train_loss_smooth", "lr", "val_loss", "val_accuracy", "val_macro_f1",
               *probe_cols]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for step in sorted(rows):
        writer.writerow({"step": step, **{k: f"{v:.6g}" for k, v in rows[step].items()}})
    return out.getvalue()

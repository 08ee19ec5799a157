"""Fine-tuning on a learner's own labelled sentences, scored honestly for its size.

* Under :data:`CV_BELOW` examples: :data:`FOLDS`-fold stratified cross-validation (:func:`stratified_folds`,
  seeded). Each fold fine-tunes a fresh model on the other folds and scores the held-out one; the majority
  class, a bag of words (logistic regression, C = 1) and — for sentence labels — the frozen start's [CLS] vectors
  with a logistic regression on top (the paper's feature-based approach, :mod:`bertdemo.finetune.frozen_features`)
  are scored on the same folds. The page reads the mean and the spread (standard deviation over folds) of each,
  and whether the fine-tuned model's lead over a landmark is within the spread of the per-fold differences. The
  model kept (to classify and download) is the better of the two on the folds (a tie: fine-tuning), made again
  on every example: fine-tuned the same way, or the frozen start with the regression as its classifier.
* From :data:`CV_BELOW` examples: a seeded stratified train / validation / test split (70 / 15 / 15). The
  validation split chooses (the epoch count: the model is scored at each epoch's end and the best epoch's
  weights kept, :func:`bertdemo.finetune.own_fit.fit`; each regression's C; the model kept: fine-tuned, or the
  frozen features' classifier when it scores higher on validation), the test split reports. Under a time budget,
  reading the examples' [CLS] vectors takes at most :data:`READ_SHARE` of it: the examples read by then (in a
  seeded order whose every prefix keeps each label's share, :func:`reading_order`; at least :data:`CV_BELOW`) are
  the ones used, and the result says how many of how many (``sample``). A stop, the server's cap included, ends
  the preparation between two chunks read or two regressions fitted.

The training loop is :func:`bertdemo.finetune.own_fit.fit`, for sentence and word labels alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import BertForSequenceClassification

from bertdemo.finetune import frozen_features
from bertdemo.finetune.baselines import BOW_C_GRID, BOW_TOKEN_PATTERN
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import (
    batch_of,
    build_model,
    encode,
    evaluate,
    save_checkpoint,
    too_few_sentence,
    too_few_steps,
)
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.own_data import OwnData, OwnWords
from bertdemo.finetune.own_fit import Stopped, fit, fresh, plan
from bertdemo.finetune.own_reading import (
    PREPARING_STOPPED,
    READ_CHUNK,
    READ_SHARE,
    members_of,
    reading_order,
    sample_sentence,
)
from bertdemo.finetune.scores import scores
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status

CV_BELOW = 200
CPU = torch.device("cpu")
FOLDS = 5
SPLIT = (0.70, 0.15, 0.15)  # train / validation / test from CV_BELOW examples
BOW_C = 1.0  # the bag of words' penalty in cross-validation (no validation split to choose it on)


def stratified_folds(labels: Sequence[int], k: int = FOLDS, seed: int = 0,
                     groups: Sequence[int] | None = None) -> list[int]:
    """Each example's fold (0 … k-1). ``groups`` (e.g. :meth:`~bertdemo.finetune.own_data.OwnData.groups`:
    copies of one text) are dealt whole, so no fold holds a copy of what another trains on; without them each
    example is its own group. Every label's groups (a group's label: its first example's) are shuffled (seeded)
    and each dealt in turn to the fold with the fewest examples, from the one after the last dealt (each label
    starting where the last one stopped): single examples fall round the folds in turn, the folds differing in
    size by one at most and every label spread as evenly as it can be."""
    rng = np.random.default_rng(seed)
    members = members_of(len(labels), groups)
    fold = [0] * len(labels)
    size = [0] * k
    turn = 0
    for label in sorted(set(labels)):
        mine = [g for g, rows in members.items() if labels[rows[0]] == label]
        for i in rng.permutation(len(mine)):
            rows = members[mine[int(i)]]
            target = min(range(k), key=lambda f: (size[f], (f - turn) % k))
            for row in rows:
                fold[row] = target
            size[target] += len(rows)
            turn = target + 1
    return fold


def split_three(labels: Sequence[int], seed: int = 0,
                groups: Sequence[int] | None = None) -> tuple[list[int], list[int], list[int]]:
    """Indices of a seeded train / validation / test split in the proportions of :data:`SPLIT` (of the groups:
    copies of one text stay on one side), stratified by label where every label has the groups to stratify
    (else by chance: a label of a few examples cannot be in every part)."""
    members = members_of(len(labels), groups)
    heads = list(members)
    index = np.arange(len(heads))
    y = np.asarray([labels[members[g][0]] for g in heads])
    train, rest = _split(index, y, SPLIT[0], None, seed)
    val, test = _split(rest, y[rest], None, SPLIT[2] / (SPLIT[1] + SPLIT[2]), seed)
    whole = lambda part: sorted(row for g in part for row in members[heads[int(g)]])
    return whole(train), whole(val), whole(test)


def _split(index: np.ndarray, y: np.ndarray, train_size: float | None, test_size: float | None, seed: int):
    from sklearn.model_selection import train_test_split

    try:
        return train_test_split(index, train_size=train_size, test_size=test_size, stratify=y, random_state=seed)
    except ValueError:  # a label with too few groups to be in both parts
        return train_test_split(index, train_size=train_size, test_size=test_size, random_state=seed)


def majority_predict(train_y: Sequence[int], n: int) -> np.ndarray:
    """The training part's most common label (the smallest index on a tie), ``n`` times."""
    return np.full(n, int(np.bincount(np.asarray(train_y)).argmax()))


def bow_predict(train_texts: Sequence[str], train_y: Sequence[int], texts: Sequence[str], c: float = BOW_C):
    """Logistic regression on which words a text contains (every word of the training part; lower-cased
    ``[a-z0-9]+``): the predicted labels of ``texts`` (the majority's, when no training text has a word)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = CountVectorizer(binary=True, token_pattern=BOW_TOKEN_PATTERN)
    try:
        x = vectorizer.fit_transform(train_texts)
    except ValueError:  # no word at all
        return majority_predict(train_y, len(texts))
    head = LogisticRegression(C=c, max_iter=2000).fit(x, np.asarray(train_y))
    return head.predict(vectorizer.transform(texts))


def _mean_std(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0}


def compare(finetuned: Sequence[float], landmark: Sequence[float]) -> dict:
    """The fine-tuned model against a landmark scored on the same folds: the mean and the spread (standard
    deviation) of the per-fold differences; ``within_spread`` when the mean difference is no larger than that
    spread (the folds do not tell the two apart)."""
    diff = _mean_std(np.asarray(finetuned) - np.asarray(landmark))
    return {"mean_diff": diff["mean"], "std_diff": diff["std"], "within_spread": abs(diff["mean"]) <= diff["std"]}


class Sentences:
    """Sentence labels as the cross-validation and the split read them (one example: one text, one label);
    the landmarks: the majority class and a bag of words."""

    unit = "sentence"  # what one label is on
    model_class = BertForSequenceClassification
    landmark_names = ("majority", "bag_of_words", "frozen_features")
    chosen_on = "validation accuracy"

    def __init__(self, data: OwnData) -> None:
        self.data, self.y = data, np.asarray(data.labels)
        self.strata: list[int] = list(data.labels)
        self.groups: list[int] = data.groups()  # copies of one text: held out together
        self.ids: list[list[int]] = []
        self.frozen: torch.nn.Module | None = None  # the start, frozen (frozen_features.frozen_model)
        self.features = np.zeros((0, 0))  # each text's [CLS] vector from the frozen start
        self.given = len(data)  # the examples given; ``data`` holds those used (read_start may keep fewer)

    def prepare(self, tokenizer, max_len: int, positions: int) -> None:
        """Tokenize every text once (cut at ``max_len`` pieces; ``positions``: the model's)."""
        self.ids = encode(tokenizer, self.data.texts, max_len)

    def read_start(self, model: torch.nn.Module, pad_id: int, seconds: float = 0.0,
                   clock: Callable[[], float] = time.monotonic, stopped: Callable[[], bool] = lambda: False,
                   seed: int = 0, progress: Callable[[int, int], None] | None = None) -> None:
        """Read each text's [CLS] vector from a frozen copy of the starting ``model``, once (the feature-based
        landmark's input, :mod:`bertdemo.finetune.frozen_features`), :data:`READ_CHUNK` examples at a time in
        :func:`reading_order`. ``seconds`` (0: no limit): once reading has taken that long (and read at least
        :data:`CV_BELOW` examples), the examples read are the ones kept (:attr:`given`: how many there were).
        :class:`Stopped` when ``stopped()`` says so between two chunks. ``progress(read, of)`` after each chunk."""
        self.frozen = frozen_features.frozen_model(model)
        began, read, vectors = clock(), [], []
        chunk: list[int] = []
        groups = reading_order(self.strata, self.groups, seed)
        for n, rows in enumerate(groups, 1):
            chunk.extend(rows)
            if len(chunk) < READ_CHUNK and n < len(groups):
                continue
            if stopped():
                raise Stopped
            if seconds and len(read) >= CV_BELOW and clock() - began >= seconds:
                break
            vectors.append(frozen_features.features(self.frozen, [self.ids[i] for i in chunk], pad_id))
            read.extend(chunk)
            chunk = []
            if progress is not None:
                progress(len(read), len(self.ids))
        kept = sorted(range(len(read)), key=lambda k: read[k])  # the rows read, back in the data's order
        self.features = np.concatenate(vectors)[kept]
        if len(read) < len(self.ids):
            self._keep([read[k] for k in kept])

    def _keep(self, rows: Sequence[int]) -> None:
        """Keep only the examples ``rows`` (in the data's order) from now on."""
        data = self.data
        self.data = OwnData([data.texts[i] for i in rows], [data.labels[i] for i in rows], data.names, data.source)
        self.y, self.strata = np.asarray(self.data.labels), list(self.data.labels)
        self.groups = self.data.groups()
        self.ids = [self.ids[i] for i in rows]

    def frozen_head(self, train: Sequence[int], c: float) -> frozen_features.FrozenHead:
        return frozen_features.fit_head(self.features[list(train)], self.y[list(train)], c)

    def keep_frozen(self, train: Sequence[int], c: float) -> torch.nn.Module:
        """The frozen start with a logistic regression on ``train``'s [CLS] vectors as its classifier: a stock
        ``BertForSequenceClassification`` (:func:`~bertdemo.finetune.frozen_features.keep_as_model`)."""
        return frozen_features.keep_as_model(self.frozen, self.frozen_head(train, c))

    def loss_of(self, model: torch.nn.Module, rows: Sequence[int], pad_id: int) -> Callable[[list[int]], torch.Tensor]:
        """``loss_of(indices into rows)`` for :func:`bertdemo.finetune.own_fit.fit`: the batch's cross-entropy."""
        ids, y = [self.ids[i] for i in rows], torch.tensor(self.y[list(rows)], dtype=torch.long)
        return lambda idx: model(**batch_of([ids[i] for i in idx], pad_id, CPU), labels=y[idx]).loss

    def predict(self, model: torch.nn.Module, rows: Sequence[int], pad_id: int) -> list:
        """Each example's predicted label id from the model's own forward (eval mode, length-sorted batches)."""
        return list(evaluate(model, [self.ids[i] for i in rows], [0] * len(rows), pad_id, CPU).predictions)

    def score(self, rows: Sequence[int], predicted: Sequence) -> tuple[float, float]:
        """(accuracy, macro-F1) of ``predicted`` against the rows' labels."""
        return scores(self.y[list(rows)], np.asarray(predicted))

    def shown(self, predicted) -> str:
        return self.data.names[int(predicted)]

    def landmarks(self, train: Sequence[int], rows: Sequence[int], c: float = BOW_C) -> dict[str, list]:
        """Each landmark's predictions of ``rows``, trained on ``train`` (both logistic regressions with ``c``)."""
        texts = lambda part: [self.data.texts[i] for i in part]
        y_train = self.y[list(train)]
        frozen = self.frozen_head(train, c).predict(self.features[list(rows)], len(self.data.names))
        return {"majority": list(majority_predict(y_train, len(rows))),
                "bag_of_words": list(bow_predict(texts(train), y_train, texts(rows), c)),
                "frozen_features": list(frozen)}

    def split_landmarks(self, train: Sequence[int], val: Sequence[int], test: Sequence[int],
                        stopped: Callable[[], bool] = lambda: False) -> dict[str, dict]:
        """The landmarks' validation and test accuracy (each logistic regression's C chosen on validation; each C
        fitted once, predicting both parts). :class:`Stopped` when ``stopped()`` says so between two fits."""
        both, n_val = [*val, *test], len(val)
        on = {}
        for c in BOW_C_GRID:
            if stopped():
                raise Stopped
            on[c] = self.landmarks(train, both, c)
        best = {name: max(BOW_C_GRID, key=lambda c: self.score(val, on[c][name][:n_val])[0])
                for name in self.landmark_names}
        out = {name: {"validation": self.score(val, on[best[name]][name][:n_val])[0],
                      "test": self.score(test, on[best[name]][name][n_val:])[0]}
               for name in self.landmark_names}
        for name in ("bag_of_words", "frozen_features"):
            out[name]["C"] = best[name]
        return out


def kept_kind(accuracy: dict[str, list[float]]) -> str:
    """Which model cross-validation keeps: the frozen start's logistic regression when its mean accuracy over the
    folds is higher than fine-tuning's, else the fine-tuned model (a tie keeps fine-tuning)."""
    frozen = accuracy.get("frozen_features")
    if frozen and np.mean(frozen) > np.mean(accuracy["finetuned"]):
        return "frozen_features"
    return "finetuned"


def examples_of(data) -> Sentences:
    """The reader of ``data``: :class:`Sentences` for sentence labels, :class:`~bertdemo.finetune.own_words.Words`
    for word labels."""
    if isinstance(data, OwnWords):
        from bertdemo.finetune.own_words import Words

        return Words(data)
    return Sentences(data)


def _start(cfg: FinetuneConfig, examples, metrics: FinetuneMetrics, cache_dir, control: RunControl,
           clock: Callable[[], float], read_s: float = 0.0):
    """The starting model built, the data tokenized and the start's [CLS] vectors read (for at most ``read_s``
    seconds, 0: all; :meth:`Sentences.read_start`); :class:`Stopped` on a stop while reading."""
    metrics.update(status=Status.RUNNING, total_steps=0, message="Loading the starting model…")
    built = build_model(cfg, examples.data.names, cache_dir, model_class=examples.model_class)
    examples.prepare(built.tokenizer, cfg.max_seq_len, built.model.config.max_position_embeddings)
    pad_id = built.tokenizer.pad_token_id or 0

    def progress(read: int, of: int) -> None:
        metrics.update(message=f"Reading each example's [CLS] vector from the frozen start: {read:,} of {of:,}…")

    examples.read_start(built.model, pad_id, seconds=read_s, clock=clock, stopped=control.stop_event.is_set,
                        seed=cfg.seed, progress=progress)
    return built, pad_id


def cross_validate(cfg: FinetuneConfig, data: OwnData | OwnWords, metrics: FinetuneMetrics, control: RunControl,
                   checkpoint_dir: Path | None, cache_dir: str | Path | None = None,
                   clock: Callable[[], float] = time.monotonic,
                   on_step: Callable[[int], None] | None = None) -> tuple[str, dict]:
    """:data:`FOLDS`-fold cross-validation of fine-tuning and of the landmarks on the same folds, then the
    model kept, fine-tuned on every example and saved to ``checkpoint_dir``. The starting model is built once
    (each fold fine-tunes a fresh copy of it) and the data tokenized once. Returns (status, result): the
    per-fold accuracies (and macro-F1s), their mean and spread, the comparisons (:func:`compare`) and each
    example's out-of-fold prediction. A stop ends it without a model; the folds done are reported."""
    began = clock()
    examples = examples_of(data)
    folds = stratified_folds(examples.strata, FOLDS, cfg.seed, examples.groups)
    per_fit = cfg.time_budget_s / (FOLDS + 1) if cfg.time_budget_s else 0.0
    kinds = ("finetuned", *examples.landmark_names)
    acc: dict[str, list[float]] = {name: [] for name in kinds}
    f1: dict[str, list[float]] = {name: [] for name in kinds}
    oof: list = [None] * len(data)
    step = n_eval = 0
    status, built = Status.FINISHED, None
    try:
        built, pad_id = _start(cfg, examples, metrics, cache_dir, control, clock)
        for k in range(FOLDS):
            held = [i for i, f in enumerate(folds) if f == k]
            train = [i for i, f in enumerate(folds) if f != k]
            metrics.update(message=f"Cross-validation: fold {k + 1} of {FOLDS} ({len(train)} to train on, "
                                   f"{len(held)} held out)…")
            model = fresh(built.model)
            steps, _ = fit(cfg, model, len(train), examples.loss_of(model, train, pad_id), control, metrics, step,
                           per_fit, clock, on_step)
            step += steps
            predicted = {"finetuned": examples.predict(model, held, pad_id), **examples.landmarks(train, held)}
            for i, p in zip(held, predicted["finetuned"]):
                oof[i] = examples.shown(p)
            for name in kinds:
                a, f = examples.score(held, predicted[name])
                acc[name].append(a)
                f1[name].append(f)
            n_eval += 1  # not logged as a validation point: the tab's curves compare those with the topic task's
        kept = kept_kind(acc)
        if kept == "frozen_features":  # it scored higher on the folds: its regression on every example is kept
            model = examples.keep_frozen(range(len(data)), BOW_C)
        else:
            metrics.update(message=f"Fine-tuning the model to keep on all {len(data)} examples…")
            model = built.model  # the last fine-tune: the built model itself
            steps, _ = fit(cfg, model, len(data), examples.loss_of(model, range(len(data)), pad_id), control,
                           metrics, step, per_fit, clock, on_step)
            step += steps
    except Stopped:
        status, model, kept = Status.STOPPED, None, None
    result = {"mode": "cross-validation", "labels_per": examples.unit, "folds": FOLDS, "folds_done": n_eval, "examples": len(data),
              "names": list(data.names), "counts": data.counts(), "source": data.source,
              "accuracy": acc, "summary": {name: _mean_std(v) for name, v in acc.items() if v},
              "macro_f1": f1, "macro_f1_summary": {name: _mean_std(v) for name, v in f1.items() if v},
              "comparisons": {name: compare(acc["finetuned"], acc[name]) for name in examples.landmark_names}
              if n_eval > 1 else {},
              "out_of_fold": [p if p is not None else "" for p in oof], "kept": kept, "seconds": clock() - began,
              "steps": step}
    return _end(status, result, model, built and built.tokenizer, cfg, metrics, checkpoint_dir, clock() - began)


def _end(status: str, result: dict, model: torch.nn.Module | None, tokenizer, cfg: FinetuneConfig,
         metrics: FinetuneMetrics, checkpoint_dir: Path | None, seconds: float) -> tuple[str, dict]:
    """The run's end: its sentence in ``metrics`` and the model kept (if any) saved; the caller announces ``status``
    once the result is written beside it (:meth:`bertdemo.finetune.own_run.OwnRun.work`)."""
    metrics.update(elapsed_s=seconds, step=result["steps"], total_steps=result["steps"], message=own_message(result))
    if model is not None and checkpoint_dir is not None:  # saved before the run says it ended (the caller says so)
        save_checkpoint(Path(checkpoint_dir), model, tokenizer, cfg, metrics, status=status)
        metrics.update(checkpoint=str(checkpoint_dir))
    return status, result


def split_and_finetune(cfg: FinetuneConfig, data: OwnData | OwnWords, metrics: FinetuneMetrics,
                       control: RunControl, checkpoint_dir: Path | None, cache_dir: str | Path | None = None,
                       clock: Callable[[], float] = time.monotonic,
                       on_step: Callable[[int], None] | None = None) -> tuple[str, dict]:
    """A seeded split (:func:`split_three`, stratified by label for sentence labels); fine-tuning on the
    training part with the epoch count chosen on validation (the model scored at each epoch's end, the best
    epoch's weights kept); the landmarks on the same split; every figure reported on test. A stop ends it
    without a model."""
    began = clock()
    examples = examples_of(data)
    try:  # reading the start's [CLS] vectors (at most READ_SHARE of the budget) and the landmarks: a stop ends them
        built, pad_id = _start(cfg, examples, metrics, cache_dir, control, clock, READ_SHARE * cfg.time_budget_s)
        train, val, test = split_three(examples.strata, cfg.seed, examples.groups)
        metrics.update(message=f"Scoring the landmarks on the {len(val)} of the validation split…")
        # before fine-tuning, which they do not read: their time (thousands of examples: many logistic regressions)
        # is inside the run's time budget, and fine-tuning gets what is left of it
        landmarks = examples.split_landmarks(train, val, test, control.stop_event.is_set)
    except Stopped:
        result = {"mode": "split", "labels_per": examples.unit, "examples": len(examples.data),
                  "names": list(data.names), "counts": examples.data.counts(), "source": data.source,
                  "stopped": True, "prepared": False, "chosen": None, "kept": None,
                  "finetuned": {"validation": None, "test": None}, "seconds": clock() - began, "steps": 0}
        return _end(Status.STOPPED, result, None, None, cfg, metrics, checkpoint_dir, clock() - began)
    model = built.model
    budget_left = max(1e-3, cfg.time_budget_s - (clock() - began)) if cfg.time_budget_s else 0.0
    metrics.update(message=f"Fine-tuning on {len(train)} examples; each epoch scored on the {len(val)} of the "
                           "validation split…")
    status, steps, chosen = Status.FINISHED, 0, None
    pick = 0 if examples.chosen_on == "validation accuracy" else 1
    try:
        steps, chosen = fit(cfg, model, len(train), examples.loss_of(model, train, pad_id), control, metrics, 0,
                            budget_left, clock, on_step,
                            score_validation=lambda: examples.score(val, examples.predict(model, val, pad_id))[pick])
    except Stopped as stop:  # the best epoch scored so far is kept (its weights are in the model); none: no model
        status, chosen = Status.STOPPED, stop.chosen
        model = model if chosen is not None else None
    _, per_epoch, planned = plan(cfg, len(train))
    cut_short = status != Status.STOPPED and too_few_steps(steps, per_epoch, planned)
    if cut_short:  # the time budget ended fine-tuning before it learned anything: no score of it, no model of it
        model, chosen = None, None
    tuned: dict = {"validation": None, "test": None}
    if model is not None:
        tuned = {"validation": examples.score(val, examples.predict(model, val, pad_id))[pick],
                 "test": examples.score(test, examples.predict(model, test, pad_id))[pick]}
    kept = None if model is None else "finetuned"
    frozen = landmarks.get("frozen_features")
    if frozen is not None and (cut_short or (model is not None and frozen["validation"] > tuned["validation"])):
        # chosen on validation, as the epoch was (or the one model trained in time): the frozen start's regression,
        # trained on the same split, is kept
        model, kept = examples.keep_frozen(train, frozen["C"]), "frozen_features"
    sample = ({"used": len(examples.data), "given": examples.given, "read_s": READ_SHARE * cfg.time_budget_s,
               "budget_s": cfg.time_budget_s} if len(examples.data) < examples.given else None)
    result = {"mode": "split", "labels_per": examples.unit, "metric": examples.chosen_on.split()[-1],
              "examples": len(examples.data), "sample": sample, "names": list(data.names),
              "counts": examples.data.counts(), "source": data.source,
              "sizes": {"train": len(train), "validation": len(val), "test": len(test)},
              "finetuned": tuned, "chosen": chosen.as_dict(examples.chosen_on) if chosen else None,
              "stopped": status == Status.STOPPED, "kept": kept,
              "cut_short": {"steps": steps, "of": planned} if cut_short else None,
              **landmarks, "seconds": clock() - began, "steps": steps}
    return _end(status, result, model, built.tokenizer, cfg, metrics, checkpoint_dir, clock() - began)


def own_message(result: dict) -> str:
    """One sentence on where the run ended (no text or label of the learner's data in it)."""
    if result["mode"] == "cross-validation":
        done = result["folds_done"]
        if done < result["folds"]:
            return f"Stopped after {done} of {result['folds']} folds; no model was kept."
        kept = ("the frozen start with a logistic regression on its [CLS] vectors (it scored higher on the folds)"
                if result.get("kept") == "frozen_features" else "a model fine-tuned")
        return (f"Cross-validated on {result['examples']} examples ({result['folds']} folds) and kept {kept} on all "
                f"of them, in {result['seconds']:.0f} s.")
    if result.get("prepared") is False:
        return PREPARING_STOPPED
    used = sample_sentence(result["sample"]) + " " if result.get("sample") else ""
    return used + _split_message(result)


def _split_message(result: dict) -> str:
    if result.get("cut_short"):
        kept = (" Kept instead: the frozen start with a logistic regression on its [CLS] vectors, trained on the same "
                "split and scored on its test part." if result.get("kept") == "frozen_features" else " No model was kept.")
        return too_few_sentence(result["cut_short"]["steps"], result["cut_short"]["of"]) + kept
    if result.get("chosen") is None:
        return ("Stopped before the first epoch ended: nothing was scored on the validation split yet, so no model "
                "was kept and there is no score to report.")
    chosen = result["chosen"]
    if result.get("stopped"):
        return (f"Stopped during training; kept the weights of epoch {chosen['epoch']:g}, the best on the validation "
                f"split so far ({chosen['on']}); scored on the test split.")
    kept = (" The model kept is the frozen start's classifier: it scored higher on the validation split."
            if result.get("kept") == "frozen_features" else "")
    return (f"Fine-tuned on a {result['sizes']['train']}-example training split; epoch {chosen['epoch']:g} chosen "
            f"on the validation split ({chosen['on']}); scored on the test split.{kept}")

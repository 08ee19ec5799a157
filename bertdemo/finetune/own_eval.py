"""Fine-tuning on a learner's own labelled sentences, scored honestly for its size.

* Under :data:`CV_BELOW` examples: :data:`FOLDS`-fold stratified cross-validation (:func:`stratified_folds`,
  seeded). Each fold fine-tunes a fresh model on the other folds and scores the held-out one; the majority
  class and a bag of words (logistic regression, C = 1) are scored on the same folds. The page reads the mean
  and the spread (standard deviation over folds) of each, and whether the fine-tuned model's lead over a
  landmark is within the spread of the per-fold differences. The model kept (to classify and download) is
  then fine-tuned the same way on every example.
* From :data:`CV_BELOW` examples: a seeded stratified train / validation / test split (70 / 15 / 15); the
  fine-tuning engine's run (:func:`bertdemo.finetune.engine.run_finetune`) and the landmarks (the bag of
  words' C chosen on validation) report their test accuracy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from bertdemo.finetune.baselines import BOW_C_GRID, BOW_TOKEN_PATTERN
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import (TopicTask, batch_of, build_model, encode, evaluate, lr_factor, run_finetune,
                                      save_checkpoint)
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.own_data import OwnData
from bertdemo.finetune.scores import scores
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status

CV_BELOW = 200
FOLDS = 5
SPLIT = (0.70, 0.15, 0.15)  # train / validation / test from CV_BELOW examples
BOW_C = 1.0  # the bag of words' penalty in cross-validation (no validation split to choose it on)


def stratified_folds(labels: Sequence[int], k: int = FOLDS, seed: int = 0) -> list[int]:
    """Each example's fold (0 … k-1): every label's examples shuffled (seeded) and dealt round the folds in
    turn, each label starting where the last one stopped, so the folds differ in size by one at most and
    every label is spread as evenly as it can be."""
    rng = np.random.default_rng(seed)
    fold = [0] * len(labels)
    turn = 0
    for label in sorted(set(labels)):
        members = [i for i, y in enumerate(labels) if y == label]
        for i in rng.permutation(members):
            fold[int(i)] = turn % k
            turn += 1
    return fold


def split_three(labels: Sequence[int], seed: int = 0) -> tuple[list[int], list[int], list[int]]:
    """Indices of a seeded, stratified train / validation / test split in the proportions of :data:`SPLIT`."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(labels))
    y = np.asarray(labels)
    train, rest = train_test_split(index, train_size=SPLIT[0], stratify=y, random_state=seed)
    val, test = train_test_split(rest, test_size=SPLIT[2] / (SPLIT[1] + SPLIT[2]), stratify=y[rest], random_state=seed)
    return sorted(train.tolist()), sorted(val.tolist()), sorted(test.tolist())


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


class Stopped(Exception):
    """The learner pressed Stop (or the server's cap did)."""


def fit(cfg: FinetuneConfig, texts: Sequence[str], labels: Sequence[int], names: list[str], control: RunControl,
        metrics: FinetuneMetrics, step0: int, cache_dir: str | Path | None, budget_s: float,
        clock: Callable[[], float] = time.monotonic, on_step: Callable[[int], None] | None = None):
    """A fresh model (``cfg.init``, the same seeded head for every start) fine-tuned on these examples:
    ``ceil(epochs × examples / batch)`` steps of AdamW (warm-up then linear decay), a batch of
    ``min(batch_size, examples)``; ``budget_s`` (0: none) may end it first, its schedule following whichever
    end is nearer. Logs the training loss into ``metrics`` at steps counted from ``step0``.
    Returns (built, steps taken); raises :class:`Stopped` on a stop."""
    built = build_model(cfg, names, cache_dir)
    model, tokenizer = built.model, built.tokenizer
    pad_id = tokenizer.pad_token_id or 0
    ids = encode(tokenizer, texts, cfg.max_seq_len)
    batch = min(cfg.batch_size, len(ids))
    total = max(1, math.ceil(cfg.epochs * len(ids) / batch))
    gen = torch.Generator().manual_seed(cfg.seed)
    y = torch.tensor(list(labels), dtype=torch.long)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    torch.manual_seed(cfg.seed)
    model.train()
    start, paused, step = clock(), 0.0, 0
    order, position = torch.randperm(len(ids), generator=gen), 0
    while step < total:
        if control.stop_event.is_set():
            raise Stopped
        if control.pause_event.is_set():
            metrics.update(status=Status.PAUSED)
            paused += control.wait_while_paused(step0 + step, clock)
            metrics.update(status=Status.RUNNING)
            continue
        elapsed = clock() - start - paused
        progress = max(step / total, elapsed / budget_s if budget_s else 0.0)
        if progress >= 1.0:
            break
        if position + batch > len(order):
            order, position = torch.randperm(len(ids), generator=gen), 0
        idx = order[position:position + batch].tolist()
        position += batch
        for group in optimizer.param_groups:
            group["lr"] = cfg.learning_rate * lr_factor(progress, cfg.warmup_fraction)
        out = model(**batch_of([ids[i] for i in idx], pad_id, torch.device("cpu")), labels=y[idx])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        metrics.log_train(step0 + step, float(out.loss.detach()), optimizer.param_groups[0]["lr"], elapsed)
        metrics.update(step=step0 + step)
        if on_step is not None:
            on_step(step0 + step)
    model.eval()
    return built, step


def predict(built, texts: Sequence[str], max_len: int) -> np.ndarray:
    """Each text's predicted label from the model's own forward (eval mode)."""
    ids = encode(built.tokenizer, texts, max_len)
    return evaluate(built.model, ids, [0] * len(ids), built.tokenizer.pad_token_id or 0, torch.device("cpu")).predictions


def cross_validate(cfg: FinetuneConfig, data: OwnData, metrics: FinetuneMetrics, control: RunControl,
                   checkpoint_dir: Path | None, cache_dir: str | Path | None = None,
                   clock: Callable[[], float] = time.monotonic,
                   on_step: Callable[[int], None] | None = None) -> tuple[str, dict]:
    """:data:`FOLDS`-fold cross-validation of fine-tuning and of the landmarks on the same folds, then the
    model kept, fine-tuned on every example and saved to ``checkpoint_dir``. Returns (status, result): the
    per-fold accuracies, their mean and spread, the comparisons (:func:`compare`) and each example's
    out-of-fold prediction. A stop ends it without a model; the folds done are reported."""
    began = clock()
    folds = stratified_folds(data.labels, FOLDS, cfg.seed)
    y = np.asarray(data.labels)
    per_fit = cfg.time_budget_s / (FOLDS + 1) if cfg.time_budget_s else 0.0
    acc: dict[str, list[float]] = {"finetuned": [], "majority": [], "bag_of_words": []}
    oof = np.full(len(y), -1)
    step = 0
    n_eval = 0
    status = Status.FINISHED
    metrics.update(status=Status.RUNNING, total_steps=0)
    try:
        for k in range(FOLDS):
            held = [i for i, f in enumerate(folds) if f == k]
            train = [i for i, f in enumerate(folds) if f != k]
            train_texts = [data.texts[i] for i in train]
            held_texts = [data.texts[i] for i in held]
            metrics.update(message=f"Cross-validation: fold {k + 1} of {FOLDS} ({len(train)} to train on, "
                                   f"{len(held)} held out)…")
            built, steps = fit(cfg, train_texts, y[train].tolist(), data.names, control, metrics, step, cache_dir,
                               per_fit, clock, on_step)
            step += steps
            pred = predict(built, held_texts, cfg.max_seq_len)
            oof[held] = pred
            acc["finetuned"].append(scores(y[held], pred)[0])
            acc["majority"].append(scores(y[held], majority_predict(y[train], len(held)))[0])
            acc["bag_of_words"].append(scores(y[held], bow_predict(train_texts, y[train], held_texts))[0])
            n_eval += 1  # not logged as a validation point: the tab's curves compare those with the topic task's
        metrics.update(message=f"Fine-tuning the model to keep on all {len(y)} examples…")
        built, steps = fit(cfg, data.texts, data.labels, data.names, control, metrics, step, cache_dir, per_fit,
                           clock, on_step)
        step += steps
    except Stopped:
        status, built = Status.STOPPED, None
    result = {"mode": "cross-validation", "folds": FOLDS, "folds_done": n_eval, "examples": len(y),
              "names": list(data.names), "counts": data.counts(), "source": data.source,
              "accuracy": acc, "summary": {name: _mean_std(v) for name, v in acc.items() if v},
              "comparisons": {name: compare(acc["finetuned"], acc[name]) for name in ("majority", "bag_of_words")}
              if n_eval > 1 else {},
              "out_of_fold": [data.names[int(p)] if p >= 0 else "" for p in oof],
              "seconds": clock() - began, "steps": step}
    metrics.update(elapsed_s=clock() - began, step=step, total_steps=step)
    if built is not None and checkpoint_dir is not None:
        metrics.update(status=status, message=own_message(result))
        save_checkpoint(Path(checkpoint_dir), built.model, built.tokenizer, cfg, metrics)
        metrics.update(checkpoint=str(checkpoint_dir))
    else:
        metrics.update(status=status, message=own_message(result))
    return status, result


def split_and_finetune(cfg: FinetuneConfig, data: OwnData, metrics: FinetuneMetrics, control: RunControl,
                       checkpoint_dir: Path | None, cache_dir: str | Path | None = None,
                       clock: Callable[[], float] = time.monotonic,
                       on_step: Callable[[int], None] | None = None) -> tuple[str, dict]:
    """A seeded stratified split (:func:`split_three`), the engine's fine-tuning run on it, and the landmarks
    on the same split (the bag of words' C chosen on validation); every figure reported on test."""
    began = clock()
    train, val, test = split_three(data.labels, cfg.seed)
    pick = lambda rows: ([data.texts[i] for i in rows], [data.labels[i] for i in rows])  # noqa: E731
    task = TopicTask(list(data.names), *pick(train), *pick(val), *pick(test))
    status = run_finetune(cfg.replace(probe_text=""), task, metrics, control, checkpoint_dir, cache_dir=cache_dir,
                          clock=clock, on_step=on_step)
    snap = metrics.snapshot()
    y_train, y_val, y_test = (np.asarray(task.train_labels), np.asarray(task.val_labels), np.asarray(task.test_labels))
    best = max(BOW_C_GRID, key=lambda c: scores(y_val, bow_predict(task.train_texts, y_train, task.val_texts, c))[0])
    bow = {"validation": scores(y_val, bow_predict(task.train_texts, y_train, task.val_texts, best))[0],
           "test": scores(y_test, bow_predict(task.train_texts, y_train, task.test_texts, best))[0], "C": best}
    maj = {"validation": scores(y_val, majority_predict(y_train, len(y_val)))[0],
           "test": scores(y_test, majority_predict(y_train, len(y_test)))[0]}
    result = {"mode": "split", "examples": len(data), "names": list(data.names), "counts": data.counts(),
              "source": data.source, "sizes": {"train": len(train), "validation": len(val), "test": len(test)},
              "finetuned": {"validation": _finite(snap.val_accuracy_all), "test": _finite(snap.test_accuracy)},
              "majority": maj, "bag_of_words": bow, "seconds": clock() - began, "steps": snap.step}
    return status, result


def _finite(value: float) -> float | None:
    return value if value == value else None


def own_message(result: dict) -> str:
    """One sentence on where the run ended (no text or label of the learner's data in it)."""
    if result["mode"] == "cross-validation":
        done = result["folds_done"]
        if done < result["folds"]:
            return f"Stopped after {done} of {result['folds']} folds; no model was kept."
        return (f"Cross-validated on {result['examples']} examples ({result['folds']} folds) and kept a model "
                f"fine-tuned on all of them, in {result['seconds']:.0f} s.")
    return f"Fine-tuned on a {result['sizes']['train']}-example training split; scored on the test split."

"""BERT's Table 5 in miniature: what each twin scores after fine-tuning, over seeds, and whether the gap is noise.

The paper (Devlin et al. 2019, §5.1, Table 5) fine-tuned a masked LM and a left-to-right LM pretrained alike
(same data, same fine-tuning recipe, the left-only constraint kept at fine-tuning) and found the sentence-level
tasks barely move while the span / token-level task falls most (:data:`PAPER_ROWS`). Here the shipped twins
(:mod:`bertdemo.models.twins`) are fine-tuned on the app's sentence-level task (a summary's topic) and its
token-level task ("Find the names"), a few seeds each (:mod:`bertdemo.finetune.twin_finetune` does one cell;
``bench/bench_table5.py`` the table, written to :data:`SHIPPED_TABLE`).

This module is the arithmetic and the words, torch-free (the page shows the shipped table before torch loads):
:func:`summarise` (mean, sample standard deviation, range over seeds), :func:`compare` (the per-seed paired
differences: both twins of one seed share the head's initialisation, the data order and dropout), and
:func:`noise_sentence` (the difference is *within seed noise* when its mean is no larger than the standard
deviation of the per-seed differences — the rule the own-data folds use).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.models.twins import PAIRS, TWIN_KINDS, TWINS_DIR, twin_dir

TASKS = ("topic", "names")
TASK_LABELS = {"topic": "Topic of a sentence (sentence-level)", "names": "Find the names (token-level)"}
METRICS = {"topic": "test accuracy", "names": "test word-level F1 of NAME"}
CELL_ID_LABEL = "t5"  # a cell's run id reads <date>-<time>-t5-<twin>-<task>
TWIN_LABELS = {"mlm": "masked LM", "ltr": "left-to-right", "ltr-masked": "left-to-right (same words)"}
SEEDS = (0, 1, 2)
MAX_SEED = 99  # a live cell's seed: 0 … 99
SHIPPED_TABLE = TWINS_DIR / "table5.json"
# (task, level, masked LM "No NSP", left-to-right "LTR & No NSP"): Devlin et al. 2019, Table 5 (dev sets)
PAPER_ROWS = (("SST-2", "sentence", 92.6, 92.1), ("MNLI-m", "pair", 83.9, 82.1), ("MRPC", "pair", 86.5, 77.5),
              ("SQuAD F1", "span", 87.9, 77.8))  # sentence, sentence pair, span of tokens (token-level)


@dataclass(frozen=True)
class CellSettings:
    """One cell's fine-tuning budget, the same for both twins and every seed (plain values: the bench, the
    live run and the JSON share them). Fixed steps, no clock: a busy machine changes the time, not the result."""

    steps: int = 200  # optimiser steps (batch 32: about one pass over the topic task's training split, three over names')
    batch_size: int = 32
    learning_rate: float = 5e-4  # peak, after warm-up, then linear decay to 0
    warmup_fraction: float = 0.06
    weight_decay: float = 0.01
    max_seq_len: int = 48  # pieces per example (names sentences: at least 64, as the names task does)
    eval_every: int = 50  # the validation split scored at these steps and at the end; the best one is kept

    def validate(self) -> CellSettings:
        """ValueError naming the value refused; returns self."""
        if not 10 <= self.steps <= 2000:
            raise ValueError(f"steps {self.steps} is outside 10 … 2,000.")
        if not 4 <= self.batch_size <= 64:
            raise ValueError(f"batch_size {self.batch_size} is outside 4 … 64.")
        if not 1e-6 <= self.learning_rate <= 1e-2:
            raise ValueError(f"learning_rate {self.learning_rate:g} is outside 1e-6 … 1e-2.")
        if not 5 <= self.eval_every <= self.steps:
            raise ValueError(f"eval_every {self.eval_every} is outside 5 … steps ({self.steps}).")
        return self

    def flat(self) -> dict[str, Any]:
        return asdict(self)


def check_cell(twin: str, task: str, seed: Any) -> tuple[str, str, int]:
    """A cell named by a visitor, checked: (twin, task, seed); ValueError naming what to change."""
    if twin not in TWIN_KINDS:
        raise ValueError("Pick a twin: 'mlm' (masked LM), 'ltr' (left-to-right) or 'ltr-masked' (left-to-right, the "
                         f"masked twin's words), not {str(twin)[:20]!r}.")
    if task not in TASKS:
        raise ValueError(f"Pick a task: 'topic' or 'names', not {str(task)[:20]!r}.")
    try:
        number = float(seed)
    except (TypeError, ValueError):
        raise ValueError(f"The seed is a whole number from 0 to {MAX_SEED}.") from None
    if not math.isfinite(number) or not number.is_integer() or not 0 <= number <= MAX_SEED:
        raise ValueError(f"The seed is a whole number from 0 to {MAX_SEED}.")
    return twin, task, int(number)


def twin_config(twin: str, seed: int, settings: CellSettings, task: str) -> FinetuneConfig:
    """The fine-tuning config of a cell (its start named ``twin:<kind>``, its folder the shipped twin's; no clock:
    the steps end it)."""
    return FinetuneConfig(init=f"twin:{twin}", init_path=str(twin_dir(twin)), task=task, seed=seed,
                          learning_rate=settings.learning_rate, batch_size=settings.batch_size,
                          warmup_fraction=settings.warmup_fraction, weight_decay=settings.weight_decay,
                          max_seq_len=settings.max_seq_len, eval_every=settings.eval_every, time_budget_s=0.0,
                          probe_text="", device="cpu")


def shipped_settings(path: str | Path = SHIPPED_TABLE) -> CellSettings:
    """The settings the shipped table was measured with (a live cell uses them, so it is comparable), else the
    defaults."""
    shipped = read_shipped(path)
    return CellSettings(**shipped["settings"]).validate() if shipped else CellSettings()


def summarise(scores: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (0 for one score), minimum and maximum of a cell's per-seed scores."""
    if not scores:
        raise ValueError("A cell needs at least one score.")
    values = [float(s) for s in scores]
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def compare(mlm: Sequence[float], ltr: Sequence[float]) -> dict[str, Any]:
    """The masked LM against the left-to-right twin, seed by seed (the same seeds, in the same order): the mean
    and standard deviation of the differences (mlm − ltr) and ``within_noise``: the mean is no larger than
    that deviation, so these seeds do not tell the twins apart."""
    if len(mlm) != len(ltr) or not mlm:
        raise ValueError("Compare the twins on the same seeds.")
    diffs = [float(a) - float(b) for a, b in zip(mlm, ltr)]
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
    ahead = sum(1 for d in diffs if d * mean > 0)  # seeds on the mean's side
    return {"mean_diff": mean, "sd_diff": sd, "within_noise": abs(mean) <= sd, "seeds": len(diffs), "same_way": ahead}


def noise_sentence(task: str, mlm: Sequence[float], ltr: Sequence[float], ltr_twin: str = "ltr") -> str:
    """The page's sentence on one task: the two twins' means, the gap in points and whether it is within seed noise;
    ``ltr_twin``: which left-to-right twin (its label names it)."""
    a, b, c = summarise(mlm), summarise(ltr), compare(mlm, ltr)
    gap = c["mean_diff"] * 100
    label = TWIN_LABELS[ltr_twin]
    lead = (f"the masked LM leads by {gap:.1f} points" if gap > 0 else
            f"the {label} twin leads by {-gap:.1f} points" if gap < 0 else "the twins tie")
    head = (f"{TASK_LABELS[task]}: masked LM {a['mean']:.1%} ± {a['sd'] * 100:.1f}, {label} "
            f"{b['mean']:.1%} ± {b['sd'] * 100:.1f} ({METRICS[task]}, mean ± sd over {c['seeds']} seeds); {lead}")
    if c["within_noise"]:
        return (f"{head}, **within seed noise** (the per-seed differences spread ±{c['sd_diff'] * 100:.1f} points): "
                f"these {c['seeds']} seeds do not tell the twins apart.")
    # not "beyond seed noise": three seeds whose differences spread ±1.5 points bound a 2.1-point lead only loosely
    return (f"{head}, more than the per-seed differences spread (±{c['sd_diff'] * 100:.1f} points; the same way on "
            f"{c['same_way']} of {c['seeds']} seeds).")


def table_from_scores(scores: dict[str, dict[str, list[float]]], seeds: Sequence[int]) -> dict[str, Any]:
    """``scores[task][twin]`` (per seed, in ``seeds``' order) as the table the page and the JSON hold: each cell's
    summary, and for each pair of twins (:data:`~bertdemo.models.twins.PAIRS`) whose both twins were scored, each
    task's comparison and sentence (``comparisons[pair][task]``)."""
    cells = {task: {twin: {"scores": list(map(float, by_twin[twin])), **summarise(by_twin[twin])}
                    for twin in TWIN_KINDS if twin in by_twin} for task, by_twin in scores.items()}
    verdicts = {pair: {task: {**compare(by_twin[mlm], by_twin[ltr]),
                              "sentence": noise_sentence(task, by_twin[mlm], by_twin[ltr], ltr)}
                       for task, by_twin in scores.items()}
                for pair, (mlm, ltr) in PAIRS.items() if all(mlm in t and ltr in t for t in scores.values())}
    return {"seeds": list(seeds), "cells": cells, "comparisons": verdicts}


def paper_agreement(table: dict[str, Any], pair: str) -> str:
    """Where ``pair``'s measured rows agree with the paper's pattern and where they do not, in words. The paper:
    the left-to-right LM loses little at sentence level (SST-2 −0.5) and most at token level (SQuAD −10.1)."""
    verdicts = table["comparisons"][pair]
    names, topic = verdicts["names"], verdicts["topic"]
    names_gap, topic_gap = names["mean_diff"] * 100, topic["mean_diff"] * 100  # masked LM minus left-to-right
    parts = []
    if names_gap > 0 and not names["within_noise"]:
        parts.append(f"as in the paper, the token-level task favours the masked LM (by {names_gap:.1f} points, more than "
                     "the seed-to-seed spread): each word's label is read from a vector that has seen the words after it")
    elif names["within_noise"]:
        parts.append(f"unlike the paper, the token-level task does not tell the twins apart ({names_gap:+.1f} points, "
                     "within seed noise)")
    else:
        parts.append(f"unlike the paper, the token-level task favours the left-to-right twin (by {-names_gap:.1f} "
                     "points, more than the seed-to-seed spread)")
    if topic["within_noise"]:
        parts.append(f"as in the paper, the sentence-level task barely moves ({topic_gap:+.1f} points, within seed "
                     "noise)")
    elif topic_gap < 0:
        parts.append(f"unlike the paper, the sentence-level task favours the left-to-right twin (by {-topic_gap:.1f} "
                     "points, more than the seed-to-seed spread): a likely reason is what each sentence head reads — the left-to-right "
                     "twin's last piece has read the whole sentence, the masked LM's [CLS] is a position no "
                     "prediction of its pretraining trained (no next-sentence prediction here)")
    elif abs(topic_gap) < abs(names_gap):
        parts.append(f"as in the paper, the sentence-level task moves less ({topic_gap:+.1f} points)")
    else:
        parts.append(f"unlike the paper, the sentence-level task moves more ({topic_gap:+.1f} points against "
                     f"{names_gap:+.1f})")
    return f"The {pair} pair: " + "; ".join(parts) + "."


def write_table(path: str | Path, table: dict[str, Any], meta: dict[str, Any]) -> None:
    """The measured table with where and how it was measured (date, machine, settings, times) as JSON."""
    Path(path).write_text(json.dumps({**meta, **table}, indent=1) + "\n")


def read_shipped(path: str | Path = SHIPPED_TABLE) -> dict[str, Any] | None:
    """The table measured for the shipped twins (None when this install has none)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None

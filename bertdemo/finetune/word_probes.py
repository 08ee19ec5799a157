"""Which layer knows names? A linear probe on each layer's per-word vectors, beside its controls.

Each labelled word of a "Find the names" sentence (:mod:`bertdemo.corpus.names`) is read at its first piece
(the piece a token classifier is trained on, :func:`bertdemo.finetune.token_engine.align`) at the embedding
output and after every layer of the frozen model; a logistic regression per layer (standardised, ``C`` chosen
among :data:`~bertdemo.finetune.linear_head.C_GRID` on validation accuracy, :func:`fit_choosing_c`) says
NAME or O. Scores: test F1 of NAME per layer (every word O scores 0), the layer chosen on validation F1, and
the same probes on a model of the same shape with random weights (seeded). Sentences: the first
:data:`WORD_PROBE_SENTENCES` of each split of the names task (split by summary, so no test sentence's
summary was seen in training).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from bertdemo.corpus.names import LABELS, NAME, NameSplits, TaggedSentence
from bertdemo.finetune.layer_probes import random_model_like
from bertdemo.finetune.linear_head import C_GRID, fit_choosing_c
from bertdemo.finetune.token_engine import align
from bertdemo.request_budget import WorkBudget, checking, probe_gflop, unbounded

Progress = Callable[[float, str], None]
WORD_PROBE_SENTENCES = {"train": 400, "validation": 150, "test": 150}
MAX_LEN = 64
TOKENS = 36  # a names sentence's pieces, about, for the cost estimate


@dataclass(frozen=True)
class WordLayerScores:
    """Per layer (index 0: the embeddings): test and validation F1 of NAME, test accuracy, the C chosen."""

    test_f1: tuple[float, ...]
    val_f1: tuple[float, ...]
    test_accuracy: tuple[float, ...]
    c: tuple[float, ...]

    @property
    def best(self) -> tuple[int, float]:
        """(layer, test F1) of the layer with the best validation F1 (the lowest on a tie)."""
        layer = int(np.argmax(self.val_f1))
        return layer, self.test_f1[layer]


@dataclass(frozen=True)
class WordProbe:
    """The names probe of every layer of one model, beside the same on random weights of its shape."""

    task: str
    n_train_words: int
    n_test_words: int
    majority_accuracy: float  # every word O, on the test words (its F1 is 0)
    model: WordLayerScores
    random: WordLayerScores | None


@torch.inference_mode()
def word_features(model: torch.nn.Module, tokenizer, sentences: Sequence[TaggedSentence], batch_size: int = 32,
                  progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(layers + 1, words, hidden) vectors of every labelled word at its first piece, and (words,) label ids
    (a word cut by :data:`MAX_LEN` is left out)."""
    encoder = getattr(model, "bert", model)
    items = align(tokenizer, [s.words for s in sentences], [s.label_ids for s in sentences], MAX_LEN)
    feats: list[np.ndarray] = []
    labels: list[int] = []
    pad = tokenizer.pad_token_id or 0
    device = next(encoder.parameters()).device
    for start in range(0, len(items), batch_size):
        part = items[start:start + batch_size]
        width = max(len(e.ids) for e in part)
        ids = torch.tensor([e.ids + [pad] * (width - len(e.ids)) for e in part], device=device)
        mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in part], device=device)
        hidden = torch.stack(encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
        for row, e in enumerate(part):
            for pos, label in enumerate(e.piece_labels):
                if label >= 0:
                    feats.append(hidden[:, row, pos].float().cpu().numpy())
                    labels.append(label)
        if progress is not None:
            progress(min(1.0, (start + batch_size) / len(items)), "per-word vectors")
    return np.stack(feats, axis=1), np.array(labels, dtype=np.int64)


def _f1(y: np.ndarray, pred: np.ndarray) -> float:
    name = LABELS.index(NAME)
    tp = int(((pred == name) & (y == name)).sum())
    fp, fn = int(((pred == name) & (y != name)).sum()), int(((pred != name) & (y == name)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def probe_word_layers(feats: dict[str, np.ndarray], labels: dict[str, np.ndarray],
                      c_grid: tuple[float, ...] = C_GRID) -> WordLayerScores:
    """One probe per layer of ``feats[split]`` (layers, words, hidden): see the module docstring."""
    test_f1, val_f1, test_acc, cs = [], [], [], []
    with threadpool_limits(limits=1, user_api="blas"):
        for layer in range(len(feats["train"])):
            scaler = StandardScaler().fit(feats["train"][layer])
            head, c, _ = fit_choosing_c(scaler.transform(feats["train"][layer]), labels["train"],
                                        scaler.transform(feats["validation"][layer]), labels["validation"], c_grid)
            val_pred = head.predict(scaler.transform(feats["validation"][layer]))
            test_pred = head.predict(scaler.transform(feats["test"][layer]))
            val_f1.append(_f1(labels["validation"], val_pred))
            test_f1.append(_f1(labels["test"], test_pred))
            test_acc.append(float((test_pred == labels["test"]).mean()))
            cs.append(c)
    return WordLayerScores(tuple(test_f1), tuple(val_f1), tuple(test_acc), tuple(cs))


def _scores_of(model, tokenizer, parts: dict[str, list[TaggedSentence]], progress: Progress | None
               ) -> tuple[WordLayerScores, dict[str, np.ndarray]]:
    feats, labels = {}, {}
    for k, (split, sentences) in enumerate(parts.items()):
        report = None if progress is None else (lambda f, m, k=k, split=split: progress((k + f) / len(parts), f"{split}: {m}"))
        feats[split], labels[split] = word_features(model, tokenizer, sentences, progress=report)
    return probe_word_layers(feats, labels), labels


def probe_names(model_name: str, model: torch.nn.Module, tokenizer, splits: NameSplits, random_control: bool = True,
                seed: int = 0, sizes: dict[str, int] | None = None, progress: Progress | None = None,
                budget: WorkBudget | None = None) -> WordProbe:
    """The names probe of every layer of ``model`` (and of random weights of its shape), on the first ``sizes``
    sentences of each split (default :data:`WORD_PROBE_SENTENCES`). ``budget``: charged with every sentence
    through every model up front and checked after each batch."""
    sizes = {**WORD_PROBE_SENTENCES, **(sizes or {})}
    parts = {split: splits.split(split)[:n] for split, n in sizes.items()}
    models = 2 if random_control else 1
    budget = budget or unbounded()
    budget.charge(probe_gflop(model.config, sum(map(len, parts.values())), TOKENS, models),
                  f"{model_name} for the names probe of {sum(map(len, parts.values())):,} sentences through "
                  f"{models} models", "Probe a smaller model.")
    progress = checking(progress, budget)
    share = 1 / models
    mine, labels = _scores_of(model, tokenizer, parts, lambda f, m: progress(share * f, m))
    control = None
    if random_control:
        control, _ = _scores_of(random_model_like(model, seed), tokenizer, parts,
                                lambda f, m: progress(share + share * f, f"random control: {m}"))
    majority = float((labels["test"] == LABELS.index("O")).mean())
    return WordProbe("names", len(labels["train"]), len(labels["test"]), majority, mine, control)

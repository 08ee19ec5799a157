"""One cell of Table 5 in miniature: a twin fine-tuned on a task with a seed, chosen on validation, scored on test.

Both twins start from their shipped weights (:mod:`bertdemo.models.twins`) with the same new head drawn from the
seed (:func:`bertdemo.finetune.engine.build_model`), the same batches in the same order and the same schedule
(:func:`bertdemo.finetune.loop.train_steps`); the validation split is scored every ``eval_every`` steps and at the
end, the weights of the best validation score are kept, and only those are scored on the test split.

The left-only constraint is kept at fine-tuning, as the paper did: the left-to-right twin's fine-tuned model keeps
``is_decoder=True``, so every position attends to itself and the positions before it only.

* Sentence level (the topic task): BERT's classifier reads [CLS], at position 0 — under a causal mask [CLS]
  sees only itself, so the left-to-right twin's head reads the **last** real piece ([SEP]), the one output that
  has seen the whole sentence, as GPT does (:func:`sentence_logits`); both go through the pooler's dense + tanh
  and the classifier.
* Token level ("Find the names"): each word's label is predicted from its own first piece
  (:mod:`bertdemo.finetune.token_engine`), which for the left-to-right twin has seen that piece and the words
  before it only.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import BertForSequenceClassification, BertForTokenClassification

from bertdemo.corpus import names as names_corpus
from bertdemo.finetune import token_engine
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import TopicTask, batch_of, build_model, encode, too_few_steps
from bertdemo.finetune.loop import train_steps
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.table5 import CellSettings, twin_config
from bertdemo.finetune.token_engine import WordTask
from bertdemo.models.causal import is_left_to_right
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status


@dataclass
class CellResult:
    """What one cell measured: the test score of the weights chosen on validation, and how it got there."""

    twin: str
    task: str
    seed: int
    test_score: float  # topic: accuracy; names: word-level F1 of NAME
    val_score: float  # the chosen weights' validation score
    chosen_step: int  # the step whose weights were kept
    steps: int  # steps taken
    seconds: float  # wall time, evaluations included
    status: str
    model: torch.nn.Module | None = None  # the chosen fine-tuned model (eval mode), for inspection and tests
    planned_steps: int = 0  # the settings' steps: more than ``steps`` when a time budget ended the cell

    @property
    def cut_by_budget(self) -> bool:
        """Whether a time budget ended the cell before its planned steps (a stop is not a budget)."""
        return self.status != Status.STOPPED and self.steps < self.planned_steps


def sentence_logits(model: BertForSequenceClassification, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B, labels) logits of a sentence classifier: from [CLS] (position 0) for a masked LM; from the last real
    piece (the last position the attention mask keeps; padding on the right) for a left-to-right model, whose
    [CLS] sees only itself. Both through the pooler's dense + tanh, dropout and the classifier."""
    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                        use_cache=False).last_hidden_state
    if is_left_to_right(model):
        last = batch["attention_mask"].long().sum(-1) - 1
        read = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    else:
        read = hidden[:, 0]
    pooler = model.bert.pooler
    return model.classifier(model.dropout(pooler.activation(pooler.dense(read))))


def build_twin(cfg: FinetuneConfig, labels: list[str], task: str, folder: str | Path | None = None):
    """The twin (``folder``: another model folder of the same kind, e.g. a test's tiny twin) with a new seeded head:
    a sentence classifier for ``topic``, a token classifier for ``names``; float32, the KV cache off, and
    ``is_decoder`` as the twin's own config says (the left-only constraint kept)."""
    if folder is not None:
        cfg = cfg.replace(init_path=str(folder))
    model_class = BertForSequenceClassification if task == "topic" else BertForTokenClassification
    built = build_model(cfg, labels, model_class=model_class)
    model = built.model.float()
    model.config.use_cache = False
    return model, built.tokenizer


@torch.inference_mode()
def topic_scores(model: BertForSequenceClassification, ids: list[list[int]], labels: list[int], pad_id: int,
                 batch_size: int = 128) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) over the examples, read as :func:`sentence_logits` reads (eval mode)."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    right, loss = 0, 0.0
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        logits = sentence_logits(model, batch_of([ids[i] for i in idx], pad_id, torch.device("cpu"))).float()
        target = torch.tensor([labels[i] for i in idx])
        right += int((logits.argmax(-1) == target).sum())
        loss += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
    model.train(was_training)
    return right / len(ids), loss / len(ids)


def names_scores(model: BertForTokenClassification, items, sentences, pad_id: int) -> tuple[float, float]:
    """(word-level F1 of NAME, mean cross-entropy per labelled piece) over the sentences (eval mode)."""
    pred = token_engine.predict_words(model, items, pad_id, torch.device("cpu"))
    words = names_corpus.word_scores([s.tags for s in sentences], token_engine.tags_of(pred.probs))
    return float(words["f1"]), pred.loss()


def finetune_twin(twin: str, task: str, seed: int, data: TopicTask | WordTask, settings: CellSettings = CellSettings(),
                  *, folder: str | Path | None = None, metrics: FinetuneMetrics | None = None,
                  control: RunControl | None = None, clock: Callable[[], float] = time.monotonic,
                  on_step: Callable[[int], None] | None = None, keep_model: bool = False,
                  time_budget_s: float = 0.0) -> CellResult:
    """Fine-tune the ``twin`` ("mlm" / "ltr") on ``task`` ("topic": ``data`` a TopicTask; "names": a WordTask) with
    ``seed`` for ``settings.steps`` steps; the weights with the best validation score (the earliest on a tie) are
    scored on test. ``metrics`` / ``control``: a live run's (progress, pause and stop); ``folder``: the model folder
    to start from instead of the shipped twin's (tests). ``time_budget_s`` (a public server's, under its cap): the
    cell ends there, its best weights scored, unless it took too few steps to mean anything
    (:func:`bertdemo.finetune.engine.too_few_steps`). A stopped cell, or one cut that short, reports no test score
    (NaN)."""
    settings = settings.validate()
    metrics = metrics or FinetuneMetrics()
    control = control or RunControl()
    start = clock()
    cfg = twin_config(twin, seed, settings, task)
    labels = list(data.labels)
    model, tokenizer = build_twin(cfg, labels, task, folder)
    pad_id = tokenizer.pad_token_id or 0
    cpu = torch.device("cpu")
    metrics.update(labels=labels, init_label=f"the shipped {twin} twin", param_count=sum(p.numel() for p in model.parameters()),
                   total_steps=settings.steps, message="Tokenizing…")
    if task == "topic":
        train = encode(tokenizer, data.train_texts, settings.max_seq_len)
        val = encode(tokenizer, data.val_texts, settings.max_seq_len)
        train_y = torch.tensor(data.train_labels, dtype=torch.long)

        def loss_of(idx: list[int]) -> torch.Tensor:
            logits = sentence_logits(model, batch_of([train[i] for i in idx], pad_id, cpu))
            return torch.nn.functional.cross_entropy(logits, train_y[idx])

        def score_val() -> tuple[float, float]:
            return topic_scores(model, val, data.val_labels, pad_id)

        def score_test() -> float:
            return topic_scores(model, encode(tokenizer, data.test_texts, settings.max_seq_len), data.test_labels,
                                pad_id)[0]
    else:
        max_len = max(settings.max_seq_len, token_engine.MIN_PIECES)
        train = token_engine.align(tokenizer, [s.words for s in data.train], [s.label_ids for s in data.train], max_len)
        val = token_engine.align(tokenizer, [s.words for s in data.validation], [s.label_ids for s in data.validation],
                                 max_len)

        def loss_of(idx: list[int]) -> torch.Tensor:
            part = [train[i] for i in idx]
            return model(**token_engine._batch(part, pad_id, cpu), labels=token_engine._piece_labels(part, cpu)).loss

        def score_val() -> tuple[float, float]:
            return names_scores(model, val, data.validation, pad_id)

        def score_test() -> float:
            test = token_engine.align(tokenizer, [s.words for s in data.test], None, max_len)
            return names_scores(model, test, data.test, pad_id)[0]
    if len(train) < settings.batch_size:
        raise ValueError(f"The training split has {len(train)} examples, fewer than one batch of {settings.batch_size}.")
    best: dict = {"score": -math.inf, "step": 0, "state": None}

    def evaluate_at(step: int) -> None:
        score, loss = score_val()
        metrics.log_eval(step, clock() - start, loss, score, score, [])
        if score > best["score"]:
            best.update(score=score, step=step, state=copy.deepcopy(model.state_dict()))

    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay)
    torch.manual_seed(seed)  # dropout: the same stream for both twins
    model.train()
    metrics.update(status=Status.RUNNING, message="Scoring the start on validation…")
    evaluate_at(0)
    metrics.update(message="")
    batches_per_epoch = max(1, len(train) // settings.batch_size)
    step, status = train_steps(
        cfg, model, optimizer, metrics, control, clock, n_train=len(train), total=settings.steps,
        batches_per_epoch=batches_per_epoch, generator=torch.Generator().manual_seed(seed),
        loss_of=loss_of, progress_of=lambda s, spent: 1.0 if 0 < time_budget_s <= spent else s / settings.steps,
        elapsed=lambda: clock() - start, add_paused=lambda _held: None, evaluate_at=evaluate_at, on_step=on_step)
    if status == Status.STOPPED or too_few_steps(step, batches_per_epoch, settings.steps):
        model.eval()
        return CellResult(twin, task, seed, math.nan, best["score"], best["step"], step, clock() - start, status,
                          model if keep_model else None, settings.steps)
    evaluate_at(step)
    model.load_state_dict(best["state"])
    model.eval()
    metrics.update(message="Scoring the chosen weights on test…")
    test = score_test()
    return CellResult(twin, task, seed, float(test), float(best["score"]), int(best["step"]), step, clock() - start,
                      status, model if keep_model else None, settings.steps)


def per_seed(results: list[CellResult]) -> dict[str, dict[str, list[float]]]:
    """Test scores as ``scores[task][twin]`` in the order the results came (one per seed)."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in results:
        out.setdefault(r.task, {}).setdefault(r.twin, []).append(float(r.test_score))
    return out


def mean_seconds(results: list[CellResult]) -> dict[str, dict[str, float]]:
    """Each cell's mean wall seconds per seed (the bench reports them)."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in results:
        out.setdefault(r.task, {}).setdefault(r.twin, []).append(r.seconds)
    return {task: {twin: float(np.mean(v)) for twin, v in by.items()} for task, by in out.items()}

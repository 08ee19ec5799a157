"""Fine-tuning for a label per word: a ``BertForTokenClassification`` trained on "Find the names".

One vector per word, one label per word. :func:`align` follows transformers' token-classification recipe:
each word's label goes on its first wordpiece and -100 (ignored by the loss) on the rest, on [CLS], [SEP]
and on words that carry no label. :func:`predict_words` reads each word's probabilities from its first
piece, the same piece the loss trained. :func:`run_token_finetune` is the run: the same starts, seed,
schedule, pause / stop and time budget as the topic task (:mod:`bertdemo.finetune.engine`), evaluated
every ``eval_every`` steps on a fixed validation sample. The validation sample chooses the step whose weights
the run keeps (:class:`BestStep`: the highest F1 of NAME, then the lowest loss; transformers' Trainer does the
same with ``load_best_model_at_end``); those weights are scored at the end on the whole validation and test splits,
against the landmarks (every word O; the tag each word had most often in training), with the test split's errors
listed, and saved. The checkpoint is a stock ``BertForTokenClassification`` folder (``id2label`` O / NAME).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import BertForTokenClassification, PreTrainedTokenizerBase

from bertdemo.corpus import names as names_corpus
from bertdemo.corpus.names import LABELS, NAME, OTHER, NameSplits, TaggedSentence
from bertdemo.explore.encoding import pad_batch
from bertdemo.finetune.best_weights import KeptBest
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import (
    _device,
    _final_message,
    budget_progress,
    build_model,
    finish,
    too_few_sentence,
    too_few_steps,
)
from bertdemo.finetune.loop import train_steps
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.own_data import shown_codes
from bertdemo.locks import pieces_of, tokenize
from bertdemo.models.load_errors import shown_fault
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status

log = logging.getLogger(__name__)

IGNORE = -100  # transformers' ignore index: no loss, no score
MIN_PIECES = 64  # a names sentence (5-30 words) fits in 64 pieces but for 1 in 2,000; a shorter max_seq_len is raised
ERRORS_KEPT = 40  # missed names and false names listed from the test split, each


@dataclass(frozen=True)
class WordTask:
    """A labelled word-tagging task in three fixed splits: each sentence's words and label ids (-100: none)."""

    labels: list[str]
    train: list[TaggedSentence]
    validation: list[TaggedSentence]
    test: list[TaggedSentence]


@dataclass
class BestStep(KeptBest):
    """The step chosen on the validation sample: the highest F1 of NAME, then the lowest loss (among steps whose
    F1 is 0 alike, the one that learned most), the earliest on a full tie. Keeps that step's weights (a copy on the CPU)
    and, when the sample is the whole validation split, that evaluation's words and probabilities."""

    wall_s: float = 0.0
    f1: float = -math.inf
    loss: float = math.inf
    whole_split: tuple[dict, list] | None = None

    def consider(self, step: int, wall_s: float, f1: float, loss: float, model: torch.nn.Module,
                 whole_split: tuple[dict, list] | None) -> None:
        """Keep ``model``'s weights if this evaluation beats the kept one."""
        if self.beats((f1, -loss)):
            self.keep(step, (f1, -loss), model)
            self.wall_s, self.f1, self.loss, self.whole_split = wall_s, f1, loss, whole_split

    def as_dict(self, last_step: int, batches_per_epoch: int, sample: int) -> dict:
        """What the page and the API read: the chosen step, its epoch, its sample F1 and loss, and the last step."""
        return {"step": self.step, "epoch": round(self.step / batches_per_epoch, 3), "wall_s": round(self.wall_s, 1),
                "f1": self.f1, "loss": self.loss, "last_step": last_step, "on": f"validation sample of {sample:,}"}


def task_from_name_splits(splits: NameSplits) -> WordTask:
    return WordTask(list(LABELS), splits.train, splits.validation, splits.test)


@dataclass(frozen=True)
class Encoded:
    """One sentence as the model reads it: piece ids, the label of each piece (-100 but on first pieces of
    labelled words) and the position of each word's first piece (-1: cut by ``max_len``)."""

    ids: list[int]
    piece_labels: list[int]
    first_piece: list[int]


def align(tokenizer: PreTrainedTokenizerBase, words: Sequence[Sequence[str]], labels: Sequence[Sequence[int]] | None,
          max_len: int) -> list[Encoded]:
    """Each sentence's pieces (words given, ``is_split_into_words``), cut at ``max_len``, with each word's label
    on its first piece and -100 elsewhere (``labels`` None: -100 everywhere)."""
    enc = tokenize(tokenizer, [list(w) for w in words], is_split_into_words=True, truncation=True, max_length=max_len)
    out = []
    for b, sentence in enumerate(words):
        word_ids = enc.word_ids(b)
        piece_labels, first = [IGNORE] * len(word_ids), [-1] * len(sentence)
        previous = None
        for pos, w in enumerate(word_ids):
            if w is not None and w != previous:
                first[w] = pos
                if labels is not None:
                    piece_labels[pos] = int(labels[b][w])
            previous = w
        out.append(Encoded(list(enc["input_ids"][b]), piece_labels, first))
    return out


NO_PIECE = "has no WordPiece: the model reads nothing of it (only invisible or control characters)"


def pieceless(tokenizer: PreTrainedTokenizerBase, words: Sequence[str], item: Encoded) -> int | None:
    """The first of ``words`` (encoded as ``item``) the tokenizer reads no piece of (U+200B, NUL, U+FEFF: BERT's
    cleaning drops them), else None: a word without a first piece is then one the length limit cut."""
    return next((w for w, pos in enumerate(item.first_piece) if pos < 0 and not pieces_of(tokenizer, words[w])), None)


def _batch(items: Sequence[Encoded], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    return pad_batch([{"input_ids": e.ids, "attention_mask": [1] * len(e.ids)} for e in items], pad_id, device)


def _piece_labels(items: Sequence[Encoded], device: torch.device) -> torch.Tensor:
    width = max(len(e.ids) for e in items)
    return torch.tensor([e.piece_labels + [IGNORE] * (width - len(e.ids)) for e in items], device=device)


@dataclass
class Predicted:
    """Each sentence's words' probabilities (words, labels), read at each word's first piece (a word cut by the
    length limit: probability 1 for O), and each sentence's summed cross-entropy over its labelled pieces."""

    probs: list[np.ndarray]
    loss_sums: np.ndarray
    counts: np.ndarray

    def loss(self, n: int | None = None) -> float:
        """Mean cross-entropy per labelled piece over the first ``n`` sentences (all when None)."""
        count = self.counts[:n].sum()
        return float(self.loss_sums[:n].sum() / count) if count else math.nan


def length_batches(items: Sequence[Encoded], batch_size: int, max_pieces: int | None = None) -> list[list[int]]:
    """Indices of ``items``, shortest first, in batches of at most ``batch_size`` items and, when given,
    ``max_pieces`` pieces padding included (an item longer than that alone)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(items)), key=lambda i: len(items[i].ids)):
        width = len(items[i].ids)  # the longest yet: the batch's padded width with it
        if current and (len(current) == batch_size or (max_pieces and (len(current) + 1) * width > max_pieces)):
            batches.append(current)
            current = []
        current.append(i)
    return batches + ([current] if current else [])


@torch.inference_mode()
def predict_words(model: BertForTokenClassification, items: Sequence[Encoded], pad_id: int, device: torch.device,
                  batch_size: int = 64, max_pieces: int | None = None) -> Predicted:
    """The model's own forward over ``items`` in eval mode (batches sorted by length, of at most ``max_pieces``
    pieces when given: :func:`length_batches`): see :class:`Predicted`."""
    was_training = model.training
    model.eval()
    probs: list[np.ndarray] = [np.zeros((0, 0))] * len(items)
    loss_sums, counts = np.zeros(len(items)), np.zeros(len(items), dtype=np.int64)
    for idx in length_batches(items, batch_size, max_pieces):
        part = [items[i] for i in idx]
        logits = model(**_batch(part, pad_id, device)).logits.float()
        target = _piece_labels(part, device)
        losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, ignore_index=IGNORE,
                                                   reduction="none").sum(-1)
        loss_sums[idx] = losses.cpu().numpy()
        counts[idx] = (target != IGNORE).sum(-1).cpu().numpy()
        p = logits.softmax(-1).cpu().numpy()
        for row, i in enumerate(idx):
            first = np.array(items[i].first_piece, dtype=np.int64)
            words = np.zeros((len(first), p.shape[-1]))
            words[:, 0] = 1.0
            kept = first >= 0
            words[kept] = p[row, first[kept]]
            probs[i] = words
    model.train(was_training)
    return Predicted(probs, loss_sums, counts)


def tags_of(probs: Sequence[np.ndarray], labels: Sequence[str] = LABELS) -> list[list[str]]:
    """The most probable label of each word."""
    return [[labels[k] for k in p.argmax(-1)] for p in probs]


def landmarks(task: WordTask) -> dict[str, dict[str, dict]]:
    """The landmarks' word-level scores on validation and test: every word O, and per-word memory (the tag each
    word had most often in training; an unseen word O)."""
    memory = names_corpus.word_memory(task.train)
    out: dict[str, dict[str, dict]] = {}
    for name, split in (("validation", task.validation), ("test", task.test)):
        true = [s.tags for s in split]
        out.setdefault("all_o", {})[name] = names_corpus.word_scores(true, [[OTHER] * len(s.words) for s in split])
        out.setdefault("word_memory", {})[name] = names_corpus.word_scores(
            true, [names_corpus.memory_tags(memory, s.words) for s in split])
    return out


def errors(split: Sequence[TaggedSentence], predicted: Sequence[Sequence[str]], probs: Sequence[np.ndarray],
           kept: int = ERRORS_KEPT) -> dict[str, list[dict]]:
    """The split's errors in order: names the model missed and words it wrongly called names, each with its
    sentence's words, the word's index and P(NAME) (the first ``kept`` of each)."""
    missed, false = [], []
    for s, row, p in zip(split, predicted, probs, strict=True):
        for i, (t, guess) in enumerate(zip(s.tags, row, strict=True)):
            if t is None or t == guess:
                continue
            entry = {"words": list(s.words), "index": i, "word": s.words[i],
                     "p_name": float(p[i, LABELS.index(NAME)])}
            (missed if t == NAME else false).append(entry)
    return {"missed": missed[:kept], "false": false[:kept], "missed_total": len(missed), "false_total": len(false)}


def _scores(split: Sequence[TaggedSentence], probs: Sequence[np.ndarray]) -> tuple[dict, dict, list[list[str]]]:
    predicted = tags_of(probs)
    true = [s.tags for s in split]
    return names_corpus.word_scores(true, predicted), names_corpus.entity_scores(true, predicted), predicted


def run_token_finetune(cfg: FinetuneConfig, task: WordTask, metrics: FinetuneMetrics, control: RunControl,
                       checkpoint_dir: Path | None, cache_dir: str | Path | None = None,
                       clock: Callable[[], float] = time.monotonic,
                       on_step: Callable[[int], None] | None = None) -> str:
    """Fine-tune a token classifier as ``cfg`` says, writing progress into ``metrics``; returns the final status
    (the same contract as :func:`bertdemo.finetune.engine.run_finetune`)."""
    try:
        return _run(cfg, task, metrics, control, checkpoint_dir, cache_dir, clock, on_step)
    except Exception as err:  # the page shows it; the server keeps serving
        metrics.update(status=Status.FAILED, message=f"Fine-tuning failed: {shown_fault(err)}")
        log.exception("Fine-tuning failed")
        return Status.FAILED


def _run(cfg, task: WordTask, metrics, control, checkpoint_dir, cache_dir, clock, on_step) -> str:
    start = clock()
    device = _device(cfg)
    if cfg.num_threads and device.type == "cpu":
        torch.set_num_threads(cfg.num_threads)
    metrics.update(message="Loading the starting model…", labels=list(task.labels), settings=cfg.flat(), task="names",
                   init=cfg.init, probe_text="", device=str(device))
    built = build_model(cfg, task.labels, cache_dir, model_class=BertForTokenClassification)
    model, tokenizer = built.model.to(device), built.tokenizer
    pad_id = tokenizer.pad_token_id or 0
    marks = landmarks(task)
    report = {"rule": names_corpus.RULE, "rule_precision": list(names_corpus.RULE_PRECISION), "landmarks": marks,
              "sentences": {"train": len(task.train), "validation": len(task.validation), "test": len(task.test)}}
    metrics.update(init_label=built.label, new_weights=built.new_weights, names=report,
                   param_count=sum(p.numel() for p in model.parameters()), message="Tokenizing…")
    max_len = max(cfg.max_seq_len, MIN_PIECES)
    train = align(tokenizer, [s.words for s in task.train], [s.label_ids for s in task.train], max_len)
    val = align(tokenizer, [s.words for s in task.validation], [s.label_ids for s in task.validation], max_len)
    batches_per_epoch = len(train) // cfg.batch_size
    if batches_per_epoch == 0:
        raise ValueError(f"The training split has {len(train)} sentences, fewer than one batch of {cfg.batch_size}.")
    total = max(1, math.ceil(cfg.epochs * batches_per_epoch))
    sample = min(cfg.eval_examples, len(val))
    metrics.update(total_steps=total, eval_examples=sample)
    gen = torch.Generator().manual_seed(cfg.seed)  # the data order: the same for every start
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    paused = [0.0]  # seconds spent paused: not training time

    def elapsed() -> float:
        return clock() - start - paused[0]

    # what the final evaluation scores: the whole validation split (again, for the chosen weights, when the
    # sample is only part of it) and the test split
    final_sentences = len(val) * (1 if sample == len(val) else 2) + len(task.test)
    eval_rate = [0.0]  # seconds per evaluated sentence, as last measured (the final evaluation's time is foreseen)
    best = BestStep()

    def validate(n: int) -> tuple[dict, list, float, dict]:
        """The first ``n`` validation sentences scored: (their word scores, probabilities, the sample's loss and
        word scores)."""
        began = clock()
        pred = predict_words(model, val[:n], pad_id, device)
        eval_rate[0] = max(0.0, clock() - began) / max(1, n)
        words = _scores(task.validation[:n], pred.probs)[0]
        head = words if n == sample else _scores(task.validation[:sample], pred.probs[:sample])[0]
        return words, pred.probs, pred.loss(sample), head

    def run_eval(step: int, n: int, last: bool = False) -> tuple[dict, list]:
        """Score the first ``n`` validation sentences; the curve's point is always the fixed sample's, and the
        sample chooses which step's weights the run keeps among the fine-tuned ones (the start, step 0, only
        when the run took no step: its head is untrained)."""
        words, probs, loss, head = validate(n)
        wall = elapsed()
        metrics.log_eval(step, wall, loss, head["accuracy"], head["f1"], [])
        if step > 0 or last:
            best.consider(step, wall, head["f1"], loss, model, (words, probs) if n == len(val) else None)
        return words, probs

    def keep_chosen(step: int) -> dict:
        """Leave the model with the chosen step's weights; the report with which step that is."""
        if best.step != step:
            best.restore(model)
        with_choice = {**report, "chosen": best.as_dict(step, batches_per_epoch, sample)}
        metrics.update(names=with_choice)
        return with_choice

    torch.manual_seed(cfg.seed)  # dropout: the same stream for every start
    model.train()
    metrics.update(status=Status.RUNNING, message="Evaluating the starting model…")
    run_eval(0, sample)
    metrics.update(message="")
    step, status = train_steps(
        cfg, model, optimizer, metrics, control, clock, n_train=len(train), total=total,
        batches_per_epoch=batches_per_epoch, generator=gen,
        loss_of=lambda idx: model(**_batch([train[i] for i in idx], pad_id, device),
                                  labels=_piece_labels([train[i] for i in idx], device)).loss,
        progress_of=lambda step, spent: max(step / total, budget_progress(spent, eval_rate[0] * final_sentences,
                                                                          cfg.time_budget_s)),
        elapsed=elapsed, add_paused=lambda held: paused.__setitem__(0, paused[0] + held),
        evaluate_at=lambda step: run_eval(step, sample), on_step=on_step)
    stopped = status == Status.STOPPED
    cut_short = not stopped and too_few_steps(step, batches_per_epoch, total)
    if stopped or cut_short:  # a Stop frees the slot within seconds: the fixed sample only; a run the time budget
        # ended before it learned anything is not scored on test either (no result to read as one)
        metrics.update(status=Status.STOPPING if stopped else Status.RUNNING,
                       message="Final evaluation on the fixed validation sample…")
        run_eval(step, sample, last=True)
        report = keep_chosen(step)
    else:
        metrics.update(status=Status.RUNNING, message="Final evaluation on the validation and test splits…")
        val_words, val_probs = run_eval(step, len(val), last=True)
        report = keep_chosen(step)
        if best.step != step:  # the chosen weights' own scores on the whole validation split
            val_words, val_probs = best.whole_split or validate(len(val))[:2]
        val_true = [s.tags for s in task.validation]
        val_pred = tags_of(val_probs)
        confusion = [[sum(t == a and p == b for ts, ps in zip(val_true, val_pred) for t, p in zip(ts, ps))
                      for b in LABELS] for a in LABELS]
        test = align(tokenizer, [s.words for s in task.test], None, max_len)
        test_probs = predict_words(model, test, pad_id, device).probs
        test_words, test_entities, test_pred = _scores(task.test, test_probs)
        report = {**report, "validation": val_words, "test": test_words, "test_entity": test_entities,
                  "errors": errors(task.test, test_pred, test_probs)}
        metrics.update(val_accuracy_all=val_words["accuracy"], val_macro_f1_all=val_words["f1"],
                       test_accuracy=test_words["accuracy"], test_macro_f1=test_words["f1"], confusion=confusion,
                       names=report)
    metrics.update(elapsed_s=elapsed())
    ended = "time budget" if step < total and status == Status.FINISHED else ("stopped" if stopped else "")
    kept = chosen_sentence(best.step, step, sample, tested=not (stopped or cut_short))
    message = f"{_final_message(step, total, elapsed(), ended, cfg)} {kept}"
    if cut_short:
        message += " " + too_few_sentence(step, total)
    elif not stopped:
        memory = marks["word_memory"]["test"]["f1"]
        message += (f" Test word-level F1 for names {report['test']['f1']:.1%} against {memory:.1%} for per-word "
                    "memory (the tag each word had most often in training) and 0 % for every word O.")
    finish(status, message, model, tokenizer, cfg, metrics, checkpoint_dir)
    return status


def chosen_sentence(chosen: int, last: int, sample: int, tested: bool) -> str:
    """Which step's weights a names run kept, in words."""
    which = "its last step" if chosen == last else f"step {chosen:,} (not the last, {last:,})"
    return (f"Kept the weights of {which}: the best F1 of NAME on the validation sample ({sample:,} sentences), then "
            "the lowest loss, among the evaluations after training began. Those weights are the ones "
            f"{'scored on test and ' if tested else ''}saved.")


@torch.inference_mode()
def tag_sentence(model: BertForTokenClassification, tokenizer: PreTrainedTokenizerBase, text: str,
                 max_len: int = 512) -> list[tuple[str, str, float]]:
    """Each word of ``text`` (:func:`bertdemo.corpus.names.words`) with its most probable label and that label's
    probability, read at its first piece from the model's own forward (eval mode). A word past ``max_len``
    pieces is refused (ValueError), never guessed."""
    words = names_corpus.words(text)
    if not words:
        raise ValueError("Type a sentence with at least one word.")
    item = align(tokenizer, [words], None, max_len)[0]
    if min(item.first_piece) < 0:
        empty = pieceless(tokenizer, words, item)
        if empty is not None:
            raise ValueError(f"Word {empty + 1} ({shown_codes(words[empty])!r}) {NO_PIECE}; remove it.")
        raise ValueError(f"The sentence is longer than the model's {max_len} pieces: shorten it.")
    device = next(model.parameters()).device
    probs = predict_words(model, [item], tokenizer.pad_token_id or 0, device).probs[0]
    labels = [model.config.id2label[k] for k in range(model.config.num_labels)]
    return [(w, labels[int(p.argmax())], float(p.max())) for w, p in zip(words, probs)]

"""The fine-tuning loop: a ``BertForSequenceClassification`` trained on the topic task, evaluated as it goes.

One sitting to read: :func:`build_model` (from the embedded model, a pretraining checkpoint or random
weights of the same shape — the same seed for the new head in every case), :func:`encode` (pieces, padded
per batch), :func:`evaluate` (accuracy, macro-F1, loss, and the sentence vectors the classifier reads), and
:func:`run_finetune` (warm-up then linear decay, evaluation every ``eval_every`` steps, pause / stop between
steps, a checkpoint written atomically at the end). The checkpoint is a stock
``BertForSequenceClassification`` folder with the topic names as ``id2label``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from bertdemo import compat, storage
from bertdemo.explore.encoding import pad_batch
from bertdemo.finetune.config import EMBEDDED, RANDOM, FinetuneConfig, is_random_start, run_of_init
from bertdemo.finetune.loop import lr_factor, train_steps  # noqa: F401 - lr_factor: the schedule, imported from here too
from bertdemo.finetune.metrics import FinetuneMetrics, history_dict
from bertdemo.finetune.scores import confusion_matrix, scores
from bertdemo.locks import MODEL_INIT_LOCK, tokenize
from bertdemo.models import embedded, mlm_head
from bertdemo.models.load_errors import shown_fault
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status

log = logging.getLogger(__name__)

PCA_POINTS = 400  # validation examples drawn in the before / after picture
HISTORY_FILE = "finetune_history.json"
CONFIG_FILE = mlm_head.FINETUNE_CONFIG_FILE  # the run's settings: a masked-LM load finds its start there


@dataclass(frozen=True)
class TopicTask:
    """A labelled text-classification task in three fixed splits (plain lists: the engine needs no datasets)."""

    labels: list[str]  # class names, in class order
    train_texts: list[str]
    train_labels: list[int]
    val_texts: list[str]
    val_labels: list[int]
    test_texts: list[str]
    test_labels: list[int]


def task_from_splits(splits, text: str = "text", label: str = "label") -> TopicTask:
    """A :class:`TopicTask` from a ``datasets.DatasetDict`` with train / validation / test splits and a
    ``ClassLabel`` column."""
    names = list(splits["train"].features[label].names)
    cols = {name: (list(splits[name][text]), [int(y) for y in splits[name][label]])
            for name in ("train", "validation", "test")}
    return TopicTask(names, *cols["train"], *cols["validation"], *cols["test"])


@dataclass
class Built:
    """A model ready to fine-tune, with what is new in it (the page explains "newly initialized")."""

    model: BertForSequenceClassification
    tokenizer: PreTrainedTokenizerBase
    new_weights: list[str]  # parameter groups that did not come from the starting checkpoint
    label: str  # how the page names the start


def _groups(names: Sequence[str]) -> list[str]:
    """Parameter names grouped as a learner reads them: ``classifier``, ``bert.pooler``, …"""
    out = []
    for name in names:
        group = ".".join(name.split(".")[:2]) if name.startswith("bert.") else name.split(".")[0]
        if group not in out:
            out.append(group)
    return out


def init_folder(cfg: FinetuneConfig, cache_dir: str | Path | None = None) -> Path:
    """The model folder a config starts from (the embedded model's for ``embedded`` and ``random``)."""
    if cfg.init_path:  # set by the run service (a run's checkpoint) or by code (a benchmark's model folder)
        return Path(cfg.init_path)
    if cfg.init in (EMBEDDED, RANDOM):
        return embedded.mlm_dir(cache_dir=cache_dir)
    raise ValueError(f"{cfg.init} was not resolved to a checkpoint folder.")


def build_model(cfg: FinetuneConfig, labels: list[str], cache_dir: str | Path | None = None,
                model_class: type = BertForSequenceClassification) -> Built:
    """The model to fine-tune: the starting weights with a new classifier head of ``len(labels)`` outputs
    (``model_class``: a sentence classifier, or ``BertForTokenClassification`` for a label per word).

    The head (and any part the checkpoint lacks, such as the pooler of a masked-LM) is initialised from
    ``cfg.seed``, so two runs with different starts but the same seed begin with the same head."""
    folder = init_folder(cfg, cache_dir)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    id2label = dict(enumerate(labels))
    label2id = {name: i for i, name in id2label.items()}
    torch.manual_seed(cfg.seed)
    if is_random_start(cfg.init):  # the embedded model's shape, or the run's (its folder's config)
        config = BertConfig.from_pretrained(folder, num_labels=len(labels), id2label=id2label, label2id=label2id,
                                            architectures=[model_class.__name__])
        with MODEL_INIT_LOCK:  # transformers sets a process-wide default dtype while it builds a model
            model = model_class(config)
        head = [n for n in ("bert.pooler.dense.weight", "classifier.weight") if n in dict(model.named_parameters())]
        _draw_again(model, head, cfg.seed)  # the head every start gets
        shape = "the embedded model" if cfg.init == RANDOM else f"pretraining run {run_of_init(cfg.init)}"
        return Built(model, tokenizer, [f"every weight (random, same shape as {shape})"],
                     f"random weights ({shape}'s shape: {config.num_hidden_layers} layers, hidden {config.hidden_size})")
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the "newly initialized" report is shown on the page, explained
    try:
        with MODEL_INIT_LOCK:
            model, info = model_class.from_pretrained(
                folder, num_labels=len(labels), id2label=id2label, label2id=label2id, output_loading_info=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    new = list(info.get("missing_keys", []))
    _draw_again(model, new, cfg.seed)
    label = "the embedded pretrained model" if cfg.init == EMBEDDED else f"pretraining run {cfg.init}"
    model.config.architectures = [model_class.__name__]
    return Built(model, tokenizer, sorted(_groups(new)), label)


def _draw_again(model: BertForSequenceClassification, parameter_names: Sequence[str], seed: int) -> None:
    """Initialise the modules holding these parameters from ``seed`` alone, in a fixed order, so every start
    (pretrained or random) gets the same new pooler and classifier whatever it drew before."""
    torch.manual_seed(seed)
    for module_name in sorted({n.rsplit(".", 1)[0] for n in parameter_names}):
        compat.init_weights(model, model.get_submodule(module_name))


def encode(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """Each text's input ids ([CLS] … [SEP]), cut at ``max_len`` pieces."""
    return tokenize(tokenizer, list(texts), truncation=True, max_length=max_len)["input_ids"]



def batch_of(ids: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``attention_mask``, both (B, S), padded to the batch's longest
    (:func:`bertdemo.explore.encoding.pad_batch`)."""
    return pad_batch([{"input_ids": list(x), "attention_mask": [1] * len(x)} for x in ids], pad_id, device)


@dataclass
class Evaluation:
    loss: float
    accuracy: float
    macro_f1: float
    confusion: np.ndarray  # (C, C) rows: true class, columns: predicted
    vectors: np.ndarray  # (N, D) the pooled [CLS] vector the classifier reads, per example
    predictions: np.ndarray  # (N,) the predicted class of each example
    losses: np.ndarray  # (N,) each example's cross-entropy

    def head(self, n: int, labels: Sequence[int], n_classes: int) -> Evaluation:
        """The same scores over the first ``n`` examples only (their predictions are already here)."""
        cm = confusion_matrix(labels[:n], self.predictions[:n], n_classes)
        return Evaluation(float(self.losses[:n].mean()), *scores(labels[:n], self.predictions[:n]), cm,
                          self.vectors[:n], self.predictions[:n], self.losses[:n])




@torch.inference_mode()
def evaluate(model: BertForSequenceClassification, ids: Sequence[Sequence[int]], labels: Sequence[int],
             pad_id: int, device: torch.device, batch_size: int = 64, keep_vectors: int = 0) -> Evaluation:
    """Accuracy, macro-F1 and mean cross-entropy over the examples (in eval mode: no dropout); the
    classifier's input vectors of the first ``keep_vectors`` examples. Batches are length-sorted."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    preds = np.zeros(len(ids), dtype=np.int64)
    losses = np.zeros(len(ids))
    vectors: dict[int, np.ndarray] = {}
    y = torch.tensor(labels, dtype=torch.long)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        out = model.bert(**batch_of([ids[i] for i in idx], pad_id, device))
        pooled = out.pooler_output  # (B, D): what the classifier reads
        logits = model.classifier(model.dropout(pooled)).float()
        target = y[idx].to(device)
        losses[idx] = torch.nn.functional.cross_entropy(logits, target, reduction="none").cpu().numpy()
        preds[idx] = logits.argmax(-1).cpu().numpy()
        for row, i in enumerate(idx):
            if i < keep_vectors:
                vectors[i] = pooled[row].float().cpu().numpy()
    model.train(was_training)
    cm = confusion_matrix(labels, preds, model.config.num_labels)
    vecs = np.stack([vectors[i] for i in range(min(keep_vectors, len(ids)))]) if keep_vectors else np.zeros((0, 0))
    return Evaluation(float(losses.mean()), *scores(labels, preds), cm, vecs, preds, losses)


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """(N, 2) projection on the two leading principal components (scikit-learn's PCA, exact SVD; signs fixed:
    each axis's largest |loading| positive)."""
    from sklearn.decomposition import PCA

    return PCA(n_components=2, svd_solver="full").fit_transform(vectors)


@torch.inference_mode()
def topic_probabilities(model: BertForSequenceClassification, tokenizer: PreTrainedTokenizerBase, text: str,
                        max_len: int, device: torch.device) -> list[float]:
    """P(topic | text) from the model's own forward (eval mode)."""
    was_training = model.training
    model.eval()
    enc = tokenize(tokenizer, text, truncation=True, max_length=max_len, return_tensors="pt").to(device)
    probs = model(**enc).logits.float().softmax(-1)[0].cpu().tolist()
    model.train(was_training)
    return probs


def save_checkpoint(folder: Path, model: BertForSequenceClassification, tokenizer: PreTrainedTokenizerBase,
                    cfg: FinetuneConfig, metrics: FinetuneMetrics, status: str | None = None) -> None:
    """The model, its tokenizer, its settings and its history (with the run's final ``status`` when given: the live
    status says so only once the model is in place), written to a temp folder then renamed into place."""
    snap = metrics.snapshot()
    if status is not None:
        snap = dataclasses.replace(snap, status=status)
    with storage.atomic_folder(folder) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / CONFIG_FILE).write_text(json.dumps(cfg.flat(), indent=2))
        (tmp / HISTORY_FILE).write_text(json.dumps(history_dict(snap)))


def finish(status: str, message: str, model: torch.nn.Module | None, tokenizer: PreTrainedTokenizerBase,
           cfg: FinetuneConfig, metrics: FinetuneMetrics, checkpoint_dir: Path | None) -> None:
    """A run's end: its model saved first (when it keeps one), then its status and sentence announced — so a page or
    an API client told "finished" can load ``ft:<id>`` at once."""
    metrics.update(message=message)
    if model is not None and checkpoint_dir is not None:
        model.to("cpu")
        save_checkpoint(Path(checkpoint_dir), model, tokenizer, cfg, metrics, status=status)
        metrics.update(checkpoint=str(checkpoint_dir))
    metrics.update(status=status, message=message)


FINAL_MARGIN = 1.25  # the final evaluation foreseen a quarter longer than measured (a busier machine, longer texts)


def budget_progress(elapsed_s: float, final_eval_s: float, budget_s: float) -> float:
    """How far the run is through its time budget (0 = no budget), counting the final evaluation still to come
    (``final_eval_s``, foreseen from the evaluations so far): the budget is training and evaluation, so the
    training stops where the final evaluation still fits."""
    if not budget_s:
        return 0.0
    return (elapsed_s + FINAL_MARGIN * final_eval_s) / budget_s


def _device(cfg: FinetuneConfig) -> torch.device:
    if cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for, but this machine has no CUDA GPU.")
        return torch.device("cuda")
    return torch.device("cpu")


def run_finetune(cfg: FinetuneConfig, task: TopicTask, metrics: FinetuneMetrics, control: RunControl,
                 checkpoint_dir: Path | None, cache_dir: str | Path | None = None,
                 clock: Callable[[], float] = time.monotonic, on_step: Callable[[int], None] | None = None) -> str:
    """Fine-tune as ``cfg`` says, writing progress into ``metrics``; returns the final status.

    The planned length is ``epochs`` passes; the time budget (training time from here, evaluations
    included — the final one foreseen from the ones before, :func:`budget_progress` — pauses not counted) may
    end it first, and the learning-rate schedule follows whichever is nearer its end, so a run cut by
    the budget still ends at a low learning rate. The checkpoint is written when the run ends (finished,
    stopped or out of time); a stopped run's final evaluation scores the fixed validation sample only, so a
    Stop frees the training slot within seconds."""
    try:
        return _run(cfg, task, metrics, control, checkpoint_dir, cache_dir, clock, on_step)
    except Exception as err:  # the page shows it; the server keeps serving
        metrics.update(status=Status.FAILED, message=f"Fine-tuning failed: {shown_fault(err)}")
        log.exception("Fine-tuning failed")
        return Status.FAILED


def _run(cfg, task, metrics, control, checkpoint_dir, cache_dir, clock, on_step) -> str:
    start = clock()
    device = _device(cfg)
    if cfg.num_threads and device.type == "cpu":
        torch.set_num_threads(cfg.num_threads)
    metrics.update(message="Loading the starting model…", labels=list(task.labels), settings=cfg.flat(),
                   init=cfg.init, probe_text=cfg.probe_text, device=str(device))
    built = build_model(cfg, task.labels, cache_dir)
    model, tokenizer = built.model.to(device), built.tokenizer
    pad_id = tokenizer.pad_token_id or 0
    metrics.update(init_label=built.label, new_weights=built.new_weights,
                   param_count=sum(p.numel() for p in model.parameters()), message="Tokenizing…")
    train_ids = encode(tokenizer, task.train_texts, cfg.max_seq_len)
    val_ids = encode(tokenizer, task.val_texts, cfg.max_seq_len)
    batches_per_epoch = len(train_ids) // cfg.batch_size
    if batches_per_epoch == 0:
        raise ValueError(f"The training split has {len(train_ids)} examples, fewer than one batch of {cfg.batch_size}.")
    total = max(1, math.ceil(cfg.epochs * batches_per_epoch))
    metrics.update(total_steps=total)
    gen = torch.Generator().manual_seed(cfg.seed)  # the data order: the same for every start
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    keep = min(PCA_POINTS, len(val_ids))
    labels_t = torch.tensor(task.train_labels, dtype=torch.long)

    paused = [0.0]  # seconds spent paused: not training time (neither the budget nor the schedule counts them)

    def elapsed() -> float:
        return clock() - start - paused[0]

    sample = min(cfg.eval_examples, len(val_ids))  # the validation examples the evaluations during the run score
    metrics.update(eval_examples=sample)
    final_examples = len(val_ids) + len(task.test_texts)  # what the final evaluation scores
    eval_rate = [0.0]  # seconds per evaluated example, as last measured (the final evaluation's time is foreseen)

    def run_eval(step: int, final: bool = False, whole_split: bool = True) -> None:
        n = (len(val_ids) if whole_split else min(len(val_ids), max(sample, keep))) if final else sample
        began = clock()
        whole = evaluate(model, val_ids[:n], task.val_labels[:n], pad_id, device,
                         keep_vectors=keep if step == 0 or final else 0)
        eval_rate[0] = max(0.0, clock() - began) / max(1, n)
        ev = whole.head(sample, task.val_labels, len(task.labels))  # the curve: always the same sample
        if final and whole_split:
            metrics.update(val_accuracy_all=whole.accuracy, val_macro_f1_all=whole.macro_f1)
        if final:
            ev.confusion = whole.confusion
        probe = topic_probabilities(model, tokenizer, cfg.probe_text, cfg.max_seq_len, device) if cfg.probe_text else []
        metrics.log_eval(step, elapsed(), ev.loss, ev.accuracy, ev.macro_f1, probe)
        if step == 0:
            metrics.update(pca_before=pca_2d(ev.vectors).round(4).tolist(), pca_labels=list(task.val_labels[:keep]),
                           pca_texts=list(task.val_texts[:keep]))
        if final:
            metrics.update(pca_after=pca_2d(ev.vectors).round(4).tolist(), confusion=ev.confusion.tolist())

    torch.manual_seed(cfg.seed)  # dropout: the same stream for every start
    model.train()
    metrics.update(status=Status.RUNNING, message="Evaluating the starting model…")
    run_eval(0)
    metrics.update(message="")
    step, status = train_steps(
        cfg, model, optimizer, metrics, control, clock, n_train=len(train_ids), total=total,
        batches_per_epoch=batches_per_epoch, generator=gen,
        loss_of=lambda idx: model(**batch_of([train_ids[i] for i in idx], pad_id, device), labels=labels_t[idx].to(device)).loss,
        progress_of=lambda step, spent: max(step / total, budget_progress(spent, eval_rate[0] * final_examples,
                                                                          cfg.time_budget_s)),
        elapsed=elapsed, add_paused=lambda held: paused.__setitem__(0, paused[0] + held), evaluate_at=run_eval,
        on_step=on_step)
    stopped = status == Status.STOPPED
    cut_short = not stopped and too_few_steps(step, batches_per_epoch, total)
    if stopped or cut_short:  # a Stop (or the server's wall-time cap) frees the slot within seconds: the fixed sample
        # only; a run the time budget ended before it learned anything is not scored on test either (no result)
        metrics.update(status=Status.STOPPING if stopped else Status.RUNNING,
                       message="Final evaluation on the fixed validation sample…")
        run_eval(step, final=True, whole_split=False)
    else:
        metrics.update(status=Status.RUNNING, message="Final evaluation on the validation and test splits…")
        run_eval(step, final=True)
        test = evaluate(model, encode(tokenizer, task.test_texts, cfg.max_seq_len), task.test_labels, pad_id, device)
        metrics.update(test_accuracy=test.accuracy, test_macro_f1=test.macro_f1)
    metrics.update(elapsed_s=elapsed())
    ended = "time budget" if step < total and status == Status.FINISHED else ("stopped" if stopped else "")
    message = _final_message(step, total, elapsed(), ended, cfg)
    if stopped:
        message += (" A stopped run is not scored on the whole validation and test splits, so the slot is free at "
                    "once: its last point is the fixed validation sample's, as every point of the curves.")
    elif cut_short:
        message += " " + too_few_sentence(step, total)
    finish(status, message, model, tokenizer, cfg, metrics, checkpoint_dir)
    return status


TOO_FEW_SHARE = 0.25  # a run that took less than a quarter of an epoch's steps (or of its planned steps) learned nothing


def too_few_steps(step: int, batches_per_epoch: int, total: int) -> bool:
    """Whether a run that ended at ``step`` (its time budget ran out: a busy machine, a large model) took too few
    steps to mean anything: under a quarter of one pass over the training examples (or of its planned steps)."""
    return step < TOO_FEW_SHARE * min(batches_per_epoch, total)


def too_few_sentence(step: int, total: int) -> str:
    """What the page says instead of a score when :func:`too_few_steps`."""
    return (f"Only {step:,} of its {total:,} steps ran before the time budget ended: too few to mean anything, so the "
            "run is not scored on the test split (a score now would be of a head that barely moved). Give it more "
            "time, fewer epochs or a smaller starting model.")


def _final_message(step: int, total: int, seconds: float, ended: str, cfg: FinetuneConfig) -> str:
    budget = f"{cfg.time_budget_s / 60:.3g}-minute" if cfg.time_budget_s >= 60 else f"{cfg.time_budget_s:.0f}-second"
    why = {"time budget": f"The {budget} time budget ended the run",
           "stopped": "Stopped"}.get(ended, "Finished all planned steps")
    text = f"{why} at step {step:,} of {total:,} ({seconds:.0f} s)."
    over = seconds - cfg.time_budget_s
    if cfg.time_budget_s and ended == "time budget" and over >= 1:
        text += (f" That is {over:.0f} s over the budget: the final evaluation took longer than the evaluations "
                 "before it foresaw (the machine got busier).")
    return text

"""Which layer knows what: linear probes of every frozen layer, beside their controls.

The tasks (surface: sentence length; syntax: bigram shift; semantics: topic) and what the literature
found are in :mod:`bertdemo.finetune.probe_tasks`. Each probe (:func:`probe_task`) fits a linear head
(:mod:`bertdemo.finetune.linear_head`) on every layer's mean-pooled and [CLS] features
(:mod:`bertdemo.finetune.features`, cached), beside its controls: the majority class and the same probe
on a model of the same shape with random weights (seeded, :func:`random_model_like`).
:func:`probe_layers` runs all three tasks; :func:`probe_checkpoints` follows one task (by default bigram
shift: when did the run learn word order?) across a pretraining run's checkpoints.

Cost: with :data:`~bertdemo.finetune.probe_tasks.TASK_SIZES` (600 / 200 / 200 per task) the embedded
6-layer model and its random control take about 6,000 encoder forwards of short sentences (most of the
time: 65 CPU-seconds, 50 s wall on 2 shared cores, ``bench/bench_layer_probes.py``) and 84 heads, each
fitted for 3 values of C (about 10 CPU-seconds, 2.7 times the hand-written batched heads they replaced);
features are 21 MB per task and model. The best layer is chosen on validation, reported on test.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bertdemo.finetune.features import POOLINGS, ActivationCache
from bertdemo.finetune.linear_head import train_linear_heads
from bertdemo.finetune.probe_tasks import TASK_KINDS, TASK_SIZES, TASKS, ProbeTask, build_task
from bertdemo.finetune.scores import scores
from bertdemo.locks import MODEL_INIT_LOCK
from bertdemo.request_budget import WorkBudget, checking, probe_gflop, unbounded

Progress = Callable[[float, str], None]
PROBE_TOKENS = 32  # a probe sentence's tokens, about (5 to 28 words), for the cost estimate


@dataclass(frozen=True)
class LayerScores:
    """Test accuracy of a probe of each layer (index 0: the embeddings) for each pooling, and the validation
    accuracy the best probe is chosen by."""

    model_name: str
    mean: tuple[float, ...]
    cls: tuple[float, ...]
    mean_macro_f1: tuple[float, ...]
    cls_macro_f1: tuple[float, ...]
    mean_val: tuple[float, ...]  # validation accuracy per layer
    cls_val: tuple[float, ...]

    @property
    def best(self) -> tuple[int, str, float]:
        """(layer, pooling, test accuracy) of the probe with the best validation accuracy (the lowest layer,
        then mean pooling, on a tie): chosen without looking at the test split it is reported on."""
        candidates = [(acc, -layer, -k, pooling) for k, pooling in enumerate(POOLINGS)
                      for layer, acc in enumerate(getattr(self, f"{pooling}_val"))]
        _, neg_layer, _, pooling = max(candidates)
        return -neg_layer, pooling, getattr(self, pooling)[-neg_layer]


@dataclass(frozen=True)
class TaskProbe:
    """A task probed at every layer of one model, beside its controls."""

    task: str
    kind: str  # "surface" | "syntax" | "semantics"
    n_train: int
    n_test: int
    majority_accuracy: float  # always the training split's most common label, on the test split
    model: LayerScores
    random: LayerScores | None  # the same probes on a random-weight model of the same shape


@dataclass(frozen=True)
class CheckpointProbe:
    """One checkpoint's probe of a task (mean-pooled, every layer)."""

    path: str
    step: int | None  # the training step from trainer_state.json when there is one
    accuracy: tuple[float, ...]  # test accuracy per layer, index 0 the embeddings
    majority_accuracy: float
    val_accuracy: tuple[float, ...]  # validation accuracy per layer: what the best layer is chosen by

    @property
    def best_layer(self) -> int:
        """The layer with the best validation accuracy (the lowest on a tie)."""
        return int(np.argmax(self.val_accuracy))

    @property
    def best_accuracy(self) -> float:
        """The test accuracy of :attr:`best_layer`."""
        return self.accuracy[self.best_layer]


def random_model_like(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """An encoder of ``model``'s shape (its config) with freshly initialised weights from ``seed``
    (torch's global random state is left as it was)."""
    from transformers import AutoModel

    with MODEL_INIT_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        fresh = AutoModel.from_config(model.config)
    return fresh.to(next(model.parameters()).device).eval()


def _majority(task: ProbeTask) -> float:
    top = int(np.bincount(task.labels["train"]).argmax())
    return scores(task.labels["test"], np.full_like(task.labels["test"], top))[0]


def _layer_scores(model_name: str, model: torch.nn.Module, tokenizer, task: ProbeTask, cache: ActivationCache,
                  progress: Progress | None, weights_key: object = None,
                  poolings: Sequence[str] = POOLINGS) -> LayerScores:
    splits = list(TASK_SIZES)
    texts = [t for split in splits for t in task.texts[split]]
    feats = cache.get(model_name, model, tokenizer, texts, progress=progress, weights_key=weights_key)
    a = len(task.texts["train"])
    b = a + len(task.texts["validation"])
    out: dict[str, tuple] = {}
    for pooling in POOLINGS:
        if pooling not in poolings:
            out[pooling] = out[f"{pooling}_macro_f1"] = out[f"{pooling}_val"] = ()
            continue
        f = feats.pooled(pooling)
        heads = train_linear_heads(f[:, :a], task.labels["train"], f[:, a:b], task.labels["validation"],
                                   f[:, b:], task.labels["test"])
        out[pooling] = tuple(h.test_accuracy for h in heads)
        out[f"{pooling}_macro_f1"] = tuple(h.test_macro_f1 for h in heads)
        out[f"{pooling}_val"] = tuple(h.val_accuracy for h in heads)
    return LayerScores(model_name, **out)


def _scaled(progress: Progress | None, start: float, span: float, label: str = "") -> Progress | None:
    """``progress`` for one part of a job: the part's fractions mapped to [start, start + span]."""
    if progress is None:
        return None
    return lambda fraction, message: progress(start + span * fraction, f"{label}{message}")


def probe_task(model_name: str, model: torch.nn.Module, tokenizer, task: ProbeTask, cache: ActivationCache,
               random_control: bool = True, seed: int = 0, progress: Progress | None = None,
               weights_key: object = None) -> TaskProbe:
    """Probe every layer of ``model`` (mean-pooled and [CLS]) on ``task``, with the majority class and
    (``random_control``) the same probes on :func:`random_model_like` ``(model, seed)``.
    ``progress(fraction, message)`` hears while features are computed (nothing when they are cached);
    ``weights_key``: what identifies the weights in ``cache`` (see :meth:`ActivationCache.get`)."""
    share = 0.5 if random_control else 1.0
    mine = _layer_scores(model_name, model, tokenizer, task, cache, _scaled(progress, 0.0, share), weights_key)
    control = None
    if random_control:
        config_key = json.dumps(model.config.to_dict(), sort_keys=True, default=str)
        control = _layer_scores(f"{model_name} (random weights, seed {seed})", random_model_like(model, seed),
                                tokenizer, task, cache, _scaled(progress, share, share, "random control: "),
                                weights_key=("random", int(seed), config_key))
    return TaskProbe(task.name, TASK_KINDS[task.name], len(task.texts["train"]), len(task.texts["test"]),
                     _majority(task), mine, control)


def probe_layers(model_name: str, model: torch.nn.Module, tokenizer, cache: ActivationCache,
                 tasks: Sequence[str] = TASKS, seed: int = 0, random_control: bool = True,
                 sizes: dict[str, int] | None = None, progress: Progress | None = None,
                 weights_key: object = None, budget: WorkBudget | None = None) -> list[TaskProbe]:
    """Every layer of ``model`` probed on each of ``tasks`` (default all three, in that order), with the
    controls. ``progress(fraction, message)`` hears across all the tasks, ending at 1.0; ``weights_key`` as in
    :func:`probe_task`. ``budget``: the request's, charged with every sentence through every model up front
    and checked after each batch."""
    for name in tasks:
        if name not in TASKS:
            raise ValueError(f"Unknown probe task {name!r}: use one of {', '.join(TASKS)}.")
    budget = budget or unbounded()
    sentences = len(tasks) * sum((sizes or TASK_SIZES).values())
    models = 2 if random_control else 1
    budget.charge(probe_gflop(model.config, sentences, PROBE_TOKENS, models),
                  f"{model_name} for layer probes of {sentences:,} sentences through {models} models",
                  "Probe a smaller model.")
    progress = checking(progress, budget)
    results = []
    for k, name in enumerate(tasks):
        part = _scaled(progress, k / len(tasks), 1 / len(tasks), f"{name}: ")
        results.append(probe_task(model_name, model, tokenizer, build_task(name, seed, sizes), cache,
                                  random_control, seed, part, weights_key))
    if progress is not None:
        progress(1.0, "Layer probes done")
    return results


def _checkpoint_step(folder: Path) -> int | None:
    state = folder / "trainer_state.json"
    try:
        step = json.loads(state.read_text(encoding="utf-8")).get("step")
    except (OSError, ValueError, AttributeError):
        return None
    return int(step) if isinstance(step, int) else None


def probe_checkpoints(paths: Sequence[str | Path], cache: ActivationCache, task: str = "bigram_shift",
                      seed: int = 0, sizes: dict[str, int] | None = None,
                      progress: Progress | None = None, budget: WorkBudget | None = None) -> list[CheckpointProbe]:
    """Probe every layer (mean-pooled) of each checkpoint folder in ``paths`` (``save_pretrained``
    folders with their tokenizer, e.g. a pretraining run's) on ``task``: with bigram shift, the step at
    which the probe rises above the majority class is when the run learned word order. Results in the
    order of ``paths``, each with its training step when the folder records it and ``path`` as given
    (progress messages name only the folder's last part, never the server path). ``budget``: the request's,
    checked before each checkpoint is loaded and after each batch of its features."""
    from transformers import AutoModel, AutoTokenizer

    budget = budget or unbounded()
    progress = checking(progress, budget)
    probe = build_task(task, seed, sizes)
    majority = _majority(probe)
    results = []
    for k, path in enumerate(paths):
        budget.check()
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise ValueError(f"{folder.name} is not a model folder (no config.json).")
        with MODEL_INIT_LOCK:
            model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        stamp = tuple(p.stat().st_mtime_ns for p in sorted(folder.glob("*.safetensors")))

        scores_ = _layer_scores(str(folder), model, tokenizer, probe, cache,
                                _scaled(progress, k / len(paths), 1 / len(paths), f"{folder.name}: "),
                                weights_key=("checkpoint", stamp), poolings=("mean",))
        results.append(CheckpointProbe(str(folder), _checkpoint_step(folder), scores_.mean, majority, scores_.mean_val))
    return results

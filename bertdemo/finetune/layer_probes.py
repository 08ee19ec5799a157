"""Which layer knows what: linear probes of every frozen layer for three tasks with exact labels.

Tasks, all built from the embedded Wikipedia summaries (:func:`build_task`, seeded):

* ``length`` (surface): how many words a sentence has, in :data:`LENGTH_BINS` (6 bins, equally many
  sentences in each, so the majority class scores 1/6).
* ``bigram_shift`` (word order / syntax): whether two adjacent words of a sentence were swapped — half
  the sentences have one pair swapped at a random place, both words lower-case letters only and
  different (so neither capitals nor punctuation give it away), the other half are left as they were.
* ``topic`` (meaning): the summary's first sentence and its Vital-Article topic (11 classes,
  :mod:`bertdemo.finetune.topics`).

Sentences are those of :func:`bertdemo.finetune.sentences.split_sentences` with
:data:`MIN_WORDS`–:data:`MAX_WORDS` words, each used once per task. :data:`TASK_SIZES` examples per
split keep a probe of all 7 hidden states of the embedded 6-layer model, both poolings, all three
tasks and the random-weight control within about a minute on 2 CPU cores (about 6,000 sentence
forwards of the encoder).

Each probe (:func:`probe_task`) fits a linear head (:mod:`bertdemo.finetune.linear_head`) on every
layer's mean-pooled and [CLS] features (:mod:`bertdemo.finetune.features`, cached), beside its
controls: the majority class and the same probe on a model of the same shape with random weights
(seeded). :func:`probe_checkpoints` follows one task (by default bigram shift: when did the run learn
word order?) across a pretraining run's checkpoints.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bertdemo.finetune.features import POOLINGS, ActivationCache
from bertdemo.finetune.linear_head import scores, train_linear_heads
from bertdemo.finetune.sentences import split_sentences
from bertdemo.finetune.topics import TOPIC_NAMES, labelled_summaries
from bertdemo.models.embedded import wiki_summaries
from bertdemo.models.init_lock import MODEL_INIT_LOCK

Progress = Callable[[float, str], None]
TASKS = ("length", "bigram_shift", "topic")
TASK_KINDS = {"length": "surface", "bigram_shift": "syntax", "topic": "semantics"}
TASK_SIZES = {"train": 600, "validation": 200, "test": 200}
MAX_TASK_SIZE = 5_000  # per split, whatever a caller asks
MIN_WORDS = 5
MAX_WORDS = 28
LENGTH_BINS = ((5, 7), (8, 10), (11, 14), (15, 18), (19, 23), (24, 28))  # words, inclusive
_SWAPPABLE = re.compile(r"[a-z]+")

JAWAHAR_NOTE = (
    "What to look for: in bert-base, Jawahar et al. (2019, \"What does BERT learn about the structure of "
    "language?\", ACL) probed every layer with the same kind of tasks and found surface information "
    "(such as sentence length) best decoded from the lowest layers, syntactic information (such as "
    "whether two words were swapped) peaking in the middle layers, and semantic information in the "
    "highest layers — a hierarchy from surface through syntax to meaning. A 6-layer model trained "
    "differently need not show the same curve: compare each layer with the random-weight control, "
    "which shows what the architecture alone gives away."
)


@dataclass(frozen=True)
class ProbeTask:
    """One probing task's examples: texts and int labels per split, and the names of the labels."""

    name: str  # one of TASKS
    label_names: tuple[str, ...]
    texts: dict[str, list[str]]  # split -> texts
    labels: dict[str, np.ndarray]  # split -> int labels


@dataclass(frozen=True)
class LayerScores:
    """Test accuracy of a probe of each layer (index 0: the embeddings) for each pooling."""

    model_name: str
    mean: tuple[float, ...]
    cls: tuple[float, ...]
    mean_macro_f1: tuple[float, ...]
    cls_macro_f1: tuple[float, ...]

    @property
    def best(self) -> tuple[int, str, float]:
        """(layer, pooling, test accuracy) of the best probe."""
        candidates = [(acc, -layer, pooling) for pooling in POOLINGS
                      for layer, acc in enumerate(getattr(self, pooling))]
        acc, neg_layer, pooling = max(candidates)
        return -neg_layer, pooling, acc


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

    @property
    def best_layer(self) -> int:
        return int(np.argmax(self.accuracy))


def _candidate_sentences() -> list[str]:
    seen: set[str] = set()
    out = []
    for summary in wiki_summaries():
        for sentence in split_sentences(summary):
            if MIN_WORDS <= len(sentence.split()) <= MAX_WORDS and sentence not in seen:
                seen.add(sentence)
                out.append(sentence)
    return out


def _sizes(sizes: dict[str, int] | None) -> dict[str, int]:
    sizes = {**TASK_SIZES, **(sizes or {})}
    for split, n in sizes.items():
        if split not in TASK_SIZES or not 2 <= int(n) <= MAX_TASK_SIZE:
            raise ValueError(f"Probe task sizes are train / validation / test counts of 2 to {MAX_TASK_SIZE:,}.")
    return {split: int(sizes[split]) for split in TASK_SIZES}


def _deal(examples: list[tuple[str, int]], sizes: dict[str, int]) -> tuple[dict, dict]:
    texts, labels, start = {}, {}, 0
    for split, n in sizes.items():
        part = examples[start:start + n]
        texts[split] = [t for t, _ in part]
        labels[split] = np.array([y for _, y in part], dtype=np.int64)
        start += n
    return texts, labels


def _length_task(rng: random.Random, sizes: dict[str, int]) -> ProbeTask:
    by_bin: list[list[str]] = [[] for _ in LENGTH_BINS]
    for sentence in _candidate_sentences():
        n = len(sentence.split())
        for b, (lo, hi) in enumerate(LENGTH_BINS):
            if lo <= n <= hi:
                by_bin[b].append(sentence)
    per_bin = {split: n // len(LENGTH_BINS) for split, n in sizes.items()}
    need = sum(per_bin.values())
    if min(len(b) for b in by_bin) < need:
        raise ValueError(f"Too few sentences for {need:,} per length bin.")
    parts: dict[str, list[tuple[str, int]]] = {split: [] for split in sizes}
    for b, sentences in enumerate(by_bin):
        picked = rng.sample(sentences, need)
        start = 0
        for split, n in per_bin.items():
            parts[split].extend((s, b) for s in picked[start:start + n])
            start += n
    texts, labels = {}, {}
    for split, part in parts.items():
        rng.shuffle(part)
        texts[split] = [t for t, _ in part]
        labels[split] = np.array([y for _, y in part], dtype=np.int64)
    names = tuple(f"{lo}–{hi} words" for lo, hi in LENGTH_BINS)
    return ProbeTask("length", names, texts, labels)


def swap_positions(words: Sequence[str]) -> list[int]:
    """Positions i (never the first word) where words i and i+1 are different lower-case letter words."""
    return [i for i in range(1, len(words) - 1)
            if words[i] != words[i + 1] and _SWAPPABLE.fullmatch(words[i]) and _SWAPPABLE.fullmatch(words[i + 1])]


def _bigram_task(rng: random.Random, sizes: dict[str, int]) -> ProbeTask:
    sentences = [s for s in _candidate_sentences() if swap_positions(s.split())]
    total = sum(sizes.values())
    examples = []
    for k, sentence in enumerate(rng.sample(sentences, total)):
        words = sentence.split()
        if k % 2:  # every other sentence gets one pair swapped
            i = rng.choice(swap_positions(words))
            words[i], words[i + 1] = words[i + 1], words[i]
        examples.append((" ".join(words), k % 2))
    rng.shuffle(examples)
    texts, labels = _deal(examples, sizes)
    return ProbeTask("bigram_shift", ("original", "two words swapped"), texts, labels)


def _topic_task(rng: random.Random, sizes: dict[str, int]) -> ProbeTask:
    rows = labelled_summaries()
    picked = rng.sample(rows, sum(sizes.values()))
    texts, labels = _deal([(text, TOPIC_NAMES.index(topic)) for _, text, topic in picked], sizes)
    return ProbeTask("topic", TOPIC_NAMES, texts, labels)


def build_task(name: str, seed: int = 0, sizes: dict[str, int] | None = None) -> ProbeTask:
    """The examples of task ``name`` (one of :data:`TASKS`) for ``seed``: ``sizes`` per split
    (default :data:`TASK_SIZES`); the same seed always gives the same examples."""
    builders = {"length": _length_task, "bigram_shift": _bigram_task, "topic": _topic_task}
    if name not in builders:
        raise ValueError(f"Unknown probe task {name!r}: use one of {', '.join(TASKS)}.")
    return builders[name](random.Random(f"{name}-{int(seed)}"), _sizes(sizes))


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
            out[pooling] = out[f"{pooling}_macro_f1"] = ()
            continue
        f = feats.pooled(pooling)
        heads = train_linear_heads(f[:, :a], task.labels["train"], f[:, a:b], task.labels["validation"],
                                   f[:, b:], task.labels["test"], len(task.label_names))
        out[pooling] = tuple(h.test_accuracy for h in heads)
        out[f"{pooling}_macro_f1"] = tuple(h.test_macro_f1 for h in heads)
    return LayerScores(model_name, **out)


def _scaled(progress: Progress | None, start: float, span: float, label: str = "") -> Progress | None:
    """``progress`` for one part of a job: the part's fractions mapped to [start, start + span]."""
    if progress is None:
        return None
    return lambda fraction, message: progress(start + span * fraction, f"{label}{message}")


def probe_task(model_name: str, model: torch.nn.Module, tokenizer, task: ProbeTask, cache: ActivationCache,
               random_control: bool = True, seed: int = 0, progress: Progress | None = None) -> TaskProbe:
    """Probe every layer of ``model`` (mean-pooled and [CLS]) on ``task``, with the majority class and
    (``random_control``) the same probes on :func:`random_model_like` ``(model, seed)``.
    ``progress(fraction, message)`` hears while features are computed (nothing when they are cached)."""
    share = 0.5 if random_control else 1.0
    mine = _layer_scores(model_name, model, tokenizer, task, cache, _scaled(progress, 0.0, share))
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
                 sizes: dict[str, int] | None = None, progress: Progress | None = None) -> list[TaskProbe]:
    """Every layer of ``model`` probed on each of ``tasks`` (default all three, in that order), with the
    controls. ``progress(fraction, message)`` hears across all the tasks, ending at 1.0."""
    for name in tasks:
        if name not in TASKS:
            raise ValueError(f"Unknown probe task {name!r}: use one of {', '.join(TASKS)}.")
    results = []
    for k, name in enumerate(tasks):
        part = _scaled(progress, k / len(tasks), 1 / len(tasks), f"{name}: ")
        results.append(probe_task(model_name, model, tokenizer, build_task(name, seed, sizes), cache,
                                  random_control, seed, part))
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
                      progress: Progress | None = None) -> list[CheckpointProbe]:
    """Probe every layer (mean-pooled) of each checkpoint folder in ``paths`` (``save_pretrained``
    folders with their tokenizer, e.g. a pretraining run's) on ``task``: with bigram shift, the step at
    which the probe rises above the majority class is when the run learned word order. Results in the
    order of ``paths``, each with its training step when the folder records it and ``path`` as given
    (progress messages name only the folder's last part, never the server path)."""
    from transformers import AutoModel, AutoTokenizer

    probe = build_task(task, seed, sizes)
    majority = _majority(probe)
    results = []
    for k, path in enumerate(paths):
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
        results.append(CheckpointProbe(str(folder), _checkpoint_step(folder), scores_.mean, majority))
    return results

"""The probing tasks of "which layer knows what", with exact labels, built from the embedded summaries.

* ``length`` (surface): how many words a sentence has, in :data:`LENGTH_BINS` (6 bins, equally many
  sentences in each, so the majority class scores 1/6; each split's size is rounded down to a multiple of 6).
* ``bigram_shift`` (word order / syntax): whether two adjacent words of a sentence were swapped — every
  other sentence has one pair swapped at a random place, both words lower-case letters only and
  different (so neither capitals nor punctuation give it away), the others are left as they were.
* ``topic`` (meaning): the summary's first sentence and its Vital-Article topic (11 classes,
  :mod:`bertdemo.corpus.topics`).

Sentences are those of :func:`bertdemo.corpus.sentences.split_sentences` with
:data:`MIN_WORDS`–:data:`MAX_WORDS` words, each used at most once per task; a seed fixes every choice.
:data:`TASK_SIZES` examples per split (see :mod:`bertdemo.finetune.layer_probes` for what they cost).
:data:`JAWAHAR_NOTE` says what the literature found, as something to look for. Torch-free (the page
reads the names and the note).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bertdemo.corpus.sentences import split_sentences
from bertdemo.corpus.topics import TOPIC_NAMES, labelled_summaries
from bertdemo.models.embedded import wiki_summaries

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


def _sample(rng: random.Random, population: list, n: int, what: str) -> list:
    if n > len(population):
        raise ValueError(f"The {what} task has {len(population):,} examples to draw from; ask for fewer than {n:,}.")
    return rng.sample(population, n)


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
        raise ValueError(f"The length task has {min(len(b) for b in by_bin):,} sentences in its smallest bin; "
                         f"ask for fewer than {need:,} per bin.")
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
    for k, sentence in enumerate(_sample(rng, sentences, total, "bigram-shift")):
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
    picked = _sample(rng, rows, sum(sizes.values()), "topic")
    texts, labels = _deal([(text, TOPIC_NAMES.index(topic)) for _, text, topic in picked], sizes)
    return ProbeTask("topic", TOPIC_NAMES, texts, labels)


def build_task(name: str, seed: int = 0, sizes: dict[str, int] | None = None) -> ProbeTask:
    """The examples of task ``name`` (one of :data:`TASKS`) for ``seed``: ``sizes`` per split
    (default :data:`TASK_SIZES`); the same seed always gives the same examples."""
    builders = {"length": _length_task, "bigram_shift": _bigram_task, "topic": _topic_task}
    if name not in builders:
        raise ValueError(f"Unknown probe task {name!r}: use one of {', '.join(TASKS)}.")
    return builders[name](random.Random(f"{name}-{int(seed)}"), _sizes(sizes))

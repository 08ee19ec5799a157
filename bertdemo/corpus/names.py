"""The "Find the names" task: every word of a Wikipedia sentence tagged NAME or O from its capital letter.

The embedded Wikipedia summaries are cased; the uncased model never sees a capital, so it has to tell a
name from its context. :func:`tag_words` applies the rule (:data:`RULE`, shown on the page) word by word:

* a sentence's first word carries no label (``None``: left out of the loss and the scores), nor does a
  word right after a colon or a quotation mark (it may open a quoted sentence);
* a word in capitals throughout with two or more letters (an acronym or a numeral: ``NASA``, ``DNA``,
  ``II``) carries no label: some are names, some are not;
* punctuation carries no label; a word with no letter (a number) is O; ``I`` is O;
* any other word whose first letter is a capital is a NAME, every other word O.

Words are :func:`words` of the sentence: runs of letters and digits (with inner hyphens, apostrophes and
dots, e.g. ``Jean-Paul``, ``O'Brien``, ``U.S``) or single punctuation marks. How often the rule is right was
checked by hand on a sample (``tests/data/names_rule_sample.tsv``): :data:`RULE_PRECISION`.

Split (:func:`build_name_splits`): by summary, never a summary in two splits. The validation and test
summaries are drawn (seeded) from the topic task's validation and test summaries, which every pretraining
corpus leaves out (:func:`bertdemo.corpus.topics.held_out_titles`), so a model pretrained here never read a
sentence it is scored on; the training summaries from the rest. Torch-free.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bertdemo.corpus.sentences import split_sentences

NAME, OTHER = "NAME", "O"
LABELS = (OTHER, NAME)  # label ids 0 and 1, the order of the model's outputs
MIN_WORDS = 5
MAX_WORDS = 30  # words of a sentence (so its pieces fit the run's max_seq_len nearly always)
SPLIT_SUMMARIES = {"train": 700, "validation": 120, "test": 120}  # summaries per split (seed 0 default)
SPLIT_SEED = 0
RULE_PRECISION = (236, 250)  # (right, called NAME) on the hand-checked sample; tests/test_names_corpus.py recomputes it
RULE = (
    "A word written with a capital letter in the middle of a sentence is a name (NAME), every other word is "
    "not (O). No label at all (left out of the loss and the scores): a sentence's first word, a word right "
    "after a colon or a quotation mark, a word in capitals throughout (NASA, DNA, II: some are names, some "
    "not) and punctuation. Numbers and \"I\" are O."
)

_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*|[^\w\s]|_")
_QUOTES_AND_COLON = frozenset(":\"“”‘’'«»")


def words(sentence: str) -> list[str]:
    """The words of ``sentence`` as the task counts them (punctuation marks are words of their own)."""
    return _WORD.findall(sentence)


def tag_words(tokens: Sequence[str]) -> list[str | None]:
    """The rule's label of each word: NAME, O, or None (no label). See the module docstring."""
    tags: list[str | None] = []
    seen_word = False
    for i, word in enumerate(tokens):
        is_word = any(ch.isalnum() for ch in word)
        if not is_word:
            tags.append(None)
            continue
        first, seen_word = not seen_word, True
        letters = [ch for ch in word if ch.isalpha()]
        if first or (i > 0 and tokens[i - 1] in _QUOTES_AND_COLON):
            tags.append(None)
        elif not letters or word == "I":
            tags.append(OTHER)
        elif len(letters) >= 2 and all(ch.isupper() for ch in letters):
            tags.append(None)
        else:
            tags.append(NAME if letters[0].isupper() else OTHER)
    return tags


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words and each word's label (NAME, O or None), and the summary it came from."""

    title: str
    words: tuple[str, ...]
    tags: tuple[str | None, ...]

    @property
    def label_ids(self) -> list[int]:
        """Each word's label id (0: O, 1: NAME), -100 where it carries none (transformers' ignore index)."""
        return [-100 if t is None else LABELS.index(t) for t in self.tags]


def tagged_sentences(title: str, summary: str) -> list[TaggedSentence]:
    """The sentences of one summary with :data:`MIN_WORDS`–:data:`MAX_WORDS` words, tagged by the rule."""
    out = []
    for sentence in split_sentences(summary):
        ws = words(sentence)
        if MIN_WORDS <= sum(any(c.isalnum() for c in w) for w in ws) <= MAX_WORDS:
            out.append(TaggedSentence(title, tuple(ws), tuple(tag_words(ws))))
    return out


def _summaries() -> dict[str, str]:
    from bertdemo.models.embedded import wiki_summaries_path

    with open(wiki_summaries_path(), encoding="utf-8") as fh:
        data = json.load(fh)
    return {title: entry.get("extract") or "" for title, entry in data.items()}


@dataclass(frozen=True)
class NameSplits:
    """The task's three splits of tagged sentences (no summary in two of them)."""

    train: list[TaggedSentence]
    validation: list[TaggedSentence]
    test: list[TaggedSentence]

    def split(self, name: str) -> list[TaggedSentence]:
        return {"train": self.train, "validation": self.validation, "test": self.test}[name]

    def titles(self, name: str) -> set[str]:
        return {s.title for s in self.split(name)}


def build_name_splits(seed: int = SPLIT_SEED, sizes: dict[str, int] | None = None,
                      held_out: tuple[set[str], set[str]] | None = None,
                      summaries: dict[str, str] | None = None) -> NameSplits:
    """The seeded split by summary: ``sizes`` summaries per split (default :data:`SPLIT_SUMMARIES`), the
    validation and test ones drawn from ``held_out`` (validation titles, test titles; default the topic task's,
    which pretraining leaves out), the training ones from every other summary. ``summaries``: title -> text
    (default the embedded corpus). The same arguments always give the same sentences."""
    sizes = {**SPLIT_SUMMARIES, **(sizes or {})}
    texts = summaries if summaries is not None else _summaries()
    if held_out is None:
        from bertdemo.corpus.topics import SPLIT_SEED as TOPIC_SEED, build_topic_splits

        topic = build_topic_splits(TOPIC_SEED)
        held_out = set(topic["validation"]["title"]), set(topic["test"]["title"])
    val_pool, test_pool = sorted(set(held_out[0]) & set(texts)), sorted(set(held_out[1]) & set(texts))
    train_pool = sorted(set(texts) - set(held_out[0]) - set(held_out[1]))
    rng = random.Random(f"names-{int(seed)}")
    parts = {}
    for name, pool in (("train", train_pool), ("validation", val_pool), ("test", test_pool)):
        if sizes[name] > len(pool):
            raise ValueError(f"The {name} split has {len(pool):,} summaries to draw from; ask for at most that.")
        picked = rng.sample(pool, sizes[name])
        parts[name] = [s for title in picked for s in tagged_sentences(title, texts[title])]
    return NameSplits(parts["train"], parts["validation"], parts["test"])


def word_memory(train: Sequence[TaggedSentence]) -> dict[str, str]:
    """The per-word-memory landmark: each word (lower-cased, as the uncased model reads it) -> the label it had
    most often in training (O on a tie); a word never seen is O (:func:`memory_tags`)."""
    counts: dict[str, list[int]] = {}
    for sentence in train:
        for word, tag in zip(sentence.words, sentence.tags):
            if tag is not None:
                counts.setdefault(word.lower(), [0, 0])[LABELS.index(tag)] += 1
    return {word: (NAME if c[1] > c[0] else OTHER) for word, c in counts.items()}


def memory_tags(memory: dict[str, str], tokens: Sequence[str]) -> list[str]:
    """Each word's label by :func:`word_memory` (an unseen word: O)."""
    return [memory.get(w.lower(), OTHER) for w in tokens]


def word_scores(true: Sequence[Sequence[str | None]], predicted: Sequence[Sequence[str]]) -> dict[str, float]:
    """Word-level precision, recall and F1 of NAME, and accuracy, over the words that carry a label
    (``true`` None: skipped). Precision of no predicted name and recall of no true name are 0."""
    tp = fp = fn = right = n = 0
    for t_row, p_row in zip(true, predicted, strict=True):
        for t, p in zip(t_row, p_row, strict=True):
            if t is None:
                continue
            n += 1
            right += t == p
            tp += t == NAME and p == NAME
            fp += t != NAME and p == NAME
            fn += t == NAME and p != NAME
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "accuracy": right / n if n else 0.0,
            "words": n, "true_names": tp + fn, "predicted_names": tp + fp}


def name_spans(tags: Sequence[str | None]) -> set[tuple[int, int]]:
    """The entities of one sentence: maximal runs of consecutive NAME words, as (first, last) word indexes
    (a word without a label, e.g. a hyphen between two names, neither starts, ends nor breaks a run)."""
    spans, start, last = set(), None, None
    for i, tag in enumerate(tags):
        if tag is None:
            continue
        if tag == NAME:
            start = i if start is None else start
            last = i
        elif start is not None:
            spans.add((start, last))
            start = None
    if start is not None:
        spans.add((start, last))
    return spans


def entity_scores(true: Sequence[Sequence[str | None]], predicted: Sequence[Sequence[str]]) -> dict[str, float]:
    """Entity-level precision, recall and F1: a predicted name counts when its span of words is exactly a true
    one (:func:`name_spans`; the predicted tags read only where the true ones carry a label)."""
    tp = n_true = n_pred = 0
    for t_row, p_row in zip(true, predicted, strict=True):
        masked = [None if t is None else p for t, p in zip(t_row, p_row, strict=True)]
        t_spans, p_spans = name_spans(t_row), name_spans(masked)
        tp += len(t_spans & p_spans)
        n_true += len(t_spans)
        n_pred += len(p_spans)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "true_entities": n_true, "predicted_entities": n_pred}


CACHE_VERSION = 1


def load_name_splits(cache_dir, seed: int = SPLIT_SEED) -> NameSplits:
    """:func:`build_name_splits` for ``seed``, saved once as JSON in ``cache_dir`` (atomically, named by the
    version of the rule) and read from there afterwards (building takes about 10 s: the topic split decides
    the held-out summaries)."""
    from pathlib import Path

    from bertdemo import storage

    path = Path(cache_dir) / f"names-v{CACHE_VERSION}-seed{int(seed)}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return NameSplits(*([TaggedSentence(t, tuple(w), tuple(g)) for t, w, g in data[name]]
                            for name in ("train", "validation", "test")))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    splits = build_name_splits(seed)
    storage.write_text(path, json.dumps({name: [[s.title, s.words, s.tags] for s in splits.split(name)]
                                         for name in ("train", "validation", "test")}))
    return splits

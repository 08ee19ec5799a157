"""Corpus sources for pretraining: the text documents of "wiki" (embedded Wikipedia
summaries), "tinystories" (`noanabeshima/TinyStoriesV2` through `datasets`, only when the
hub answers) or an uploaded .txt / .jsonl file, plus a stable identity key for the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bertdemo.models.embedded import wiki_summaries
from bertdemo.models.hub import hub_reachable

TINYSTORIES_ID = "noanabeshima/TinyStoriesV2"


@dataclass
class Corpus:
    """One corpus opened for tokenizing: its cache identity, its label, and its documents in order."""

    key: str  # identity for the block cache (includes the content hash of files)
    label: str  # what to show a person
    n_docs: int | None  # number of documents when known up front (for progress)
    docs: Iterator[str]  # the documents, in order


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


UPLOAD_SUFFIXES = (".txt", ".jsonl")


def read_text_file(path: Path) -> str:
    """A corpus file's text: ValueError (naming only the file, never its folder) when it is
    empty, binary (NUL bytes) or not UTF-8."""
    data = path.read_bytes()
    if not data.strip():
        raise ValueError(f"{path.name} is empty: upload a file with some text in it.")
    if b"\x00" in data:
        raise ValueError(f"{path.name} looks like a binary file, not text: upload a .txt or .jsonl file.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path.name} is not UTF-8 text (byte {err.start} cannot be read): "
                         "save it as UTF-8 and upload it again.") from None


def check_upload(path: str | Path) -> Path:
    """An uploaded corpus checked before a run starts: .txt or .jsonl, UTF-8 text with documents in it."""
    path = Path(path)
    if path.suffix.lower() not in UPLOAD_SUFFIXES:
        raise ValueError(f"{path.name} is not a .txt or .jsonl file.")
    if not path.is_file():
        raise ValueError(f"{path.name} is no longer on the server: upload it again.")
    docs = _jsonl_docs(path) if path.suffix.lower() == ".jsonl" else _txt_docs(path)
    if not docs:
        raise ValueError(f"The corpus file {path.name!r} contains no text.")
    return path


def _txt_docs(path: Path) -> list[str]:
    """Paragraphs (blank-line separated) of a text file are its documents."""
    text = read_text_file(path)
    paragraphs = [" ".join(p.split()) for p in text.replace("\r\n", "\n").split("\n\n")]
    return [p for p in paragraphs if p]


def _jsonl_docs(path: Path) -> list[str]:
    docs: list[str] = []
    for lineno, line in enumerate(read_text_file(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path.name} line {lineno} is not valid JSON: {err.msg}") from None
        text = record.get("text") if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise ValueError(f'{path.name} line {lineno} has no "text" field: each line must be a JSON '
                             'object such as {"text": "One document."}.')
        if text.strip():
            docs.append(text)
    return docs


def hf_dataset_docs(name_or_path: str, split: str = "train", field: str = "text") -> Iterator[str]:
    """Stream the `field` of a `datasets` dataset (hub id or local folder) without downloading it all."""
    import datasets

    ds = datasets.load_dataset(name_or_path, split=split, streaming=True)
    for record in ds:
        text = record.get(field)
        if isinstance(text, str) and text.strip():
            yield text


def open_corpus(corpus: str) -> Corpus:
    """Resolve a corpus name or file path into its documents; ValueError with a clear message if unusable."""
    if corpus == "wiki":
        docs = wiki_summaries()
        return Corpus("wiki-summaries-en", "Wikipedia summaries (embedded)", len(docs), iter(docs))
    if corpus == "tinystories":
        if not hub_reachable():
            raise ValueError(
                "The dataset hub is unreachable, so TinyStories cannot be loaded; "
                "use the embedded 'wiki' corpus or upload a .txt / .jsonl file."
            )
        return Corpus("tinystories-v2", "TinyStoriesV2 (hub)", None, hf_dataset_docs(TINYSTORIES_ID))
    path = Path(corpus).expanduser()
    if not path.is_file():
        raise ValueError(f"Unknown corpus {path.name!r}: use 'wiki', 'tinystories' or a .txt / .jsonl file path.")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        docs = _jsonl_docs(path)
    elif suffix in {".txt", ".text", ".md"}:
        docs = _txt_docs(path)
    else:
        raise ValueError(f"Unsupported corpus file {path.name!r}: upload a .txt or .jsonl file.")
    if not docs:
        raise ValueError(f"The corpus file {path.name!r} contains no text.")
    return Corpus(f"file-{file_sha256(path)[:20]}", path.name, len(docs), iter(docs))

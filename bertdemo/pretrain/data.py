"""A run's data: the corpus documents, tokenized once and packed into blocks.

* Corpora: "wiki" (embedded Wikipedia summaries, less those whose first sentences the topic task
  validates and tests on: :func:`bertdemo.corpus.topics.held_out_titles`), "tinystories" (`noanabeshima/TinyStoriesV2`
  through `datasets`, only when the hub answers) or an uploaded .txt / .jsonl file, each with a
  stable identity key for the cache.
* Blocks: the documents tokenized and packed into fixed-length blocks (train and held-out),
  cached on disk by that key (see :func:`prepare_blocks`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from bertdemo import storage
from bertdemo.locks import tokenize
from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain.config import check_block_starts
from bertdemo.runs.uploads import upload_key

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


TINYSTORIES_ID = "noanabeshima/TinyStoriesV2"


@dataclass
class Corpus:
    """One corpus opened for tokenizing: its cache identity, its label, and its documents in order."""

    key: str  # identity for the block cache (includes the content hash of files)
    label: str  # what to show a person
    n_docs: int | None  # number of documents when known up front (for progress)
    docs: Iterator[str]  # the documents, in order


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
        except RecursionError:  # [[[[…]]]] thousands deep
            raise ValueError(f"{path.name} line {lineno} is nested too deeply: each line must be a JSON object "
                             'such as {"text": "One document."}.') from None
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


def _hub_docs(name: str) -> Iterator[str]:
    """:func:`hf_dataset_docs` with an unreachable hub said plainly (offline, ``datasets`` fails at once)."""
    try:
        yield from hf_dataset_docs(name)
    except (ConnectionError, OSError) as err:
        raise ValueError("The dataset hub is unreachable, so TinyStories cannot be loaded; use the embedded "
                         "'wiki' corpus or upload a .txt / .jsonl file.") from err


def _wiki_pretraining_docs() -> Iterator[str]:
    """The embedded summaries less those the topic task validates and tests on (whole summaries). The split
    takes seconds, so it is made only when the documents are read: when the blocks are not cached yet."""
    from bertdemo.corpus.topics import held_out_titles

    yield from wiki_summaries(exclude_titles=held_out_titles())


def open_corpus(corpus: str) -> Corpus:
    """Resolve a corpus name or file path into its documents; ValueError with a clear message if unusable."""
    if corpus == "wiki":
        return Corpus("wiki-summaries-en-pretrain", "Wikipedia summaries (embedded, less the topic task's "
                      "validation and test articles)", None, _wiki_pretraining_docs())
    if corpus == "tinystories":  # streamed only on a cache miss; whoever starts the run asks the hub first
        return Corpus("tinystories-v2", "TinyStoriesV2 (hub)", None, _hub_docs(TINYSTORIES_ID))
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
    return Corpus(upload_key(path), path.name, len(docs), iter(docs))


# --- blocks ------------------------------------------------------------------------------------------
# Tokenize a corpus once into packed fixed-length blocks, cached on disk, with a held-out split.
# Each block is ``[CLS] t_1 ... t_{T-2} [SEP]`` cut from one token stream in which the
# documents follow each other separated by ``[SEP]`` (RoBERTa's FULL-SENTENCES packing):
# no padding anywhere, so every position trains and no attention mask is needed.
# With ``block_starts="text"`` each block begins at a text's start instead (:func:`pack_at_text_starts`), as
# BERT's inputs begin with a sentence, so that a [CLS] is followed by a text's start as when a sentence is asked.
# Blocks are stored as ``np.uint16`` (``np.int32`` for vocabularies over 65535 ids) in
# ``.npy`` files written atomically and keyed by corpus + tokenizer + block length.
# The held-out split is the last blocks of the stream (at least a few), disjoint from training.

ProgressFn = Callable[[float, str], None]
CACHE_VERSION = 1
MIN_HELDOUT_BLOCKS = 4
_DOCS_PER_BATCH = 256


@dataclass
class Blocks:
    """Packed token blocks of one corpus: the training split, the held-out split, and where they came from."""

    train: np.ndarray  # (N_train, T) token ids, no padding
    heldout: np.ndarray  # (N_heldout, T) disjoint from train
    cache_path: Path  # the .json describing the cached arrays
    cache_hit: bool  # True when read from the cache without tokenizing
    corpus_label: str


def default_cache_dir() -> Path:
    """Where packed blocks are cached: ``blocks/`` under the app's cache root."""
    return storage.cache_root() / "blocks"


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """Hash of the vocabulary and lowercasing: two tokenizers with the same hash give the same ids."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    payload = json.dumps([vocab, bool(getattr(tokenizer, "do_lower_case", True))])
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]


def split_heldout(n_blocks: int, fraction: float) -> int:
    """Number of held-out blocks: `fraction` of all, at least a few, and never all of them."""
    if n_blocks < 2 * MIN_HELDOUT_BLOCKS:
        raise ValueError(
            f"The corpus gives only {n_blocks} blocks; at least {2 * MIN_HELDOUT_BLOCKS} are needed "
            "(use more text or a shorter block length)."
        )
    return min(n_blocks // 2, max(MIN_HELDOUT_BLOCKS, round(fraction * n_blocks)))


def pack_stream(ids: np.ndarray, seq_len: int, cls_id: int, sep_id: int, dtype: npt.DTypeLike) -> np.ndarray:
    """Cut a token stream into (N, T) blocks ``[CLS] body [SEP]``; the incomplete tail is dropped."""
    body = seq_len - 2
    n = len(ids) // body
    blocks = np.empty((n, seq_len), dtype=dtype)
    blocks[:, 0] = cls_id
    blocks[:, -1] = sep_id
    blocks[:, 1:-1] = ids[: n * body].reshape(n, body)
    return blocks


def pack_at_text_starts(texts: list[np.ndarray], seq_len: int, cls_id: int, sep_id: int, dtype: npt.DTypeLike,
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` (token ids, each ending in its [SEP]) as (N, T) blocks ``[CLS] body [SEP]`` that each begin at a
    text's start, no padding: texts fill a body in order; one that does not fit fills the rest with its beginning
    and begins the next block again from its start (those tokens read twice); a text longer than a body runs on into
    the next blocks (which then begin in its middle, the one exception). Also, per block, whether its body ends
    with the beginning of the next block's first text. The incomplete last block is dropped."""
    body = seq_len - 2
    rows: list[np.ndarray] = []
    repeats: list[bool] = []
    parts: list[np.ndarray] = []
    used = 0
    pending = list(reversed(texts))  # a stack: the next text on top
    while pending:
        text = pending.pop()
        room = body - used
        if len(text) <= room:
            parts.append(text)
            used += len(text)
            if used < body:
                continue
            repeat = False
        elif used == 0:  # longer than a body: its first body's worth, then the rest as the next block's start
            parts.append(text[:body])
            pending.append(text[body:])
            repeat = False
        else:  # the rest of this block holds its beginning; the next block begins with it whole
            parts.append(text[:room])
            pending.append(text)
            repeat = True
        rows.append(np.concatenate(parts))
        repeats.append(repeat)
        parts, used = [], 0
    blocks = np.empty((len(rows), seq_len), dtype=dtype)
    blocks[:, 0] = cls_id
    blocks[:, -1] = sep_id
    if rows:
        blocks[:, 1:-1] = np.stack(rows)
    return blocks, np.array(repeats, dtype=bool)


def prepare_blocks(
    corpus: str,
    tokenizer: PreTrainedTokenizerBase,
    seq_len: int = 128,
    cache_dir: str | Path = "",
    max_tokens: int = 20_000_000,
    heldout_fraction: float = 0.02,
    progress: ProgressFn | None = None,
    block_starts: str = "anywhere",
) -> Blocks:
    """Packed train/held-out blocks of `corpus`, from the cache or tokenized now (reporting progress);
    ``block_starts``: "anywhere" (:func:`pack_stream`) or "text" (:func:`pack_at_text_starts`)."""
    check_block_starts(block_starts)
    report = progress or (lambda fraction, message: None)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    report(0.0, f"Opening corpus {corpus!r}…")
    src = open_corpus(corpus)
    key_payload = json.dumps(
        [CACHE_VERSION, src.key, tokenizer_fingerprint(tokenizer), seq_len, max_tokens, heldout_fraction]
        + ([] if block_starts == "anywhere" else [block_starts])  # the caches made before the choice keep their keys
    )
    key = f"{src.key}-T{seq_len}-{hashlib.sha1(key_payload.encode()).hexdigest()[:12]}"
    meta_path = cache / f"{key}.json"
    train_path, heldout_path = cache / f"{key}.train.npy", cache / f"{key}.heldout.npy"
    if meta_path.is_file() and train_path.is_file() and heldout_path.is_file():
        report(1.0, f"Loaded cached blocks of {src.label}.")
        return Blocks(np.load(train_path), np.load(heldout_path), meta_path, True, src.label)

    dtype = np.uint16 if len(tokenizer) <= np.iinfo(np.uint16).max + 1 else np.int32
    sep_id = tokenizer.sep_token_id
    chunks: list[np.ndarray] = []
    n_tokens, n_docs = 0, 0
    batch: list[str] = []

    def flush() -> None:
        nonlocal n_tokens, n_docs
        for ids in tokenize(tokenizer, batch, add_special_tokens=False)["input_ids"]:  # a shared tokenizer: locked
            chunks.append(np.asarray(ids + [sep_id], dtype=dtype))
            n_tokens += len(ids) + 1
        n_docs += len(batch)
        batch.clear()
        frac = n_docs / src.n_docs if src.n_docs else n_tokens / max_tokens
        report(min(0.99, frac), f"Tokenizing {src.label}: {n_docs:,} documents, {n_tokens:,} tokens")

    for doc in src.docs:
        batch.append(doc)
        if len(batch) >= _DOCS_PER_BATCH:
            flush()
            if n_tokens >= max_tokens:
                break
    if batch:
        flush()
    if block_starts == "text":
        kept = np.cumsum([len(c) for c in chunks]) <= max_tokens if chunks else np.zeros(0, dtype=bool)
        blocks, repeats = pack_at_text_starts([c for c, keep in zip(chunks, kept) if keep], seq_len,
                                              tokenizer.cls_token_id, sep_id, dtype)
    else:
        stream = np.concatenate(chunks) if chunks else np.zeros(0, dtype=dtype)
        blocks = pack_stream(stream[:max_tokens], seq_len, tokenizer.cls_token_id, sep_id, dtype)
        repeats = np.zeros(len(blocks), dtype=bool)
    n_held = split_heldout(len(blocks), heldout_fraction)
    # a training block whose end repeats the first held-out block's beginning is dropped: no held-out token trained on
    last_train = len(blocks) - n_held - int(repeats[len(blocks) - n_held - 1]) if len(blocks) > n_held else 0
    train, heldout = blocks[:last_train], blocks[-n_held:]
    storage.save_npy(train_path, train)
    storage.save_npy(heldout_path, heldout)
    meta = {"corpus": src.label, "key": src.key, "seq_len": seq_len, "tokens": int(n_tokens),
            "documents": n_docs, "train_blocks": len(train), "heldout_blocks": len(heldout)}
    storage.write_text(meta_path, json.dumps(meta, indent=2))
    report(1.0, f"Tokenized {src.label}: {len(train):,} train + {len(heldout):,} held-out blocks of {seq_len}.")
    return Blocks(train, heldout, meta_path, False, src.label)

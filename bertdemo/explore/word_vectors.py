"""Contextual vectors of words, shared by the Word in context views: every layer's hidden states of a few
sentences, where a word sits in them, the embedded corpus split into sentences, and one bounded store of
what those views compute once per model (the random-word baseline, the corpus occurrences of a word, the
neighbour indexes).

The store is one of the model's caches (:meth:`LoadedModel.cache`, a :class:`~bertdemo.memory.ByteLRU`
drawing on the server's memory budget, emptied when the model leaves the store), reached only through
:func:`activation_store` and its ``get_or_build``. Its own bound is in bytes (:data:`MAX_STORE_BYTES`); the
least recently used entry goes first, and an entry is built once even when several requests ask for it
at the same time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from bertdemo.corpus.sentences import split_sentences
from bertdemo.explore.encoding import check_chars
from bertdemo.limits import MAX_WIC_TOKENS, MIN_CORPUS_SENTENCE_CHARS
from bertdemo.locks import tokenize
from bertdemo.memory import ByteLRU
from bertdemo.models.embedded import wiki_summaries
from bertdemo.models.loading import LoadedModel, weights_stamp

MAX_STORE_BYTES = 160 * 2**20  # per model: the baseline, the word occurrences and the neighbour indexes
BATCH = 32  # sentences per forward when the corpus is read
Progress = Callable[[float, str], None]


def activation_store(loaded: LoadedModel) -> ByteLRU:
    """The model's one store (made on first use, emptied when the model leaves the model cache)."""
    return loaded.cache("word activations", MAX_STORE_BYTES)


def store_key(loaded: LoadedModel, *question) -> tuple:
    """A key that changes when the model's weights do."""
    return (loaded.name, weights_stamp(loaded.model), *question)


def num_layers(loaded: LoadedModel) -> int:
    """Transformer layers: hidden states are numbered 0 (the embeddings' output) to this."""
    cfg = loaded.model.config
    return int(getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", 0)))


def check_layer(loaded: LoadedModel, layer: int) -> int:
    n = num_layers(loaded)
    if not 0 <= int(layer) <= n:
        raise ValueError(f"Layer {int(layer)} is not in this model: {loaded.name} has layers 0 (embeddings) to {n}.")
    return int(layer)


@dataclass
class Sentences:
    """Sentences through the model: every layer's vectors of every token (padded on the right)."""

    texts: list[str]
    tokens: list[list[str]]  # per sentence, specials included
    special: list[list[bool]]
    hidden: np.ndarray  # (L + 1, B, T, H) float32; layer 0 = the embeddings' output
    lengths: list[int]  # real tokens per sentence (the rest of T is padding)


def encode_sentences(loaded: LoadedModel, texts: list[str], max_tokens: int = MAX_WIC_TOKENS,
                     truncate: bool = False):
    """Tokenizer output for ``texts`` (padded, with offsets); a sentence over ``max_tokens`` is refused,
    or cut there when ``truncate``."""
    for t in texts:
        check_chars(t)
    enc = tokenize(loaded.tokenizer, texts, padding=True, truncation=truncate,
                   max_length=max_tokens if truncate else None, return_offsets_mapping=True,
                   return_special_tokens_mask=True, return_tensors="pt")
    lengths = enc["attention_mask"].sum(1).tolist()
    for text, n in zip(texts, lengths):
        if n > max_tokens:
            raise ValueError(f"A sentence has {n} tokens; the limit is {max_tokens}: {text[:60]!r}…")
    return enc


def forward_hidden(loaded: LoadedModel, enc) -> np.ndarray:
    """(L + 1, B, T, H) hidden states of the tokenizer output ``enc`` (offsets and flags ignored)."""
    inputs = {k: v.to(loaded.device) for k, v in enc.items() if k in ("input_ids", "token_type_ids", "attention_mask")}
    with torch.inference_mode():
        out = loaded.model.base_model(**inputs, output_hidden_states=True)
    return torch.stack(out.hidden_states).float().cpu().numpy()


def run_sentences(loaded: LoadedModel, texts: list[str], max_tokens: int = MAX_WIC_TOKENS,
                  truncate: bool = False) -> tuple[Sentences, Any]:
    """``texts`` through the model in one padded batch: (their vectors, the tokenizer output)."""
    enc = encode_sentences(loaded, texts, max_tokens, truncate)
    hidden = forward_hidden(loaded, enc)
    lengths = enc["attention_mask"].sum(1).tolist()
    ids = enc["input_ids"].tolist()
    tokens = [loaded.tokenizer.convert_ids_to_tokens(row[:n]) for row, n in zip(ids, lengths)]
    special = [[bool(s) for s in row[:n]] for row, n in zip(enc["special_tokens_mask"].tolist(), lengths)]
    return Sentences(texts, tokens, special, hidden, lengths), enc


def word_position(text: str, word: str, offsets: list[tuple[int, int]], special: list[bool]) -> int | None:
    """The token position of the first piece of ``word``'s first whole-word use in ``text`` (any case), or None."""
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags=re.IGNORECASE)
    if match is None:
        return None
    for i, ((start, end), is_special) in enumerate(zip(offsets, special)):
        if not is_special and end > start and start <= match.start() < end:
            return i
    return None


def corpus_sentences(loaded: LoadedModel) -> list[str]:
    """The embedded Wikipedia summaries split into sentences (file order), read once per model's store."""
    def build() -> list[str]:
        out: list[str] = []
        for doc in wiki_summaries():
            out += [s for s in split_sentences(doc) if len(s) > MIN_CORPUS_SENTENCE_CHARS]
        return out

    return activation_store(loaded).get_or_build(("corpus sentences",), build,
                                                 lambda s: sum(len(x) for x in s) + 64 * len(s))

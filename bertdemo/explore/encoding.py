"""The one way every view turns the learner's text into model inputs: ``[mask]`` typed in any case
in either sentence becomes the model's mask token, a blank second sentence is no sentence, text
is tokenized without truncation and refused when too long; comma-separated word lists and a
word's pieces are read one way too."""

from __future__ import annotations

import re
from functools import lru_cache

import torch

from bertdemo.explore.typed_pair import split_pair
from bertdemo.limits import MAX_CHARS
from bertdemo.locks import pieces_of, tokenize
from bertdemo.models.store import LoadedModel

_MASK_PATTERN = re.compile(r"\[mask\]", re.IGNORECASE)
SPECIAL_NAMES = frozenset({"mask", "cls", "sep", "pad", "unk"})  # [CLS] and the like: special tokens, never a choice
CHOSEN = re.compile(r"\[([A-Za-z]+)\]")  # a word the learner chose to hide (the Learn tab's way): "The [dog] barked."


def chosen_words(text: str) -> list[re.Match]:
    """The words ``text`` puts in square brackets to hide ("The [dog] barked." → the match of ``[dog]``), special
    tokens such as ``[MASK]`` or ``[SEP]`` left out."""
    return [m for m in CHOSEN.finditer(text) if m.group(1).lower() not in SPECIAL_NAMES]


def without_brackets(text: str) -> str:
    """``text`` without the brackets of a word chosen to hide: "The [dog] barked." → "The dog barked." (special
    tokens such as ``[SEP]`` stay)."""
    return CHOSEN.sub(lambda m: m.group(0) if m.group(1).lower() in SPECIAL_NAMES else m.group(1), text)


def normalise_masks(text: str, mask_token: str) -> str:
    """Let users type ``[MASK]`` (any case) whatever the model's own mask token is."""
    return _MASK_PATTERN.sub(lambda _m: mask_token, text)


def normalise_pair(tokenizer, text: str, text_pair: str | None) -> tuple[str, str | None]:
    """(text, text_pair) with ``[mask]`` as ``tokenizer``'s mask token; a typed ``[SEP]`` starts sentence B
    when ``text_pair`` is blank (:mod:`bertdemo.explore.typed_pair`); a blank ``text_pair`` is None."""
    text, text_pair = split_pair(text, text_pair, getattr(tokenizer, "sep_token", None))
    if tokenizer.mask_token:
        text = normalise_masks(text, tokenizer.mask_token)
        text_pair = normalise_masks(text_pair, tokenizer.mask_token) if text_pair else None
    return text, text_pair


def check_chars(text: str) -> None:
    """Refuse text longer than MAX_CHARS characters, before any tokenizing."""
    if len(text) > MAX_CHARS:
        raise ValueError(f"The text is {len(text):,} characters; the limit is {MAX_CHARS:,}.")


def encode_checked(loaded: LoadedModel, text: str, text_pair: str | None, limit: int, *, empty: str,
                   too_long: str) -> tuple[dict, list[bool]]:
    """(tokenizer output as (1, T) tensors, special-token flags) for ``text`` (+ ``text_pair``).

    ``empty`` is the message for no text; ``too_long`` is formatted with ``n`` (tokens) and ``limit``
    (the smaller of ``limit`` and the model's own maximum)."""
    if not text or not text.strip():
        raise ValueError(empty)
    check_chars(text)
    tokenizer = loaded.tokenizer
    text, text_pair = normalise_pair(tokenizer, text, text_pair)
    enc = tokenize(tokenizer, text, text_pair, return_tensors="pt", truncation=False,
                   return_special_tokens_mask=True, verbose=False)
    special = enc.pop("special_tokens_mask")[0].bool().tolist()
    n = enc["input_ids"].shape[1]
    cap = min(limit, loaded.max_length)
    if n > cap:
        raise ValueError(too_long.format(n=n, limit=cap))
    return enc, special


def pad_batch(seqs: list[dict[str, list[int]]], pad_id: int | None, device: torch.device) -> dict[str, torch.Tensor]:
    """Encoded sequences (as lists) padded on the right into (B, T) tensors on ``device``.

    Padding is masked out of attention (attention_mask 0) and position ids start at 0 in every row,
    so each row's predictions are its own (equal to running it alone up to float rounding)."""
    pad = pad_id or 0
    width = max(len(s["input_ids"]) for s in seqs)
    batch = {}
    for key in seqs[0]:
        fill = pad if key == "input_ids" else 0
        batch[key] = torch.tensor([s[key] + [fill] * (width - len(s[key])) for s in seqs])  # (B, T)
    return {k: v.to(device) for k, v in batch.items()}


def parse_word_list(words: str | list[str] | None) -> list[str]:
    """``"cat, mat"`` (or a list) -> ["cat", "mat"]: stripped, blanks dropped, order kept."""
    if isinstance(words, str):
        words = words.split(",")
    return [w.strip() for w in (words or []) if w and w.strip()]


@lru_cache(maxsize=16)
def _byte_level(tokenizer) -> bool:
    """Whether `tokenizer` is GPT-2 style byte-level BPE (RoBERTa): its vocabulary spells a space "Ġ"."""
    return "Ġthe" in tokenizer.get_vocab()  # once per tokenizer: get_vocab() builds a fresh dict each call


def word_pieces(tokenizer, word: str) -> list[str]:
    """Pieces of ``word`` as it would appear mid-sentence (byte-level BPE needs the leading space)."""
    if _byte_level(tokenizer):
        return pieces_of(tokenizer, " " + word)
    return pieces_of(tokenizer, word)

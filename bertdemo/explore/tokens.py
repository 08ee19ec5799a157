"""Pure tokenizer inspection: text (+ optional pair) -> a token table, counts and vocabulary lookups.

Mirrors what the learner notebooks poke at: ``tokenize``, ``vocab['love']``, the special
ids 0/100/101/102/103 and ``encode_plus(a, b)`` — as plain dataclasses for the UI and API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bertdemo import locks
from bertdemo.english import plural
from bertdemo.explore.typed_pair import split_pair
from bertdemo.limits import MAX_CHARS

MAX_TOKEN_CHARS = 100  # a vocabulary lookup is one entry; longer input is refused
MAX_CHANGED_SHOWN = 12  # how many changed words the "reads it as" notice lists (the count says how many in all)


@dataclass
class TokenRow:
    """One token as the model sees it."""

    position: int  # index in input_ids, [CLS] = 0
    token: str  # e.g. "##ing"
    id: int  # vocabulary id
    segment: int  # token_type_id: 0 for sentence A, 1 for sentence B
    attention_mask: int  # 1 = real token the model attends to
    word_index: int | None  # index of the word it belongs to in its sentence, None for specials
    start: int | None  # character span [start, end) in its sentence, None for specials
    end: int | None
    sentence: int | None  # 0 = A, 1 = B, None for specials
    is_special: bool  # added by the tokenizer ([CLS], [SEP]) or typed into the text ([MASK])
    is_continuation: bool  # a later piece of a word split into several pieces
    is_unknown: bool


@dataclass
class TokenTable:
    """The tokenization of one input, with counts a learner asks about."""

    rows: list[TokenRow]
    n_tokens: int  # all tokens, specials included, before truncation
    n_words: int  # words as the tokenizer pre-splits them (A and B together)
    n_split_words: int  # words broken into more than one piece
    n_unknown: int
    max_length: int
    truncated: bool  # True when n_tokens > max_length; rows hold only the first max_length
    notices: list[str] = field(default_factory=list)
    n_normalised: int = 0  # words the normaliser changes (lowercasing, accents stripped), all of them
    changed: list[tuple[str, str]] = field(default_factory=list)  # (word as typed, as read), distinct, in order
    typed_sep: bool = False  # a [SEP] typed into the text started sentence B

    def encoding(self) -> dict[str, list[int]]:
        """The shown rows as the lists a notebook prints: input_ids, token_type_ids, attention_mask."""
        return {
            "input_ids": [r.id for r in self.rows],
            "token_type_ids": [r.segment for r in self.rows],
            "attention_mask": [r.attention_mask for r in self.rows],
        }


def _check_text(text: str | None, what: str = "text") -> str:
    if text is None or not text.strip():
        raise ValueError(f"Enter some {what} to tokenize.")
    if len(text) > MAX_CHARS:
        raise ValueError(
            f"The {what} is {len(text):,} characters; the limit is {MAX_CHARS:,}. Paste a shorter passage."
        )
    return text


def _reader(tokenizer) -> Callable[[str], str] | None:
    """How the normaliser reads one typed word, or None without one. Special tokens typed in the word
    ("[MASK]", "[SEP]") stay as typed: the tokenizer matches them before it normalises the rest."""
    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    if normalizer is None:
        return None
    specials = sorted(set(getattr(tokenizer, "all_special_tokens", [])), key=len, reverse=True)
    split = re.compile("(" + "|".join(map(re.escape, specials)) + ")") if specials else None

    def read(word: str) -> str:
        parts = split.split(word) if split else [word]
        return "".join(part if part in specials else normalizer.normalize_str(part) for part in parts).strip()
    return read


def count_normalised_words(tokenizer, *texts: str | None) -> int:
    """How many words the tokenizer's normaliser changes before splitting (e.g. "Naïve" -> "naive")."""
    read = _reader(tokenizer)
    if read is None:
        return 0
    return sum(read(word) != word for text in texts for word in (text or "").split())


def _changed_words(tokenizer, *texts: str | None) -> list[tuple[str, str]]:
    """Each distinct word the normaliser changes, as (typed, read), in the order typed."""
    read = _reader(tokenizer)
    if read is None:
        return []
    pairs = {}
    for text in texts:
        for word in (text or "").split():
            if read(word) != word:
                pairs.setdefault(word, read(word))
    return list(pairs.items())


def tokenize(tokenizer, text: str, text_pair: str | None = None, max_length: int = 512) -> TokenTable:
    """Tokenize ``text`` (and ``text_pair`` as sentence B) exactly as the model would see it."""
    text = _check_text(text)
    text_pair = _check_text(text_pair, "sentence B") if text_pair and text_pair.strip() else None
    typed_sep = text_pair is None
    text, text_pair = split_pair(text, text_pair, getattr(tokenizer, "sep_token", None))
    typed_sep = typed_sep and text_pair is not None
    if not text.strip():
        raise ValueError("Enter some text before the [SEP]: it is sentence A.")
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("This tokenizer has no fast (Rust) version, so character spans are unavailable.")
    enc = locks.tokenize(
        tokenizer,
        text,
        text_pair,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_token_type_ids=True,
        return_attention_mask=True,
        truncation=False,
        verbose=False,
    )
    ids = enc["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    word_ids = enc.word_ids()
    seq_ids = enc.sequence_ids()
    type_ids = enc.get("token_type_ids") or [0] * len(ids)
    unk = tokenizer.unk_token_id
    # special tokens typed into the text ("[MASK]", "[SEP]") are special too; [UNK] stays a word
    typed_special = set(tokenizer.all_special_ids) - {unk}

    rows: list[TokenRow] = []
    pieces_per_word: dict[tuple[int, int], int] = {}
    prev_key = None
    for pos, (token, tid) in enumerate(zip(tokens, ids)):
        added = bool(enc["special_tokens_mask"][pos]) or seq_ids[pos] is None  # [CLS], [SEP], [PAD]
        special = added or tid in typed_special
        key = None if special else (seq_ids[pos], word_ids[pos])
        if key is not None:
            pieces_per_word[key] = pieces_per_word.get(key, 0) + 1
        start, end = (None, None) if added else enc["offset_mapping"][pos]
        rows.append(
            TokenRow(
                position=pos,
                token=token,
                id=int(tid),
                segment=int(type_ids[pos]),
                attention_mask=int(enc["attention_mask"][pos]),
                word_index=None if added else word_ids[pos],
                start=start,
                end=end,
                sentence=None if added else seq_ids[pos],
                is_special=special,
                is_continuation=key is not None and key == prev_key,
                is_unknown=unk is not None and tid == unk,
            )
        )
        prev_key = key

    n_tokens = len(rows)
    truncated = n_tokens > max_length
    notices = []
    if truncated:
        notices.append(
            f"The input is {n_tokens:,} tokens; this model reads at most {max_length}. "
            f"Only the first {max_length:,} are shown — the model would need the text truncated."
        )
    n_unknown = sum(r.is_unknown for r in rows)
    if n_unknown:
        notices.append(
            f"{plural(n_unknown, 'token')} {'is' if n_unknown == 1 else 'are'} {tokenizer.unk_token}: "
            "characters missing from the vocabulary (often emoji or rare scripts)."
        )
    n_normalised = count_normalised_words(tokenizer, text, text_pair)
    return TokenTable(
        rows=rows[:max_length],
        n_tokens=n_tokens,
        n_words=len(pieces_per_word),
        n_split_words=sum(1 for n in pieces_per_word.values() if n > 1),
        n_unknown=n_unknown,
        max_length=max_length,
        truncated=truncated,
        notices=notices,
        n_normalised=n_normalised,
        changed=_changed_words(tokenizer, text, text_pair) if n_normalised else [],
        typed_sep=typed_sep,
    )


def lookup_token(tokenizer, token: str) -> int:
    """``vocab[token]``: the id of a vocabulary entry, or a clear error listing its pieces."""
    token = (token or "").strip()
    if not token:
        raise ValueError("Enter a token to look up, e.g. love or ##ing.")
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(
            f"That is {len(token):,} characters; a vocabulary entry is at most {MAX_TOKEN_CHARS}. "
            "Look up one word or piece."
        )
    def vocab_id(piece: str) -> int | None:  # one dictionary lookup; get_vocab() would copy 30k entries
        found = tokenizer.convert_tokens_to_ids(piece)
        unknown = found is None or (found == tokenizer.unk_token_id and piece != tokenizer.unk_token)
        return None if unknown else int(found)

    if (found := vocab_id(token)) is not None:
        return found
    pieces = locks.pieces_of(tokenizer, token)
    if len(pieces) == 1 and pieces[0] != tokenizer.unk_token and (found := vocab_id(pieces[0])) is not None:
        return found
    raise ValueError(
        f"{token!r} is not a vocabulary entry; the tokenizer splits it into {pieces}."
    )


def lookup_id(tokenizer, token_id: float | str | None) -> str:
    """The vocabulary entry with id ``token_id``."""
    size = len(tokenizer)
    if token_id is None or not str(token_id).strip():
        raise ValueError(f"Enter an id: a whole number from 0 to {size - 1:,}.")
    try:
        value = int(str(token_id).strip())
    except (TypeError, ValueError):
        raise ValueError(f"{token_id!r} is not a whole number.") from None
    if not 0 <= value < size:
        raise ValueError(f"Id {value:,} is outside the vocabulary (0 to {size - 1:,}).")
    return tokenizer.convert_ids_to_tokens(value)


def special_tokens(tokenizer) -> list[tuple[str, str, int]]:
    """(role, token, id) for each special token, e.g. ("cls_token", "[CLS]", 101)."""
    out = []
    for role, token in tokenizer.special_tokens_map.items():
        if isinstance(token, str):
            out.append((role, token, int(tokenizer.convert_tokens_to_ids(token))))
    return sorted(out, key=lambda item: item[2])

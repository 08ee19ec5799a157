"""Pure tokenizer inspection: text (+ optional pair) -> a token table, counts and vocabulary lookups.

Mirrors what the learner notebooks poke at: ``tokenize``, ``vocab['love']``, the special
ids 0/100/101/102/103 and ``encode_plus(a, b)`` — as plain dataclasses for the UI and API.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

MAX_CHARS = 200_000  # ~100 KB pastes are fine; beyond this we refuse rather than stall


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
    is_special: bool
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

    def to_records(self) -> list[dict]:
        """Rows as plain dicts (for JSON / dataframes)."""
        return [asdict(row) for row in self.rows]


def _check_text(text: str | None, what: str = "text") -> str:
    if text is None or not text.strip():
        raise ValueError(f"Enter some {what} to tokenize.")
    if len(text) > MAX_CHARS:
        raise ValueError(
            f"The {what} is {len(text):,} characters; the limit is {MAX_CHARS:,}. Paste a shorter passage."
        )
    return text


def tokenize(tokenizer, text: str, text_pair: str | None = None, max_length: int = 512) -> TokenTable:
    """Tokenize ``text`` (and ``text_pair`` as sentence B) exactly as the model would see it."""
    text = _check_text(text)
    text_pair = _check_text(text_pair, "sentence B") if text_pair and text_pair.strip() else None
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("This tokenizer has no fast (Rust) version, so character spans are unavailable.")
    enc = tokenizer(
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

    rows: list[TokenRow] = []
    pieces_per_word: dict[tuple[int, int], int] = {}
    prev_key = None
    for pos, (tok, tid) in enumerate(zip(tokens, ids)):
        special = bool(enc["special_tokens_mask"][pos]) or seq_ids[pos] is None
        key = None if special else (seq_ids[pos], word_ids[pos])
        if key is not None:
            pieces_per_word[key] = pieces_per_word.get(key, 0) + 1
        start, end = (None, None) if special else enc["offset_mapping"][pos]
        rows.append(
            TokenRow(
                position=pos,
                token=tok,
                id=int(tid),
                segment=int(type_ids[pos]),
                attention_mask=int(enc["attention_mask"][pos]),
                word_index=None if special else word_ids[pos],
                start=start,
                end=end,
                sentence=None if special else seq_ids[pos],
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
            f"Only the first {max_length} are shown — the model would need the text truncated."
        )
    n_unknown = sum(r.is_unknown for r in rows)
    if n_unknown:
        notices.append(
            f"{n_unknown} token(s) are {tokenizer.unk_token}: characters missing from the vocabulary "
            "(often emoji or rare scripts)."
        )
    return TokenTable(
        rows=rows[:max_length],
        n_tokens=n_tokens,
        n_words=len(pieces_per_word),
        n_split_words=sum(1 for n in pieces_per_word.values() if n > 1),
        n_unknown=n_unknown,
        max_length=max_length,
        truncated=truncated,
        notices=notices,
    )


def lookup_token(tokenizer, token: str) -> int:
    """``vocab[token]``: the id of a vocabulary entry, or a clear error listing its pieces."""
    token = (token or "").strip()
    if not token:
        raise ValueError("Enter a token to look up, e.g. love or ##ing.")
    vocab = tokenizer.get_vocab()
    if token in vocab:
        return int(vocab[token])
    pieces = tokenizer.tokenize(token)
    if len(pieces) == 1 and pieces[0] in vocab and pieces[0] != tokenizer.unk_token:
        return int(vocab[pieces[0]])
    raise ValueError(
        f"{token!r} is not a vocabulary entry; the tokenizer splits it into {pieces}."
    )


def lookup_id(tokenizer, token_id: int | float | str) -> str:
    """The vocabulary entry with id ``token_id``."""
    try:
        value = int(str(token_id).strip())
    except (TypeError, ValueError):
        raise ValueError(f"{token_id!r} is not a whole number.") from None
    size = len(tokenizer)
    if not 0 <= value < size:
        raise ValueError(f"Id {value} is outside the vocabulary (0 to {size - 1}).")
    return tokenizer.convert_ids_to_tokens(value)


def special_tokens(tokenizer) -> list[tuple[str, str, int]]:
    """(role, token, id) for each special token, e.g. ("cls_token", "[CLS]", 101)."""
    out = []
    for role, tok in tokenizer.special_tokens_map.items():
        if isinstance(tok, str):
            out.append((role, tok, int(tokenizer.convert_tokens_to_ids(tok))))
    return sorted(out, key=lambda item: item[2])

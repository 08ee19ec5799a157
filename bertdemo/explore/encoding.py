"""One way the inspection views turn the learner's text into model inputs: check it, let ``[mask]`` be
typed in any case in either sentence, tokenize without truncation, and refuse what is too long."""

from __future__ import annotations

from bertdemo.explore.fill_mask import normalise_masks
from bertdemo.explore.tokens import MAX_CHARS
from bertdemo.models.store import LoadedModel


def encode_checked(loaded: LoadedModel, text: str, text_pair: str | None, limit: int, *, empty: str,
                   too_long: str) -> tuple[dict, list[bool]]:
    """(tokenizer output as (1, T) tensors, special-token flags) for ``text`` (+ ``text_pair``).

    ``empty`` is the message for no text; ``too_long`` is formatted with ``n`` (tokens) and ``limit``
    (the smaller of ``limit`` and the model's own maximum)."""
    if not text or not text.strip():
        raise ValueError(empty)
    if len(text) > MAX_CHARS:
        raise ValueError(f"The text is {len(text):,} characters; the limit is {MAX_CHARS:,}.")
    tokenizer = loaded.tokenizer
    if tokenizer.mask_token:  # "[mask]" typed in either sentence is the model's mask token
        text = normalise_masks(text, tokenizer.mask_token)
        text_pair = normalise_masks(text_pair, tokenizer.mask_token) if text_pair else None
    enc = tokenizer(text, text_pair, return_tensors="pt", truncation=False, return_special_tokens_mask=True,
                    verbose=False)
    special = enc.pop("special_tokens_mask")[0].bool().tolist()
    n = enc["input_ids"].shape[1]
    cap = min(limit, loaded.max_length)
    if n > cap:
        raise ValueError(too_long.format(n=n, limit=cap))
    return enc, special

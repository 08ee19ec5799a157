"""Masked-LM masking and next-sentence pairs, vectorised on the training device.

`mask_tokens` follows `DataCollatorForLanguageModeling`: special tokens are never chosen,
chosen tokens become [MASK] / a random token / themselves with probabilities
mask_replace_prob / random_replace_prob / rest, labels are -100 everywhere else. A seeded
`torch.Generator` on the same device makes it deterministic and new masks are drawn every
time a block is seen. With ``fixed_count`` every row gets exactly round(p * (T - 2))
predictions (as the original BERT's ``max_predictions_per_seq`` data did), which keeps the
shapes static: no host sync, and a (B, k) gather for the sparse MLM head.

Whole-word masking (``is_continuation`` given, see `continuation_lookup`): all WordPiece
pieces of a word are chosen together. A word is a non-special token that is not a ``##``
continuation (or follows a special token) plus the ``##`` pieces after it. Each word is
chosen with probability ``mlm_probability`` (Bernoulli mode, so the expected fraction of
tokens chosen stays ``mlm_probability``), or, with ``fixed_count``, words in random order
are taken while the row's total stays <= k (``positions`` is still (B, k): the slots left
over point at unchosen tokens, whose label is -100). The 80/10/10 split stays per token, as
in Google's ``create_pretraining_data.py`` and ``DataCollatorForWholeWordMask``.

`make_nsp_pairs` turns packed blocks into ``[CLS] A [SEP] B [SEP]`` pairs with segment ids:
B follows A in the text (IsNext, label 0) or is taken from another block (NotNext, label 1),
50/50. As in BERT, a "sentence" is an arbitrary span of contiguous text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

IGNORE_INDEX = -100


@dataclass
class MaskedBatch:
    input_ids: torch.Tensor  # (B, T) corrupted inputs
    labels: torch.Tensor  # (B, T) original ids at predicted positions, -100 elsewhere
    positions: torch.Tensor | None  # (B, k) predicted positions in fixed-count mode, else None
    actions: torch.Tensor | None = None  # (B, T) int8 ACTION_* codes, only when asked (with_actions)


# what happened to each token (MaskedBatch.actions)
ACTION_NONE, ACTION_MASK, ACTION_RANDOM, ACTION_KEEP = 0, 1, 2, 3


@lru_cache(maxsize=16)
def continuation_ids(tokenizer) -> torch.Tensor:
    """Ids of the WordPiece continuation pieces (``##...``) of ``tokenizer``; empty for other tokenizers (made once
    per tokenizer)."""
    return continuation_lookup(tokenizer).nonzero().flatten()


def continuation_lookup(tokenizer, device: torch.device | str | None = None) -> torch.Tensor:
    """(V,) bool: True for vocabulary entries that continue the previous token's word (``##...``).

    Index it with token ids (``lookup[input_ids]``) to find word starts on the device.
    """
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return torch.tensor([str(t).startswith("##") for t in vocab], dtype=torch.bool, device=device)


WORD_START = "word start"  # after a space, punctuation or the start: no ## pieces
AFTER_LETTERS = "after letters"  # play[MASK]: only ## pieces
AFTER_MASK = "after a mask"  # [MASK][MASK]: anything


# the ideographs BERT's tokenizer makes words of their own (BasicTokenizer._is_chinese_char): a piece after one
# starts a word, so "日本の首都は[MASK]" offers no ## piece (kana and hangul are letters of a word, as in BERT)
CJK_IDEOGRAPHS = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
                  (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_cjk_ideograph(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph, which BERT's tokenizer always splits off as a word of its own."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in CJK_IDEOGRAPHS)


def mask_contexts(tokenizer, enc, positions: list[int], text: str, text_pair: str | None = None) -> list[str]:
    """Per mask of ``enc`` (a tokenizer output with ``offset_mapping``, batch of one): WORD_START (after a space,
    punctuation, a CJK ideograph or the start), AFTER_LETTERS (glued to a word) or AFTER_MASK (glued to a previous
    mask). The one rule for what may fill a mask, in Fill-Mask and in the pretraining probes."""
    if "offset_mapping" not in enc:  # slow tokenizer: no offsets, no filtering
        return [AFTER_MASK] * len(positions)
    offsets = enc["offset_mapping"][0].tolist()
    sequence_ids = enc.sequence_ids(0)
    contexts = []
    for pos in positions:
        source = text_pair if sequence_ids[pos] == 1 else text
        before = source[: offsets[pos][0]]
        if before.endswith(tokenizer.mask_token):
            contexts.append(AFTER_MASK)
        elif before and before[-1].isalnum() and not is_cjk_ideograph(before[-1]):
            contexts.append(AFTER_LETTERS)
        else:
            contexts.append(WORD_START)
    return contexts


def allowed_pieces(probs: torch.Tensor, context: str, continuation: torch.Tensor) -> torch.Tensor:
    """``probs`` (..., V) with the pieces that cannot stand in ``context`` set to 0 (WordPiece only;
    ``continuation``: the ids of the ``##`` pieces)."""
    if not continuation.numel() or context == AFTER_MASK:
        return probs
    out = probs.clone()
    if context == WORD_START:
        out[..., continuation] = 0.0
    else:  # after letters: only continuation pieces
        keep = out[..., continuation].clone()
        out.zero_()
        out[..., continuation] = keep
    return out


def word_starts(input_ids: torch.Tensor, special: torch.Tensor, is_continuation: torch.Tensor) -> torch.Tensor:
    """(B, T) bool: the first piece of every word (a continuation right after a special starts one)."""
    cont = is_continuation[input_ids.long()]  # (B, T)
    prev_special = torch.ones_like(special)
    prev_special[:, 1:] = special[:, :-1]
    return ~special & (~cont | prev_special)


def _choose_whole_words(
    input_ids: torch.Tensor, special: torch.Tensor, is_continuation: torch.Tensor,
    generator: torch.Generator, mlm_probability: float, k: int | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(B, T) chosen mask with words chosen whole, and (B, k) positions when ``k`` is given."""
    B, T = input_ids.shape
    device = input_ids.device
    starts = word_starts(input_ids, special, is_continuation)  # (B, T)
    pos = torch.arange(T, device=device).expand(B, T)
    # every token points at its word's first piece (specials point at themselves)
    start_pos = torch.where(starts | special, pos, torch.zeros_like(pos)).cummax(dim=1).values  # (B, T)
    scores = torch.rand((B, T), generator=generator, device=device)  # one draw per word start
    if k is None:
        chosen_start = starts & (scores < mlm_probability)
        return chosen_start.gather(1, start_pos) & ~special, None
    # words in random order; take them while the running token count stays <= k
    word_len = torch.zeros((B, T), dtype=torch.long, device=device)
    word_len.scatter_add_(1, start_pos, (~special).long())  # (B, T) at word starts: pieces in the word
    order = scores.masked_fill(~starts, 2.0).argsort(dim=1)  # (B, T) word starts first, shuffled
    total = word_len.gather(1, order).cumsum(dim=1)  # (B, T) tokens taken after each word
    take_sorted = (total <= k) & starts.gather(1, order)
    chosen_start = torch.zeros_like(starts).scatter_(1, order, take_sorted)
    chosen = chosen_start.gather(1, start_pos) & ~special
    # (B, k) positions: the chosen tokens first, then unchosen ones (label -100) to fill the slots
    key = chosen.float() * 2 + torch.rand((B, T), generator=generator, device=device)
    positions = key.topk(min(k, T), dim=1).indices
    return chosen, positions


def mask_tokens(
    input_ids: torch.Tensor,
    special_ids: torch.Tensor,
    *,
    mask_token_id: int,
    vocab_size: int,
    generator: torch.Generator,
    mlm_probability: float = 0.15,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    fixed_count: bool = False,
    is_continuation: torch.Tensor | None = None,
    with_actions: bool = False,
) -> MaskedBatch:
    """Corrupt (B, T) token ids for masked-LM training; see the module docstring.

    ``is_continuation`` ((V,) bool on the same device, from `continuation_lookup`) turns on
    whole-word masking; ``with_actions`` also returns what happened to each token.
    """
    B, T = input_ids.shape
    device = input_ids.device
    special = torch.isin(input_ids, special_ids)  # (B, T) never predicted
    positions = None
    if is_continuation is not None:
        k = max(1, round(mlm_probability * (T - 2))) if fixed_count else None
        masked, positions = _choose_whole_words(input_ids, special, is_continuation, generator, mlm_probability, k)
    elif fixed_count:
        k = max(1, round(mlm_probability * (T - 2)))
        scores = torch.rand((B, T), generator=generator, device=device)
        scores = scores.masked_fill(special, -1.0)
        top = scores.topk(k, dim=1)  # (B, k) random non-special positions
        masked = torch.zeros((B, T), dtype=torch.bool, device=device)
        masked.scatter_(1, top.indices, top.values >= 0)  # rows with < k real tokens skip specials
        positions = top.indices
    else:
        probs = torch.full((B, T), mlm_probability, device=device).masked_fill(special, 0.0)
        masked = torch.bernoulli(probs, generator=generator).bool()
    labels = torch.where(masked, input_ids, IGNORE_INDEX)
    # one uniform draw splits the chosen tokens into [MASK] / random / unchanged
    u = torch.rand((B, T), generator=generator, device=device)
    replaced = masked & (u < mask_replace_prob)
    randomized = masked & (u >= mask_replace_prob) & (u < mask_replace_prob + random_replace_prob)
    random_words = torch.randint(vocab_size, (B, T), generator=generator, device=device, dtype=input_ids.dtype)
    corrupted = torch.where(replaced, torch.full_like(input_ids, mask_token_id), input_ids)
    corrupted = torch.where(randomized, random_words, corrupted)
    actions = None
    if with_actions:
        actions = torch.where(masked, ACTION_KEEP, ACTION_NONE).to(torch.int8)
        actions = actions.masked_fill(replaced, ACTION_MASK).masked_fill(randomized, ACTION_RANDOM)
    return MaskedBatch(corrupted, labels, positions, actions)


def make_nsp_pairs(
    blocks: torch.Tensor, *, cls_id: int, sep_id: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(B, T) packed blocks -> input_ids (B, T), token_type_ids (B, T), next_sentence_label (B,)."""
    B, T = blocks.shape
    device = blocks.device
    body = blocks[:, 1:-1]  # (B, L) text between the block's [CLS] and [SEP]
    L = T - 2
    lo, hi = max(1, L // 4), max(2, (3 * L) // 4)
    split = torch.randint(lo, hi, (B, 1), generator=generator, device=device)  # (B, 1) length of A
    not_next = torch.rand((B,), generator=generator, device=device) < 0.5  # (B,)
    shift = torch.randint(1, B, (1,), generator=generator, device=device)  # another row, never itself
    rows = torch.arange(B, device=device)
    src_rows = torch.where(not_next, (rows + shift) % B, rows)
    pos = torch.arange(T, device=device).unsqueeze(0)  # (1, T)
    tok_a = body.gather(1, (pos - 1).clamp(0, L - 1).expand(B, T))  # A: body[0 : split]
    tok_b = body[src_rows].gather(1, (pos - 2).clamp(0, L - 1).expand(B, T))  # B: body[split : L-1]
    ids = torch.where(pos <= split, tok_a, tok_b)
    ids = torch.where(pos == split + 1, torch.full_like(ids, sep_id), ids)
    ids[:, 0] = cls_id
    ids[:, -1] = sep_id
    token_type_ids = (pos > split + 1).to(blocks.dtype).expand(B, T).contiguous()  # B and final [SEP] -> 1
    return ids, token_type_ids, not_next.long()

"""Pure masked-word prediction: text with [MASK]s -> top-k candidates (and chosen targets) per mask.

Like the Hugging Face fill-mask pipeline, each mask is predicted with all masks present
(independently, not autoregressively). Unlike it, the vocabulary projection runs only at
the masked positions: the encoder's hidden states are gathered there first, so a
30k-word softmax is computed for N masks, not for every token. And for WordPiece models a
mask that starts a word (after a space, punctuation or the start of the text) is never
offered a ``##`` continuation piece, which cannot follow a space in a real tokenization;
a mask glued to a word or to another mask (``play[MASK]``, ``[MASK][MASK]``) still is.
Probabilities stay the model's own (softmax over the whole vocabulary).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from bertdemo.models import embedded
from bertdemo.models.store import LoadedModel
from bertdemo.explore.tokens import MAX_CHARS

MAX_TOP_K = 50
MAX_MASKS = 20
_MASK_PATTERN = re.compile(r"\[mask\]", re.IGNORECASE)


@dataclass
class Candidate:
    """One predicted vocabulary entry at a mask."""

    token: str  # vocabulary entry, e.g. "meet" or "##ing"
    id: int
    prob: float
    text: str  # how it reads when filled into the sentence


@dataclass
class TargetScore:
    """The probability of a word the user asked about, at one mask."""

    word: str
    prob: float | None  # None when it cannot be scored (see message)
    rank: int | None  # 1 = the model's top choice
    message: str = ""


@dataclass
class MaskPrediction:
    """Predictions at the ``index``-th mask (0-based), token position ``position``."""

    index: int
    position: int
    candidates: list[Candidate]
    targets: list[TargetScore] = field(default_factory=list)


@dataclass
class FillMaskResult:
    """All masks of one input, and the sentence with each mask filled by its top choice."""

    text: str
    masks: list[MaskPrediction]
    filled_text: str
    model_name: str


def normalise_masks(text: str, mask_token: str) -> str:
    """Let users type ``[MASK]`` (any case) whatever the model's own mask token is."""
    return _MASK_PATTERN.sub(lambda _m: mask_token, text)


def _validate(loaded: LoadedModel, text: str, top_k: int) -> None:
    if not loaded.has_mlm_head:
        raise ValueError(
            f"{loaded.name} has no trained masked-LM head, so it cannot predict words "
            "(a randomly initialised head would only produce noise). Choose a masked-LM: "
            f"{embedded.EMBEDDED_MLM_NAME} (works offline), "
            "bert-base-uncased, distilbert-base-uncased or roberta-base when the hub is reachable, "
            "a model in a local folder, or a checkpoint from the Pretrain tab."
        )
    if loaded.tokenizer.mask_token is None:
        raise ValueError(f"{loaded.name}'s tokenizer has no mask token.")
    if not text or not text.strip():
        raise ValueError("Enter a sentence with [MASK] where a word is missing, e.g. 'Nice to [MASK] you.'")
    if len(text) > MAX_CHARS:
        raise ValueError(f"The text is {len(text):,} characters; the limit is {MAX_CHARS:,}.")
    if not 1 <= int(top_k) <= MAX_TOP_K:
        raise ValueError(f"Top-k must be between 1 and {MAX_TOP_K}.")


def _piece_text(tokenizer, token_id: int) -> str:
    """How a single vocabulary piece reads in running text ("##ing" -> "ing", "Ġcat" -> "cat")."""
    token = tokenizer.convert_ids_to_tokens(token_id)
    if token.startswith("##"):  # WordPiece continuation: convert_tokens_to_string keeps the marker
        return token[2:]
    return tokenizer.convert_tokens_to_string([token]).strip()


@lru_cache(maxsize=16)
def _continuation_ids(tokenizer) -> torch.Tensor:
    """Ids of the WordPiece continuation pieces (``##...``) of `tokenizer`; empty for other tokenizers."""
    ids = [i for t, i in tokenizer.get_vocab().items() if t.startswith("##")]
    return torch.tensor(sorted(ids), dtype=torch.long)


def _starts_word(tok, enc, positions: list[int], text: str, text_pair: str | None) -> list[bool]:
    """Per mask: True when it begins a word (nothing but a space, punctuation or the start of its
    text before it), False when it is glued to a word or to a previous mask."""
    if "offset_mapping" not in enc:  # slow tokenizer: no offsets, no filtering
        return [False] * len(positions)
    offsets = enc["offset_mapping"][0].tolist()
    sequence_ids = enc.sequence_ids(0)
    starts = []
    for pos in positions:
        source = text_pair if sequence_ids[pos] == 1 else text
        start = offsets[pos][0]
        before = source[:start]
        glued = bool(before) and (before[-1].isalnum() or before.endswith(tok.mask_token))
        starts.append(not glued)
    return starts


def _word_pieces(tokenizer, word: str) -> list[str]:
    """Pieces of ``word`` as it would appear mid-sentence (byte-level BPE needs the leading space)."""
    vocab = tokenizer.get_vocab()
    if "Ġthe" in vocab:  # GPT-2 style byte-level BPE (RoBERTa)
        return tokenizer.tokenize(" " + word)
    return tokenizer.tokenize(word)


def score_target(tokenizer, word: str, probs: torch.Tensor) -> TargetScore:
    """Probability of ``word`` at one mask; multi-piece words are refused, never scored by a piece."""
    pieces = _word_pieces(tokenizer, word)
    if not pieces:
        return TargetScore(word, None, None, "empty after tokenization")
    if len(pieces) > 1:
        return TargetScore(
            word, None, None,
            f"split into {len(pieces)} pieces {pieces}: one [MASK] predicts one piece, so it cannot be "
            f"scored here (use {len(pieces)} masks in a row to ask for each piece)",
        )
    token_id = tokenizer.convert_tokens_to_ids(pieces[0])
    if token_id is None or token_id == tokenizer.unk_token_id:
        return TargetScore(word, None, None, "not in the vocabulary")
    prob = float(probs[token_id])
    rank = int((probs > probs[token_id]).sum().item()) + 1
    return TargetScore(word, prob, rank)


def _logits_at(model, enc: dict, positions: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits only at ``positions``: (N, V). Falls back to the full head for unknown types."""
    hidden = model.base_model(**enc).last_hidden_state[0, positions]  # (N, H)
    if hasattr(model, "cls"):  # BERT: BertOnlyMLMHead
        return model.cls(hidden)
    if hasattr(model, "lm_head"):  # RoBERTa family
        return model.lm_head(hidden)
    if hasattr(model, "vocab_projector"):  # DistilBERT
        h = model.vocab_layer_norm(model.activation(model.vocab_transform(hidden)))
        return model.vocab_projector(h)
    if hasattr(model, "predictions"):  # ALBERT
        return model.predictions(hidden)
    return model(**enc).logits[0, positions]  # (N, V), computed everywhere


def predict(
    loaded: LoadedModel,
    text: str,
    text_pair: str | None = None,
    top_k: int = 5,
    targets: list[str] | None = None,
) -> FillMaskResult:
    """Top-k predictions at every mask of ``text`` (sentence B in ``text_pair`` is segment 1)."""
    _validate(loaded, text, top_k)
    tok = loaded.tokenizer
    text = normalise_masks(text, tok.mask_token)
    text_pair = normalise_masks(text_pair, tok.mask_token) if text_pair and text_pair.strip() else None
    enc = tok(text, text_pair, return_tensors="pt", truncation=False, verbose=False,
              return_offsets_mapping=bool(getattr(tok, "is_fast", False)))
    ids = enc["input_ids"][0]  # (T,)
    if ids.numel() > loaded.max_length:
        raise ValueError(
            f"The input is {ids.numel():,} tokens; {loaded.name} accepts at most {loaded.max_length}. "
            "Shorten the text."
        )
    positions = (ids == tok.mask_token_id).nonzero().flatten()
    if positions.numel() == 0:
        raise ValueError(f"No mask found: put [MASK] (or {tok.mask_token}) where a word is missing.")
    if positions.numel() > MAX_MASKS:
        raise ValueError(f"{positions.numel()} masks found; use at most {MAX_MASKS}.")

    starts = _starts_word(tok, enc, positions.tolist(), text, text_pair)
    enc = {k: v.to(loaded.device) for k, v in enc.items() if k != "offset_mapping"}
    with torch.inference_mode():
        probs = _logits_at(loaded.model, enc, positions.to(loaded.device)).float().softmax(-1).cpu()  # (N, V)
    ranked = probs.clone()  # what may be offered: continuation pieces removed at word starts
    continuation = _continuation_ids(tok)
    if continuation.numel():
        for i, start in enumerate(starts):
            if start:
                ranked[i, continuation] = 0.0

    words = [w.strip() for w in (targets or []) if w and w.strip()]
    masks = []
    for i, pos in enumerate(positions.tolist()):
        top = ranked[i].topk(int(top_k))
        candidates = [
            Candidate(tok.convert_ids_to_tokens(j), int(j), float(p), _piece_text(tok, int(j)))
            for p, j in zip(top.values.tolist(), top.indices.tolist())
        ]
        masks.append(MaskPrediction(i, pos, candidates, [score_target(tok, w, ranked[i]) for w in words]))

    return FillMaskResult(text, masks, _fill(text, text_pair, tok.mask_token, masks), loaded.name)


def _fill(text: str, text_pair: str | None, mask_token: str, masks: list[MaskPrediction]) -> str:
    """The input with each mask replaced by its top candidate, marked **bold**."""
    fills = iter(f"**{m.candidates[0].text}**" for m in masks)
    pattern = re.compile(re.escape(mask_token))
    filled = pattern.sub(lambda _m: next(fills), text)
    if text_pair:
        filled += " / " + pattern.sub(lambda _m: next(fills), text_pair)
    return filled

"""Pure masked-word prediction: text with [MASK]s -> top-k candidates (and chosen targets) per mask.

Like the Hugging Face fill-mask pipeline, each mask is predicted with all masks present
(independently, not autoregressively). Unlike it, the vocabulary projection runs only at
the masked positions: the encoder's hidden states are gathered there first, so a
30k-word softmax is computed for N masks, not for every token. For BERT and RoBERTa the
encoder's last layer, too, computes only what the masks need (keys and values everywhere;
queries, output projection, layer norms and feed-forward at the masks): see :func:`hidden_at`.
For WordPiece models a mask's place in the text decides which pieces can stand there: a
mask that starts a word (after a space, punctuation or the start of the text) is never
offered a ``##`` continuation piece, and a mask glued to letters (``play[MASK]``) is
offered only ``##`` pieces; a mask glued to another mask (``[MASK][MASK]``) stays unfiltered. Probabilities
stay the model's own (softmax over the whole vocabulary).

Words the tokenizer splits into several pieces ("tokenization" -> token ##ization) are
scored honestly by pseudo-log-likelihood (Salazar et al. 2020, "Masked Language Model
Scoring"): the word's pieces replace the mask, each piece is masked in turn, and the
log-probabilities of the pieces are summed. The same score ranks whole-word candidates of
1-3 pieces (a beam over the top pieces for 1, 2 and 3 masks, then rescored) when asked.

Requests that arrive together on one model share one padded forward pass
(:mod:`bertdemo.explore.batching`); each still gets exactly its own predictions. ``fast=True``
runs the same steps on the model's dynamic-int8 copy (:mod:`bertdemo.models.int8`).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

import torch
from transformers.masking_utils import create_bidirectional_mask

from bertdemo.explore.batching import MicroBatcher
from bertdemo.explore.input_limits import MAX_MASKS, MAX_TARGET_CHARS, MAX_TARGETS, MAX_TOP_K  # noqa: F401
from bertdemo.explore.tokens import MAX_CHARS
from bertdemo.models import attention_modes, embedded, int8
from bertdemo.models.store import LoadedModel

MAX_WHOLE_WORD_MASKS = 5  # whole-word search runs ~75 short forward passes per mask
MAX_WORD_PIECES = 3  # whole-word candidates have 1..3 pieces
WORD_BEAM = 8  # partial words kept per step of the whole-word beam
_BATCH = 32  # sequences per forward pass when scoring
# most concurrent requests sharing one forward pass (BERTDEMO_FILL_MASK_BATCH=1: one request per forward)
MAX_SHARED_BATCH = max(1, int(os.environ.get("BERTDEMO_FILL_MASK_BATCH", "16")))
_SHARED = MicroBatcher(MAX_SHARED_BATCH)
_MASK_PATTERN = re.compile(r"\[mask\]", re.IGNORECASE)

PIECE_METHOD = "one vocabulary piece per mask: the model's softmax over its whole vocabulary"
PLL_METHOD = (
    "pseudo-log-likelihood (Salazar et al. 2020): the word's pieces replace the mask, each piece is "
    "masked in turn and the log-probabilities are summed; shown as exp(PLL)"
)
WHOLE_WORD_METHOD = (
    f"whole words of 1–{MAX_WORD_PIECES} pieces: a beam over the top pieces for 1, 2 and "
    f"{MAX_WORD_PIECES} masks, ranked by {PLL_METHOD}"
)
FAST_METHOD = f"fast mode: {int8.PRECISION}; probabilities differ slightly from full precision (float32)"

# Where a mask stands in its text; decides which WordPiece pieces may fill it.
WORD_START = "word start"  # after a space, punctuation or the start: no ## pieces
AFTER_LETTERS = "after letters"  # play[MASK]: only ## pieces
AFTER_MASK = "after a mask"  # [MASK][MASK]: anything


def no_head_message(name: str) -> str:
    """Why a model without a trained masked-LM head cannot fill masks, and what to choose instead."""
    return (
        f"{name} has no trained masked-LM head, so it cannot predict words "
        "(a randomly initialised head would only produce noise). Choose a masked-LM: "
        f"{embedded.EMBEDDED_MLM_NAME} (works offline), "
        "bert-base-uncased, distilbert-base-uncased or roberta-base when the hub is reachable, "
        "a model in a local folder, or a checkpoint from the Pretrain tab."
    )


@dataclass
class Candidate:
    """One predicted vocabulary entry (or whole word of several pieces) at a mask."""

    token: str  # vocabulary entry, e.g. "meet" or "##ing"; pieces joined by spaces for whole words
    id: int  # the (first) piece's id
    prob: float  # the model's probability; exp(PLL) for a whole word
    text: str  # how it reads when filled into the sentence
    pieces: list[str] = field(default_factory=list)  # whole-word mode: the word's pieces


@dataclass
class TargetScore:
    """The probability of a word the user asked about, at one mask."""

    word: str
    prob: float | None  # None when it cannot be scored (see message); exp(PLL) for several pieces
    rank: int | None  # 1 = the model's top choice; None for words of several pieces
    message: str = ""
    pieces: list[str] = field(default_factory=list)


@dataclass
class MaskPrediction:
    """Predictions at the ``index``-th mask (0-based), token position ``position``."""

    index: int
    position: int
    candidates: list[Candidate]
    targets: list[TargetScore] = field(default_factory=list)
    context: str = WORD_START  # WORD_START, AFTER_LETTERS or AFTER_MASK


@dataclass
class FillMaskResult:
    """All masks of one input, and the sentence with each mask filled by its top choice."""

    text: str
    masks: list[MaskPrediction]
    filled_text: str
    model_name: str
    method: str = PIECE_METHOD


def normalise_masks(text: str, mask_token: str) -> str:
    """Let users type ``[MASK]`` (any case) whatever the model's own mask token is."""
    return _MASK_PATTERN.sub(lambda _m: mask_token, text)


def mask_name(tokenizer) -> str:
    """How to name the mask to the user: "[MASK]", or "[MASK] (or <mask>)" for other mask tokens."""
    return "[MASK]" if tokenizer.mask_token == "[MASK]" else f"[MASK] (or {tokenizer.mask_token})"


def parse_targets(words: list[str] | None) -> list[str]:
    """Non-empty target words, bounded: at most MAX_TARGETS, each at most MAX_TARGET_CHARS characters."""
    words = [w.strip() for w in (words or []) if w and w.strip()]
    if len(words) > MAX_TARGETS:
        raise ValueError(f"{len(words)} target words given; ask for at most {MAX_TARGETS} at once.")
    long = [w for w in words if len(w) > MAX_TARGET_CHARS]
    if long:
        raise ValueError(
            f"Target words are at most {MAX_TARGET_CHARS} characters; {long[0][:20]!r}… has {len(long[0]):,}."
        )
    return words


def _validate(loaded: LoadedModel, text: str, top_k: int) -> None:
    if not loaded.has_mlm_head:
        raise ValueError(no_head_message(loaded.name))
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


def _mask_contexts(tokenizer, enc, positions: list[int], text: str, text_pair: str | None) -> list[str]:
    """Per mask: WORD_START, AFTER_LETTERS (glued to a word) or AFTER_MASK (glued to a previous mask)."""
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
        elif before and before[-1].isalnum():
            contexts.append(AFTER_LETTERS)
        else:
            contexts.append(WORD_START)
    return contexts


def _allowed(probs: torch.Tensor, context: str, continuation: torch.Tensor) -> torch.Tensor:
    """``probs`` (..., V) with the pieces that cannot stand in ``context`` set to 0 (WordPiece only)."""
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


@lru_cache(maxsize=16)
def _byte_level(tokenizer) -> bool:
    """Whether `tokenizer` is GPT-2 style byte-level BPE (RoBERTa): its vocabulary spells a space "Ġ"."""
    return "Ġthe" in tokenizer.get_vocab()  # once per tokenizer: get_vocab() builds a fresh dict each call


def _word_pieces(tokenizer, word: str) -> list[str]:
    """Pieces of ``word`` as it would appear mid-sentence (byte-level BPE needs the leading space)."""
    if _byte_level(tokenizer):
        return tokenizer.tokenize(" " + word)
    return tokenizer.tokenize(word)


def score_target(tokenizer, word: str, probs: torch.Tensor) -> TargetScore:
    """Probability and rank of a one-piece ``word`` at one mask (``probs``: (V,)).

    Words of several pieces get a message here; :func:`predict` scores them by PLL.
    """
    pieces = _word_pieces(tokenizer, word)
    if not pieces:
        return TargetScore(word, None, None, "empty after tokenization")
    if len(pieces) > 1:
        return TargetScore(word, None, None, f"split into {len(pieces)} pieces {pieces}", pieces)
    token_id = tokenizer.convert_tokens_to_ids(pieces[0])
    if token_id is None or token_id == tokenizer.unk_token_id:
        return TargetScore(word, None, None, "not in the vocabulary", pieces)
    prob = float(probs[token_id])
    rank = int((probs > probs[token_id]).sum().item()) + 1
    return TargetScore(word, prob, rank, "", pieces)


def _logits_at(model, enc: dict, rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits only at (``rows``, ``positions``): (N, V). Falls back to the full head for unknown types."""
    hidden = hidden_at(model, enc, rows, positions)  # (N, H)
    if hasattr(model, "cls"):  # BERT: BertOnlyMLMHead
        return model.cls(hidden)
    if hasattr(model, "lm_head"):  # RoBERTa family
        return model.lm_head(hidden)
    if hasattr(model, "vocab_projector"):  # DistilBERT
        h = model.vocab_layer_norm(model.activation(model.vocab_transform(hidden)))
        return model.vocab_projector(h)
    if hasattr(model, "predictions"):  # ALBERT
        return model.predictions(hidden)
    return model(**enc).logits[rows, positions]  # (N, V), computed everywhere


# --- the encoder, with its last layer only at the masks ----------------------------------------
# Only the masked positions' final hidden states reach the head, and a position's last-layer output
# depends on every position only through that layer's keys and values. So the last layer computes
# keys and values everywhere, and its queries, attention output, output projection, layer norms and
# feed-forward only at the masks: the same numbers (up to float rounding) for a fraction of its work.

_LAYERED_TYPES = ("bert", "roberta")  # embeddings -> bidirectional mask -> encoder.layer[...], nothing else


def masks_only_supported(model) -> bool:
    """Whether :func:`hidden_at` runs ``model``'s encoder itself, with the last layer at the masks only.

    BERT and RoBERTa encoders whose attention goes through :mod:`bertdemo.models.attention_modes`,
    outside modes that record weights or queries/keys/values (those need every position); head
    ablation is fine (it acts on each query's own output).
    """
    config = model.config
    mode = attention_modes.current_mode()
    return (config.model_type in _LAYERED_TYPES and attention_modes.supports_modes(model)
            and not config.is_decoder and not getattr(config, "chunk_size_feed_forward", 0)
            and not mode.weights and not mode.qkv)


def hidden_at(model, enc: dict, rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The encoder's final hidden states at (``rows``, ``positions``) of the batch ``enc``: (N, H).

    Equal to ``model.base_model(**enc).last_hidden_state[rows, positions]`` up to float rounding
    (tests/test_fill_mask_forward.py); computed with the last layer at those positions only when
    :func:`masks_only_supported`.
    """
    base = model.base_model
    if not masks_only_supported(model):
        return base(**enc).last_hidden_state[rows, positions]
    h = base.embeddings(input_ids=enc["input_ids"], token_type_ids=enc.get("token_type_ids"))  # (B, T, H)
    mask = create_bidirectional_mask(config=base.config, inputs_embeds=h, attention_mask=enc.get("attention_mask"))
    layers = base.encoder.layer
    for layer in layers[:-1]:
        h = _layer(layer, h, mask)
    return _layer(layers[-1], h, mask, rows, positions)


def _qkv(attention, h: torch.Tensor, x: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
    """Queries (from ``x``, or ``h`` when None), keys and values (from ``h``): (..., H) each.

    The fast copy's attention modules also carry one fused query/key/value projection
    (:mod:`bertdemo.models.int8`): one int8 matmul instead of three, exactly the same numbers, used
    wherever queries, keys and values come from the same positions.
    """
    fused = getattr(attention, "bertdemo_qkv", None)
    if fused is None or x is not None:  # at the masks only: the queries' rows differ from the keys'
        return attention.query(h if x is None else x), attention.key(h), attention.value(h)
    return fused(h).chunk(3, dim=-1)


def _layer(layer, h: torch.Tensor, mask: torch.Tensor | None, rows: torch.Tensor | None = None,
           cols: torch.Tensor | None = None) -> torch.Tensor:
    """One BERT layer (``modeling_bert.BertLayer`` in eval mode) through the registered attention function.

    ``h``: (B, T, H). Without ``rows``: the layer's output (B, T, H). With (``rows``, ``cols``): its
    output at those positions only, (N, H), from keys and values of every position.
    """
    attention = layer.attention.self
    B, T, _ = h.shape
    heads, d = attention.num_attention_heads, attention.attention_head_size
    x = None if rows is None else h[rows, cols]  # (N, H) the queries' inputs
    q, k, v = _qkv(attention, h, x)
    k = k.view(B, T, heads, d).transpose(1, 2)  # (B, heads, T, d)
    v = v.view(B, T, heads, d).transpose(1, 2)
    if rows is None:
        q = q.view(B, T, heads, d).transpose(1, 2)  # (B, heads, T, d)
        residual = h
    else:  # each masked position is its own one-query sequence over its row's keys
        n = rows.numel()
        q = q.view(n, 1, heads, d).transpose(1, 2)  # (N, heads, 1, d)
        k, v = k[rows], v[rows]  # (N, heads, T, d)
        if mask is not None:  # (B, 1, T or 1, T) -> (N, 1, 1, T): the mask rows of these queries
            mask = mask[rows]
            if mask.shape[2] != 1:
                mask = mask[torch.arange(n, device=mask.device), :, cols].unsqueeze(2)
        residual = x
    out, _ = attention_modes.bertdemo_attention(attention, q, k, v, mask, scaling=attention.scaling)
    out = out.reshape(*residual.shape[:-1], -1)  # (..., H): heads concatenated
    a = layer.attention.output(out, residual)  # dense, + residual, LayerNorm
    return layer.output(layer.intermediate(a), a)  # feed-forward, + residual, LayerNorm


# --- pseudo-log-likelihood -------------------------------------------------------------------


def _splice(base: dict[str, list[int]], pos: int, new_ids: list[int]) -> dict[str, list[int]]:
    """``base`` (one encoded sequence as lists) with the token at ``pos`` replaced by ``new_ids``."""
    out = {}
    for key, values in base.items():
        fill = new_ids if key == "input_ids" else [values[pos]] * len(new_ids)
        out[key] = values[:pos] + fill + values[pos + 1:]
    return out


def _padded(loaded: LoadedModel, seqs: list[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
    """Encoded sequences (as lists) padded on the right into (B, T) tensors on the model's device.

    Padding is masked out of attention (attention_mask 0) and position ids start at 0 in every row,
    so each row's predictions are its own (equal to running it alone up to float rounding)."""
    pad = loaded.tokenizer.pad_token_id or 0
    width = max(len(s["input_ids"]) for s in seqs)
    batch = {}
    for key in seqs[0]:
        fill = pad if key == "input_ids" else 0
        batch[key] = torch.tensor([s[key] + [fill] * (width - len(s[key])) for s in seqs])  # (B, T)
    return {k: v.to(loaded.device) for k, v in batch.items()}


def _log_probs_at(loaded: LoadedModel, seqs: list[dict[str, list[int]]], positions: list[int]) -> torch.Tensor:
    """Log-softmax over the vocabulary at ``positions[i]`` of ``seqs[i]``: (N, V), batched and padded."""
    out = []
    for start in range(0, len(seqs), _BATCH):
        chunk = seqs[start:start + _BATCH]
        batch = _padded(loaded, chunk)
        rows = torch.arange(len(chunk), device=loaded.device)
        cols = torch.tensor(positions[start:start + _BATCH], device=loaded.device)
        with torch.inference_mode():
            out.append(_logits_at(loaded.model, batch, rows, cols).float().log_softmax(-1).cpu())
    return torch.cat(out)


def _shared_probs(loaded: LoadedModel, items: list[tuple[dict[str, list[int]], list[int]]]) -> list[torch.Tensor]:
    """Softmax over the vocabulary at the masks of several requests in one padded forward: (N_i, V) each."""
    enc = _padded(loaded, [base for base, _ in items])  # a lone request: no padding at all
    rows = torch.tensor([i for i, (_, pos) in enumerate(items) for _ in pos], device=loaded.device)
    cols = torch.tensor([p for _, pos in items for p in pos], device=loaded.device)
    with torch.inference_mode():
        probs = _logits_at(loaded.model, enc, rows, cols).float().softmax(-1).cpu()  # (sum N_i, V)
    return list(probs.split([len(pos) for _, pos in items]))


def pseudo_log_likelihoods(loaded: LoadedModel, base: dict[str, list[int]], pos: int,
                           words: list[list[int]]) -> list[float]:
    """PLL of each word (a list of piece ids) put in place of the token at ``pos`` of ``base``:
    sum over pieces j of log p(piece_j | the sequence with piece j masked)."""
    mask_id = loaded.tokenizer.mask_token_id
    seqs, positions, targets, owner = [], [], [], []
    for w, ids in enumerate(words):
        for j, piece in enumerate(ids):
            masked = list(ids)
            masked[j] = mask_id
            seqs.append(_splice(base, pos, masked))
            positions.append(pos + j)
            targets.append(piece)
            owner.append(w)
    if not seqs:
        return [0.0] * len(words)
    logp = _log_probs_at(loaded, seqs, positions)
    picked = logp[torch.arange(len(seqs)), torch.tensor(targets)]
    totals = [0.0] * len(words)
    for w, value in zip(owner, picked.tolist()):
        totals[w] += value
    return totals


def _check_fits(loaded: LoadedModel, base: dict[str, list[int]], extra: int, what: str) -> None:
    if len(base["input_ids"]) + extra > loaded.max_length:
        raise ValueError(
            f"{what} makes the input {len(base['input_ids']) + extra:,} tokens; {loaded.name} accepts at most "
            f"{loaded.max_length}. Shorten the text."
        )


def _whole_words(loaded: LoadedModel, base: dict[str, list[int]], pos: int, context: str, k: int) -> list[Candidate]:
    """Whole-word candidates of 1..MAX_WORD_PIECES pieces at ``pos``, ranked by PLL."""
    tokenizer = loaded.tokenizer
    mask_id = tokenizer.mask_token_id
    continuation = _continuation_ids(tokenizer)
    banned = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
    _check_fits(loaded, base, MAX_WORD_PIECES - 1, f"Searching words of {MAX_WORD_PIECES} pieces")
    found: list[list[int]] = []
    for n in range(1, MAX_WORD_PIECES + 1):
        beams: list[tuple[list[int], float]] = [([], 0.0)]
        for t in range(n):
            seqs = [_splice(base, pos, prefix + [mask_id] * (n - t)) for prefix, _ in beams]
            logp = _log_probs_at(loaded, seqs, [pos + t] * len(seqs))  # (B, V)
            allowed = _allowed(logp.exp(), context if t == 0 else AFTER_LETTERS, continuation)
            allowed[:, banned] = 0.0
            top = allowed.topk(WORD_BEAM, dim=-1)
            grown = [
                (prefix + [int(j)], score + math.log(max(float(p), 1e-30)))
                for (prefix, score), values, indices in zip(beams, top.values, top.indices)
                for p, j in zip(values.tolist(), indices.tolist())
                if p > 0
            ]
            beams = sorted(grown, key=lambda b: -b[1])[:WORD_BEAM]
        found += [prefix for prefix, _ in beams]
    words: dict[str, list[int]] = {}
    for ids in found:  # one entry per spelling (the first, most likely, segmentation)
        words.setdefault(tokenizer.decode(ids).replace(" ##", "").strip(), ids)
    texts, ids_list = list(words), list(words.values())
    scores = pseudo_log_likelihoods(loaded, base, pos, ids_list)
    ranked = sorted(zip(scores, texts, ids_list), key=lambda item: -item[0])[:k]
    out = []
    for score, text, ids in ranked:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        out.append(Candidate(" ".join(pieces), ids[0], math.exp(score), text.removeprefix("##"), pieces))
    return out


def _score_targets(loaded: LoadedModel, base: dict[str, list[int]], pos: int, words: list[str],
                   probs: torch.Tensor) -> list[TargetScore]:
    """Each target at one mask: one piece by its probability and rank, several pieces by PLL."""
    tokenizer = loaded.tokenizer
    scores = [score_target(tokenizer, w, probs) for w in words]
    multi = [s for s in scores if len(s.pieces) > 1 and tokenizer.unk_token not in s.pieces]
    if multi:
        _check_fits(loaded, base, max(len(s.pieces) for s in multi) - 1, f"The target {multi[0].word!r}")
        ids = [tokenizer.convert_tokens_to_ids(s.pieces) for s in multi]
        for s, pll in zip(multi, pseudo_log_likelihoods(loaded, base, pos, ids)):
            s.prob = math.exp(pll)
            s.message = f"{len(s.pieces)} pieces {' '.join(s.pieces)}: scored by pseudo-log-likelihood"
    return scores


def predict(
    loaded: LoadedModel,
    text: str,
    text_pair: str | None = None,
    top_k: int = 5,
    targets: list[str] | None = None,
    whole_words: bool = False,
    fast: bool = False,
) -> FillMaskResult:
    """Top-k predictions at every mask of ``text`` (sentence B in ``text_pair`` is segment 1).

    ``whole_words``: candidates at a word-start mask are whole words of 1-3 pieces ranked by PLL.
    ``fast``: run on the model's dynamic-int8 copy (CPU; probabilities differ slightly).
    """
    _validate(loaded, text, top_k)
    if fast:
        loaded = int8.fast_variant(loaded)
    words = parse_targets(targets)
    tokenizer = loaded.tokenizer
    text = normalise_masks(text, tokenizer.mask_token)
    text_pair = normalise_masks(text_pair, tokenizer.mask_token) if text_pair and text_pair.strip() else None
    enc = tokenizer(text, text_pair, return_tensors="pt", truncation=False, verbose=False,
                    return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)))
    ids = enc["input_ids"][0]  # (T,)
    if ids.numel() > loaded.max_length:
        raise ValueError(
            f"The input is {ids.numel():,} tokens; {loaded.name} accepts at most {loaded.max_length}. "
            "Shorten the text."
        )
    positions = (ids == tokenizer.mask_token_id).nonzero().flatten()
    if positions.numel() == 0:
        raise ValueError(f"No mask found: put {mask_name(tokenizer)} where a word is missing.")
    if positions.numel() > MAX_MASKS:
        raise ValueError(f"{positions.numel()} masks found; use at most {MAX_MASKS}.")
    if whole_words and positions.numel() > MAX_WHOLE_WORD_MASKS:
        raise ValueError(
            f"{positions.numel()} masks found; whole-word prediction takes at most {MAX_WHOLE_WORD_MASKS}."
        )

    contexts = _mask_contexts(tokenizer, enc, positions.tolist(), text, text_pair)
    base = {k: v[0].tolist() for k, v in enc.items() if k != "offset_mapping"}
    item = (base, positions.tolist())
    if attention_modes.is_default_mode():  # (N, V), in one forward with the requests that arrived meanwhile
        probs = _SHARED.submit(loaded.model, item, lambda items: _shared_probs(loaded, items))
    else:  # heads switched off or attention recorded (a context of this thread's own): never shared
        probs = _shared_probs(loaded, [item])[0]
    continuation = _continuation_ids(tokenizer)

    masks = []
    for i, pos in enumerate(positions.tolist()):
        ranked = _allowed(probs[i], contexts[i], continuation)  # what may be offered here
        if whole_words and contexts[i] == WORD_START:
            candidates = _whole_words(loaded, base, pos, contexts[i], int(top_k))
        else:
            top = ranked.topk(int(top_k))
            candidates = [
                Candidate(tokenizer.convert_ids_to_tokens(j), int(j), float(p), _piece_text(tokenizer, int(j)))
                for p, j in zip(top.values.tolist(), top.indices.tolist())
            ]
        scores = _score_targets(loaded, base, pos, words, ranked)
        masks.append(MaskPrediction(i, pos, candidates, scores, contexts[i]))

    method = WHOLE_WORD_METHOD if whole_words else PIECE_METHOD
    if fast:
        method = f"{method}; {FAST_METHOD}"
    return FillMaskResult(text, masks, _fill(text, text_pair, tokenizer.mask_token, masks), loaded.name, method)


def _fill(text: str, text_pair: str | None, mask_token: str, masks: list[MaskPrediction]) -> str:
    """The input with each mask replaced by its top candidate, marked **bold**."""
    fills = iter(f"**{m.candidates[0].text}**" for m in masks)
    pattern = re.compile(re.escape(mask_token))
    filled = pattern.sub(lambda _m: next(fills), text)
    if text_pair:
        filled += " / " + pattern.sub(lambda _m: next(fills), text_pair)
    return filled

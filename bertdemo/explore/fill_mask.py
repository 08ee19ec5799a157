"""Pure masked-word prediction: text with [MASK]s -> top-k candidates (and chosen targets) per mask.

Like the Hugging Face fill-mask pipeline, each mask is predicted with all masks present
(independently, not autoregressively). Unlike it, the vocabulary projection runs only at
the masked positions: the encoder's hidden states are gathered there first, so a
30k-word softmax is computed for N masks, not for every token. For BERT and RoBERTa the
encoder's last layer, too, computes only what the masks need (keys and values everywhere;
queries, output projection, layer norms and feed-forward at the masks): see
:mod:`bertdemo.models.partial_forward`.
For WordPiece models a mask's place in the text decides which pieces can stand there: a
mask that starts a word (after a space, punctuation or the start of the text) is never
offered a ``##`` continuation piece, and a mask glued to letters (``play[MASK]``) is
offered only ``##`` pieces; a mask glued to another mask (``[MASK][MASK]``) stays unfiltered. Probabilities
stay the model's own (softmax over the whole vocabulary).

Words the tokenizer splits into several pieces ("tokenization" -> token ##ization) are
scored honestly by pseudo-log-likelihood, and whole-word candidates of 1-3 pieces are ranked by
it when asked (:mod:`bertdemo.explore.pll`).

A left-to-right model (a Pretrain run with objective "ltr", ``BertLMHeadModel``) answers each mask from the
words before it only: its prediction for a mask is its output at the position before the mask (the next-word
prediction there), which the causal mask keeps blind to the mask and every word after it. Scores that need a
masked LM (pseudo-log-likelihood: whole words, targets of several pieces) are not offered for it.

Given the app's :class:`~bertdemo.models.batching.MicroBatcher`, requests that arrive together on
one model share one padded forward pass; each still gets exactly its own predictions. ``fast=True``
runs the same steps on the model's dynamic-int8 copy (:mod:`bertdemo.models.int8`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from bertdemo.explore import pll
from bertdemo.explore.encoding import check_chars, normalise_pair, pad_batch, parse_word_list, word_pieces
from bertdemo.explore.messages import no_head_message
from bertdemo.limits import MAX_MASKS, MAX_TARGET_CHARS, MAX_TARGETS, MAX_TOP_K, MAX_WHOLE_WORD_MASKS
from bertdemo.locks import pieces_of, tokenize
from bertdemo.models import attention_modes, int8
from bertdemo.models.batching import MicroBatcher
from bertdemo.models.causal import LEFT_TO_RIGHT_NOTE, is_left_to_right, predicting_positions
from bertdemo.models.partial_forward import head_logits, hidden_at
from bertdemo.models.store import LoadedModel
from bertdemo.pretrain.masking import (  # the contexts are part of this module's answers
    AFTER_LETTERS,
    AFTER_MASK,
    WORD_START,
    allowed_pieces,
    continuation_ids,
    mask_contexts,
)
from bertdemo.request_budget import WorkBudget, sequence_gflop

PIECE_METHOD = "one vocabulary piece per mask: the model's softmax over its whole vocabulary"
PLL_METHOD = (
    "pseudo-log-likelihood (Salazar et al. 2020): the word's pieces replace the mask, each piece is "
    "masked in turn and the log-probabilities are summed; shown as exp(PLL)"
)
WHOLE_WORD_METHOD = (
    f"whole words of 1–{pll.MAX_WORD_PIECES} pieces: a beam over the top pieces for 1, 2 and "
    f"{pll.MAX_WORD_PIECES} masks, ranked by {PLL_METHOD}"
)
FAST_METHOD = f"fast mode: {int8.PRECISION}; probabilities differ slightly from full precision (float32)"

# Where a mask stands in its text; decides which WordPiece pieces may fill it.


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
    """All masks of one input (``text``, ``text_pair`` as the model read them) and each mask's top choice."""

    text: str
    masks: list[MaskPrediction]
    filled: list[str]  # per mask, in order: how its top candidate reads in the sentence
    model_name: str
    method: str = PIECE_METHOD
    text_pair: str | None = None
    mask_token: str = "[MASK]"
    # with keep_tensors: the full-vocabulary softmax (N, V) and the final hidden states (N, H) at the masks
    probs: torch.Tensor | None = field(default=None, repr=False)
    hidden: torch.Tensor | None = field(default=None, repr=False)
    note: str = ""  # how this model reads the sentence, when it is not a masked LM (a left-to-right model)


def mask_name(tokenizer) -> str:
    """How to name the mask to the user: "[MASK]", or "[MASK] (or <mask>)" for other mask tokens."""
    return "[MASK]" if tokenizer.mask_token == "[MASK]" else f"[MASK] (or {tokenizer.mask_token})"


def parse_targets(words: str | list[str] | None) -> list[str]:
    """Non-empty target words (a comma-separated string or a list), bounded: at most MAX_TARGETS, each
    at most MAX_TARGET_CHARS characters."""
    words = parse_word_list(words)
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
    check_chars(text)
    if not 1 <= int(top_k) <= MAX_TOP_K:
        raise ValueError(f"Top-k must be between 1 and {MAX_TOP_K}.")


def _piece_text(tokenizer, token_id: int) -> str:
    """How a single vocabulary piece reads in running text ("##ing" -> "ing", "Ġcat" -> "cat")."""
    token = tokenizer.convert_ids_to_tokens(token_id)
    if token.startswith("##"):  # WordPiece continuation: convert_tokens_to_string keeps the marker
        return token[2:]
    return tokenizer.convert_tokens_to_string([token]).strip()


@lru_cache(maxsize=16)
def _special_ids(tokenizer) -> torch.Tensor:
    """Ids of the tokenizer's special tokens ([CLS], [SEP], [PAD], [MASK], [UNK]): never a word for a blank."""
    return torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)


_mask_contexts = mask_contexts  # one rule for Fill-Mask and the pretraining probes (bertdemo.pretrain.masking)


def _allowed(probs: torch.Tensor, context: str, continuation: torch.Tensor,
             specials: torch.Tensor | None = None) -> torch.Tensor:
    """What may be offered at a blank: the pieces that can stand in ``context``
    (:func:`~bertdemo.pretrain.masking.allowed_pieces`), never a special token (a left-to-right model's next
    word is often [SEP]; it is no word); a blank glued to another blank stays unfiltered."""
    out = allowed_pieces(probs, context, continuation)
    if specials is None or not specials.numel() or context == AFTER_MASK:
        return out
    out = out.clone() if out is probs else out
    out[..., specials] = 0.0
    return out


def score_target(tokenizer, word: str, probs: torch.Tensor) -> TargetScore:
    """Probability and rank of a one-piece ``word`` at one mask (``probs``: (V,)).

    Words of several pieces get a message here; :func:`predict` scores them by PLL.
    """
    pieces = word_pieces(tokenizer, word)
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


def _shared_forward(loaded: LoadedModel, items: list[tuple[dict[str, list[int]], list[int]]]
                    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The masks of several requests in one padded forward: per request, the softmax over the
    vocabulary (N_i, V, on the CPU) and the final hidden states (N_i, H, on the model's device) at its masks."""
    enc = pad_batch([base for base, _ in items], loaded.tokenizer.pad_token_id, loaded.device)  # one: no padding
    rows = torch.tensor([i for i, (_, pos) in enumerate(items) for _ in pos], device=loaded.device)
    cols = torch.tensor([p for _, pos in items for p in pos], device=loaded.device)
    with torch.inference_mode():
        hidden = hidden_at(loaded.model, enc, rows, cols)  # (sum N_i, H)
        probs = head_logits(loaded.model, hidden, enc, rows, cols).float().softmax(-1).cpu()  # (sum N_i, V)
    sizes = [len(pos) for _, pos in items]
    return list(zip(probs.split(sizes), hidden.split(sizes)))  # hidden: views on the device, no copy


def _whole_words(loaded: LoadedModel, base: dict[str, list[int]], pos: int, context: str, k: int,
                 budget: WorkBudget) -> list[Candidate]:
    """Whole-word candidates of 1..MAX_WORD_PIECES pieces at ``pos``, ranked by PLL."""
    tokenizer = loaded.tokenizer
    continuation = continuation_ids(tokenizer)
    specials = _special_ids(tokenizer)
    ranked = pll.whole_words(loaded, base, pos, k, lambda p: _allowed(p, context, continuation, specials),
                             lambda p: _allowed(p, AFTER_LETTERS, continuation, specials), budget)
    out = []
    for score, text, ids in ranked:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        out.append(Candidate(" ".join(pieces), ids[0], math.exp(score), text.removeprefix("##"), pieces))
    return out


def _score_targets(loaded: LoadedModel, base: dict[str, list[int]], pos: int, words: list[str],
                   probs: torch.Tensor, budget: WorkBudget) -> list[TargetScore]:
    """Each target at one mask: one piece by its probability and rank, several pieces by PLL."""
    tokenizer = loaded.tokenizer
    scores = [score_target(tokenizer, w, probs) for w in words]
    if is_left_to_right(loaded.model):  # pseudo-log-likelihood masks each piece in turn: a masked LM's score
        return scores
    multi = [s for s in scores if len(s.pieces) > 1 and tokenizer.unk_token not in s.pieces]
    if multi:
        plls = pll.piece_plls(loaded, base, pos, [s.pieces for s in multi], f"The target {multi[0].word!r}", budget)
        for s, value in zip(multi, plls):
            s.prob = math.exp(value)
            s.message = f"{len(s.pieces)} pieces {' '.join(s.pieces)}: scored by pseudo-log-likelihood"
    return scores


def _plan_extra_passes(loaded: LoadedModel, length: int, words: list[str], contexts: list[str],
                       whole_words: bool, budget: WorkBudget) -> None:
    """Count the passes PLL and the whole-word search will run, and refuse them up front when too costly."""
    pieces = [len(pieces_of(loaded.tokenizer, w)) for w in words]
    per_mask = sum(n for n in pieces if n > 1)  # one pass per piece of each several-piece target
    passes = per_mask * len(contexts)
    if whole_words:
        passes += pll.WHOLE_WORD_PASSES * sum(1 for c in contexts if c == WORD_START)
    if passes:
        longest = length + max([pll.MAX_WORD_PIECES] + pieces)  # a spliced word lengthens the sequence
        budget.check_plan(passes, passes * sequence_gflop(loaded.model.config, longest), loaded.name)


def predict(
    loaded: LoadedModel,
    text: str,
    text_pair: str | None = None,
    top_k: int = 5,
    targets: str | list[str] | None = None,
    whole_words: bool = False,
    fast: bool = False,
    *,
    batcher: MicroBatcher | None = None,
    keep_tensors: bool = False,
    budget: WorkBudget | None = None,
    remember: bool = True,
) -> FillMaskResult:
    """Top-k predictions at every mask of ``text`` (sentence B in ``text_pair`` is segment 1).

    ``whole_words``: candidates at a word-start mask are whole words of 1-3 pieces ranked by PLL.
    ``fast``: run on the model's dynamic-int8 copy (CPU; probabilities differ slightly).
    ``batcher``: share the forward with the requests that arrive meanwhile (outside attention modes);
    None runs this request alone. ``keep_tensors``: keep the masks' full-vocabulary softmax (N, V,
    before the context filter) in ``result.probs`` and final hidden states (N, H) in ``result.hidden``.
    ``budget``: what the extra passes (PLL, whole words) may cost; planned before they run, with a
    deadline between batches (default: the server's per-request allowance, from now).

    ``remember``: a plain top-k question (no target words, no whole words: one forward, no extra passes) keeps
    its answer with the model (its bounded answers cache, keyed by its weights and every input above) and is
    answered from there when asked again — no forward, and asked by several requests at once, computed once.
    Never with ``keep_tensors`` or inside an attention mode (heads off, recorded). A question with extra passes
    is always computed by its own request, within its own budget, deadline and client-gone stop.
    """
    if not remember or keep_tensors or not attention_modes.is_default_mode() or whole_words \
            or parse_targets(targets):
        return _predict(loaded, text, text_pair, top_k, targets, whole_words, fast, batcher, keep_tensors, budget)
    # the same link opened by a class: one forward, then each phone gets the model's remembered answer
    question = ("fill_mask", text, text_pair or "", int(top_k), bool(fast))
    return loaded.remember(question, lambda: _predict(loaded, text, text_pair, top_k, targets, whole_words, fast,
                                                      batcher, False, budget))


def _predict(loaded: LoadedModel, text: str, text_pair: str | None, top_k: int, targets: str | list[str] | None,
             whole_words: bool, fast: bool, batcher: MicroBatcher | None, keep_tensors: bool,
             budget: WorkBudget | None) -> FillMaskResult:
    budget = budget or WorkBudget()
    _validate(loaded, text, top_k)
    if fast:
        loaded = int8.fast_variant(loaded)
    words = parse_targets(targets)
    tokenizer = loaded.tokenizer
    text, text_pair = normalise_pair(tokenizer, text, text_pair)
    enc = tokenize(tokenizer, text, text_pair, return_tensors="pt", truncation=False, verbose=False,
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
    left_to_right = is_left_to_right(loaded.model)
    if left_to_right and whole_words:
        raise ValueError(f"Whole-word prediction ranks words by pseudo-log-likelihood, a masked LM's score; {loaded.name} "
                         "is a left-to-right model: turn whole words off.")
    if not left_to_right:
        _plan_extra_passes(loaded, ids.numel(), words, contexts, whole_words, budget)
    base = {k: v[0].tolist() for k, v in enc.items() if k != "offset_mapping"}
    # the positions whose outputs predict the masks: the masks themselves, or the one before each (left-to-right)
    item = (base, predicting_positions(loaded.model, positions.tolist()))
    if batcher is not None and attention_modes.is_default_mode():  # (N, V), with the requests that came meanwhile
        probs, hidden = batcher.submit(loaded.model, item, lambda items: _shared_forward(loaded, items))
    else:  # alone, or heads switched off / attention recorded (a context of this thread's own): never shared
        probs, hidden = _shared_forward(loaded, [item])[0]
    continuation, specials = continuation_ids(tokenizer), _special_ids(tokenizer)

    masks = []
    for i, pos in enumerate(positions.tolist()):
        ranked = _allowed(probs[i], contexts[i], continuation, specials)  # what may be offered here
        if whole_words and contexts[i] == WORD_START:
            candidates = _whole_words(loaded, base, pos, contexts[i], int(top_k), budget)
        else:
            top = ranked.topk(int(top_k))
            candidates = [
                Candidate(tokenizer.convert_ids_to_tokens(j), int(j), float(p), _piece_text(tokenizer, int(j)))
                for p, j in zip(top.values.tolist(), top.indices.tolist())
            ]
        scores = _score_targets(loaded, base, pos, words, ranked, budget)
        masks.append(MaskPrediction(i, pos, candidates, scores, contexts[i]))

    method = WHOLE_WORD_METHOD if whole_words else PIECE_METHOD
    if fast:
        method = f"{method}; {FAST_METHOD}"
    return FillMaskResult(text, masks, [m.candidates[0].text for m in masks], loaded.name, method, text_pair,
                          tokenizer.mask_token, *((probs, hidden) if keep_tensors else (None, None)),
                          note=LEFT_TO_RIGHT_NOTE if left_to_right else "")

"""Words of several pieces, scored honestly: pseudo-log-likelihood and the whole-word beam.

A word the tokenizer splits ("tokenization" -> token ##ization) has no single probability at one
mask. Its pseudo-log-likelihood (Salazar et al. 2020, "Masked Language Model Scoring") puts the
word's pieces in place of the mask, masks each piece in turn and sums the log-probabilities of
the pieces. The same score ranks whole-word candidates of 1..MAX_WORD_PIECES pieces: a beam over
the top pieces for 1, 2 and 3 masks, then rescored by PLL.

Sequences travel as dicts of lists (one encoded sequence each); they are padded into batches of
at most PLL_BATCH and the model runs its last layer only at the scored positions
(:func:`bertdemo.models.partial_forward.logits_at`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from bertdemo.explore.encoding import pad_batch
from bertdemo.models.partial_forward import logits_at
from bertdemo.models.store import LoadedModel
from bertdemo.request_budget import WorkBudget

MAX_WORD_PIECES = 3  # whole-word candidates have 1..3 pieces
WORD_BEAM = 8  # partial words kept per step of the whole-word beam
PLL_BATCH = 32  # sequences per forward pass when scoring

Encoded = dict[str, list[int]]  # one encoded sequence, as lists
PieceFilter = Callable[[torch.Tensor], torch.Tensor]  # probs (B, V) -> probs with disallowed pieces at 0


WHOLE_WORD_PASSES = 1 + 9 + 17 + WORD_BEAM * 3 * 2  # the beam's sequences for 1, 2, 3 pieces + the PLL rescoring


def splice(base: Encoded, pos: int, new_ids: list[int]) -> Encoded:
    """``base`` with the token at ``pos`` replaced by ``new_ids``."""
    out = {}
    for key, values in base.items():
        fill = new_ids if key == "input_ids" else [values[pos]] * len(new_ids)
        out[key] = values[:pos] + fill + values[pos + 1:]
    return out


def log_probs_at(loaded: LoadedModel, seqs: list[Encoded], positions: list[int],
                 budget: WorkBudget | None = None) -> torch.Tensor:
    """Log-softmax over the vocabulary at ``positions[i]`` of ``seqs[i]``: (N, V), batched and padded."""
    out = []
    for start in range(0, len(seqs), PLL_BATCH):
        chunk = seqs[start:start + PLL_BATCH]
        if budget is not None:
            budget.check_time(len(chunk))
        batch = pad_batch(chunk, loaded.tokenizer.pad_token_id, loaded.device)
        rows = torch.arange(len(chunk), device=loaded.device)
        cols = torch.tensor(positions[start:start + PLL_BATCH], device=loaded.device)
        with torch.inference_mode():
            out.append(logits_at(loaded.model, batch, rows, cols).float().log_softmax(-1).cpu())
    return torch.cat(out)


def pseudo_log_likelihoods(loaded: LoadedModel, base: Encoded, pos: int, words: list[list[int]],
                           budget: WorkBudget | None = None) -> list[float]:
    """PLL of each word (a list of piece ids) put in place of the token at ``pos`` of ``base``:
    sum over pieces j of log p(piece_j | the sequence with piece j masked)."""
    mask_id = loaded.tokenizer.mask_token_id
    seqs, positions, targets, owner = [], [], [], []
    for w, ids in enumerate(words):
        for j, piece in enumerate(ids):
            masked = list(ids)
            masked[j] = mask_id
            seqs.append(splice(base, pos, masked))
            positions.append(pos + j)
            targets.append(piece)
            owner.append(w)
    if not seqs:
        return [0.0] * len(words)
    logp = log_probs_at(loaded, seqs, positions, budget)
    picked = logp[torch.arange(len(seqs)), torch.tensor(targets)]
    totals = [0.0] * len(words)
    for w, value in zip(owner, picked.tolist()):
        totals[w] += value
    return totals


def check_fits(loaded: LoadedModel, base: Encoded, extra: int, what: str) -> None:
    """Refuse when ``extra`` more tokens would make ``base`` longer than the model accepts."""
    if len(base["input_ids"]) + extra > loaded.max_length:
        raise ValueError(
            f"{what} makes the input {len(base['input_ids']) + extra:,} tokens; {loaded.name} accepts at most "
            f"{loaded.max_length}. Shorten the text."
        )


def piece_plls(loaded: LoadedModel, base: Encoded, pos: int, pieces: list[list[str]], what: str,
               budget: WorkBudget | None = None) -> list[float]:
    """PLL of each word given as its pieces (multi-piece targets); ``what`` names the longest in errors."""
    check_fits(loaded, base, max(len(p) for p in pieces) - 1, what)
    ids = [loaded.tokenizer.convert_tokens_to_ids(p) for p in pieces]
    return pseudo_log_likelihoods(loaded, base, pos, ids, budget)


def whole_words(loaded: LoadedModel, base: Encoded, pos: int, k: int, first: PieceFilter,
                rest: PieceFilter, budget: WorkBudget | None = None) -> list[tuple[float, str, list[int]]]:
    """The ``k`` best whole words of 1..MAX_WORD_PIECES pieces at ``pos``: (PLL, spelling, piece ids).

    ``first`` and ``rest`` zero the pieces that may not start the word or continue it.
    """
    tokenizer = loaded.tokenizer
    mask_id = tokenizer.mask_token_id
    banned = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
    check_fits(loaded, base, MAX_WORD_PIECES - 1, f"Searching words of {MAX_WORD_PIECES} pieces")
    found: list[list[int]] = []
    for n in range(1, MAX_WORD_PIECES + 1):
        beams: list[tuple[list[int], float]] = [([], 0.0)]
        for t in range(n):
            seqs = [splice(base, pos, prefix + [mask_id] * (n - t)) for prefix, _ in beams]
            logp = log_probs_at(loaded, seqs, [pos + t] * len(seqs), budget)  # (B, V)
            allowed = (first if t == 0 else rest)(logp.exp())
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
    scores = pseudo_log_likelihoods(loaded, base, pos, ids_list, budget)
    return sorted(zip(scores, texts, ids_list), key=lambda item: -item[0])[:k]

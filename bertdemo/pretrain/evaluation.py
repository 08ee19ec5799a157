"""What a run reports about its model, from the model's own logits: the held-out questions and the probes.

* :func:`answer_questions`: the fixed held-out [MASK]s (:mod:`bertdemo.pretrain.heldout`) -> loss,
  top-1 and top-5 accuracy, and the median rank of the true token among all vocabulary entries.
* :func:`probe_answers`: each probe sentence's top-5 at its first [MASK] and the rank of the word
  the probe expects there.

Rank 1 is the model's first guess; a rank counts the entries whose logit is strictly higher.
Both run the model in eval mode (restored afterwards) under ``torch.inference_mode``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from bertdemo.pretrain.heldout import IGNORE_INDEX, HeldoutQuestions
from bertdemo.pretrain.hardware import autocast
from bertdemo.pretrain.masking import allowed_pieces, continuation_lookup, mask_contexts

TOKENS_PER_BATCH = 4_096  # held-out tokens per forward (32 blocks of 128)


@dataclass(frozen=True)
class ProbeAnswer:
    """One probe at one evaluation."""

    top5: list[tuple[str, float]]  # (token, probability) at the probe's first [MASK]
    rank: int | None  # rank of the expected word (1 = first guess); None when no word is expected


def ranks_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(M,) rank of each target among its row of (M, V) logits: 1 + entries with a strictly higher logit."""
    true = logits.gather(1, targets[:, None])  # (M, 1)
    return (logits > true).sum(dim=1) + 1


@torch.inference_mode()
def answer_questions(model, questions: HeldoutQuestions | tuple[torch.Tensor, torch.Tensor], device: torch.device,
                     bf16: bool = False, should_stop: Callable[[], bool] = lambda: False) -> dict[str, float] | None:
    """Loss (nats), top-1 and top-5 accuracy and median rank of the true token over the held-out questions.

    ``questions``: a :class:`HeldoutQuestions` or its (input_ids, labels) already on ``device``.
    ``should_stop`` is asked between batches: True ends the evaluation at once, returning None."""
    if isinstance(questions, HeldoutQuestions):
        input_ids = torch.from_numpy(questions.input_ids).to(device)
        labels = torch.from_numpy(questions.labels).to(device)
    else:
        input_ids, labels = questions
    rows = max(1, TOKENS_PER_BATCH // input_ids.shape[1])
    was_training = model.training
    model.eval()
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    ranks = []
    try:
        for start in range(0, len(input_ids), rows):
            if should_stop():
                return None
            ids, y = input_ids[start : start + rows], labels[start : start + rows]  # (b, T)
            asked = y != IGNORE_INDEX
            with autocast(device, bf16):
                hidden = model.bert(input_ids=ids).last_hidden_state  # (b, T, H)
                logits = model.cls.predictions(hidden[asked])  # (m, V)
            logits, target = logits.float(), y[asked]
            loss_sum += F.cross_entropy(logits, target, reduction="sum").double()
            ranks.append(ranks_of(logits, target))
    finally:
        model.train(was_training)
    rank = torch.cat(ranks).double()
    n = max(1, len(rank))
    return {"loss": loss_sum.item() / n, "top1": (rank == 1).sum().item() / n, "top5": (rank <= 5).sum().item() / n,
            "median_rank": rank.quantile(0.5).item()}  # the middle two averaged when the count is even


@torch.inference_mode()
def probe_answers(model, tokenizer, probes: list[tuple[str, str]], device: torch.device) -> list[ProbeAnswer]:
    """Each (sentence, expected word) probe's top-5 at its first [MASK] and the expected word's rank
    (None when the word is "" or not one vocabulary entry). ValueError for a sentence with no [MASK]."""
    was_training = model.training
    model.eval()
    answers = []
    try:
        continuation = continuation_lookup(tokenizer).nonzero().flatten().to(device)
        for text, expected in probes:
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=model.config.max_position_embeddings,
                            return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)))
            ids = enc["input_ids"].to(device)  # (1, T)
            where = (ids[0] == tokenizer.mask_token_id).nonzero().flatten()
            if len(where) == 0:
                raise ValueError(f"The probe {text!r} has no [MASK].")
            hidden = model.bert(input_ids=ids, attention_mask=enc["attention_mask"].to(device)).last_hidden_state
            logits = model.cls.predictions(hidden[0, where[:1]]).float()  # (1, V)
            # what Fill-Mask would offer there: no ## piece at a word start (the rank counts those words only)
            context = mask_contexts(tokenizer, enc, where[:1].tolist(), text)[0]
            probs = allowed_pieces(logits.softmax(-1)[0], context, continuation)  # (V,) as Fill-Mask shows them
            shown = allowed_pieces(torch.ones_like(logits), context, continuation).bool()
            logits = logits.masked_fill(~shown, float("-inf"))
            top = probs.topk(5)
            expected_id = expected_token_id(tokenizer, expected)
            rank = None if expected_id is None else int(ranks_of(logits, torch.tensor([expected_id], device=device))[0])
            answers.append(ProbeAnswer([(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 5))
                                        for p, i in zip(top.values.cpu(), top.indices.cpu())], rank))
    finally:
        model.train(was_training)
    return answers


def expected_token_id(tokenizer, word: str) -> int | None:
    """The vocabulary id of ``word`` as the tokenizer writes it (lower-cased by an uncased one); None
    when it is empty or not a single entry."""
    word = (word or "").strip()
    if not word:
        return None
    pieces = tokenizer.tokenize(word)
    return tokenizer.convert_tokens_to_ids(pieces[0]) if len(pieces) == 1 else None

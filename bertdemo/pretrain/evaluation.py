"""What a run reports about its model, from the model's own logits: the held-out questions and the probes.

* :func:`answer_questions`: the fixed held-out [MASK]s (:mod:`bertdemo.pretrain.heldout`) -> loss,
  top-1 and top-5 accuracy, and the median rank of the true token among all vocabulary entries.
* :func:`probe_answers`: each probe sentence's top-5 at its first [MASK] and the rank of the word
  the probe expects there.
* :func:`evaluate_heldout`: the training recipe's held-out loss / accuracy (+ NSP), with fixed masks.
* :func:`predict_masks`: the learner's probe: top-k at each [MASK], as Fill-Mask would offer them.

A left-to-right run's model answers the same questions from the words before each one only: the block
with its true words (no [MASK]), each asked word predicted from the output at the position before it
(:func:`asked_logits`). So both objectives are scored on the same held-out words — the masked LM with
15 % of the words hidden at once and both sides of each visible, the left-to-right LM from every word
before it and none after — and their losses stand on one scale (nats per asked word).

Rank 1 is the model's first guess; a rank counts the entries whose logit is strictly higher.
Both run the model in eval mode (restored afterwards) under ``torch.inference_mode``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from bertdemo.models.causal import is_left_to_right, predicting_positions
from bertdemo.pretrain.hardware import autocast
from bertdemo.pretrain.heldout import IGNORE_INDEX, HeldoutQuestions
from bertdemo.pretrain.masking import allowed_pieces, continuation_lookup, mask_contexts

if TYPE_CHECKING:
    from bertdemo.pretrain.config import TrainConfig
    from bertdemo.pretrain.model import BatchMaker, BertPretrainModel, PretrainObjective

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


def asked_logits(model, ids: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(m, V) logits and (m,) true ids at the asked positions of (b, T) questions ``ids`` / ``y``.

    A masked LM reads the questions as they are ([MASK] at the asked positions). A left-to-right LM reads the
    blocks with their true words and predicts each asked word from its output one position before it: the
    causal mask hides the word itself and everything after it, so nothing is masked."""
    asked = y != IGNORE_INDEX  # (b, T)
    if not is_left_to_right(model):
        hidden = model.bert(input_ids=ids).last_hidden_state  # (b, T, H)
        return model.cls.predictions(hidden[asked]), y[asked]
    if asked[:, 0].any():
        raise ValueError("A left-to-right model cannot be asked the first token of a block.")
    words = torch.where(asked, y, ids)  # (b, T) the true blocks
    hidden = model.bert(input_ids=words, use_cache=False).last_hidden_state  # (b, T, H)
    before = asked[:, 1:]  # (b, T-1): True at t - 1 where t is asked
    return model.cls.predictions(hidden[:, :-1][before]), y[:, 1:][before]


@torch.inference_mode()
def answer_questions(model, questions: HeldoutQuestions | tuple[torch.Tensor, torch.Tensor], device: torch.device,
                     bf16: bool = False, should_stop: Callable[[], bool] = lambda: False) -> dict[str, float] | None:
    """Loss (nats), top-1 and top-5 accuracy and median rank of the true token over the held-out questions
    (a left-to-right model: each asked word from the words before it, :func:`asked_logits`).

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
            with autocast(device, bf16):
                logits, target = asked_logits(model, ids, y)  # (m, V), (m,)
            logits = logits.float()
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
            hidden = model.bert(input_ids=ids, attention_mask=enc["attention_mask"].to(device),
                                use_cache=False).last_hidden_state
            # a left-to-right model's answer for the [MASK] is its output at the position before it
            logits = model.cls.predictions(hidden[0, predicting_positions(model, where[:1])]).float()  # (1, V)
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


@torch.inference_mode()
def evaluate_heldout(objective: PretrainObjective, heldout: torch.Tensor, make_batch: BatchMaker, cfg: TrainConfig,
                     device: torch.device, bf16: bool = False,
                     should_stop: Callable[[], bool] = lambda: False) -> dict[str, float] | None:
    """Held-out MLM loss / accuracy (+ NSP) with the same masks at every evaluation (fixed seed).

    ``should_stop`` is asked between batches: when it answers True the evaluation ends at once
    and returns None (a Stop never waits for a long evaluation)."""
    model = objective.model
    was_training = model.training
    model.eval()
    generator = torch.Generator(device=device)
    generator.manual_seed(cfg.system.seed + 999_983)
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device)
    count = torch.zeros((), device=device)
    nsp_loss_sum, nsp_correct, nsp_count = torch.zeros((), device=device), torch.zeros((), device=device), 0
    try:
        for i in range(cfg.monitor.eval_batches):
            if should_stop():
                return None
            start = (i * cfg.optim.batch_size) % len(heldout)
            start = 0 if len(heldout) - start < 2 else start  # NSP pairs need two rows
            blocks = heldout[start : start + cfg.optim.batch_size]
            batch = make_batch(blocks, generator)
            with autocast(device, bf16):
                out = objective(**batch)
            y = out["mlm_labels"]
            valid = y != IGNORE_INDEX
            loss_sum += F.cross_entropy(out["mlm_logits"], y, ignore_index=IGNORE_INDEX, reduction="sum")
            correct += ((out["mlm_logits"].argmax(-1) == y) & valid).sum()
            count += valid.sum()
            if "nsp_logits" in out:
                target = batch["next_sentence_label"]  # (B,)
                nsp_loss_sum += out["nsp_loss"] * len(target)
                nsp_correct += (out["nsp_logits"].argmax(-1) == target).sum()
                nsp_count += len(target)
    finally:
        model.train(was_training)
    n = max(1.0, count.item())
    result = {"loss": loss_sum.item() / n, "acc": correct.item() / n}
    if nsp_count:
        result.update(nsp_loss=nsp_loss_sum.item() / nsp_count, nsp_acc=nsp_correct.item() / nsp_count)
    return result


@torch.inference_mode()
def predict_masks(model: BertPretrainModel, tokenizer, text: str, device: torch.device, top_k: int = 5
                  ) -> list[list[tuple[str, float]]]:
    """Top-k (token, probability) at each [MASK] of `text`, in eval mode (restored afterwards)."""
    enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=model.config.max_position_embeddings,
                    return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)))
    input_ids = enc["input_ids"].to(device)  # (1, T)
    positions = (input_ids[0] == tokenizer.mask_token_id).nonzero().flatten()  # (M,)
    if len(positions) == 0:
        raise ValueError("The probe sentence must contain at least one [MASK].")
    was_training = model.training
    model.eval()
    try:
        hidden = model.bert(input_ids=input_ids, attention_mask=enc["attention_mask"].to(device),
                            use_cache=False).last_hidden_state
        at = predicting_positions(model, positions)  # a left-to-right model: the position before each [MASK]
        probs = model.cls.predictions(hidden[0, at]).float().softmax(-1)  # (M, V)
        # what Fill-Mask would offer at each mask: no ## piece at a word start, only ## pieces glued to letters
        continuation = continuation_lookup(tokenizer).nonzero().flatten().to(device)
        probs = torch.stack([allowed_pieces(p, context, continuation)
                             for p, context in zip(probs, mask_contexts(tokenizer, enc, positions.tolist(), text))])
        top = probs.topk(top_k, dim=-1)
    finally:
        model.train(was_training)
    return [
        [(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 5)) for p, i in zip(vals, idx)]
        for vals, idx in zip(top.values.cpu(), top.indices.cpu())
    ]

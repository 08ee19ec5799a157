"""What a run reports about its model: held-out masked-LM loss / accuracy (+ NSP) and the probe's
top-k guesses at each [MASK].
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.hardware import autocast
from bertdemo.pretrain.masking import IGNORE_INDEX
from bertdemo.pretrain.model_build import BertPretrainModel
from bertdemo.pretrain.objective import BatchMaker, PretrainObjective


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
    enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=model.config.max_position_embeddings)
    input_ids = enc["input_ids"].to(device)  # (1, T)
    positions = (input_ids[0] == tokenizer.mask_token_id).nonzero().flatten()  # (M,)
    if len(positions) == 0:
        raise ValueError("The probe sentence must contain at least one [MASK].")
    was_training = model.training
    model.eval()
    try:
        hidden = model.bert(input_ids=input_ids, attention_mask=enc["attention_mask"].to(device)).last_hidden_state
        probs = model.cls.predictions(hidden[0, positions]).float().softmax(-1)  # (M, V)
        top = probs.topk(top_k, dim=-1)
    finally:
        model.train(was_training)
    return [
        [(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 5)) for p, i in zip(vals, idx)]
        for vals, idx in zip(top.values.cpu(), top.indices.cpu())
    ]

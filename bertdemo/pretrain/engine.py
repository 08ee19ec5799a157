"""The compute of pretraining: device choice, the BERT model, the MLM(+NSP) objective with a
sparse MLM head, AdamW with warmup/decay, held-out evaluation and probe predictions.

The sparse head runs the vocabulary projection (H -> V, the most expensive matmul of a
small BERT) only at the masked positions: hidden states are gathered at those positions
first, then passed through ``model.cls.predictions``. In training the projection and the
cross-entropy are fused (`fused_ce`). The objective is an ``nn.Module`` so DDP and
``torch.compile`` see a single forward.
"""

from __future__ import annotations

import contextlib
import os

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertForMaskedLM, BertForPreTraining

from bertdemo.model_init import MODEL_INIT_LOCK
from bertdemo.pretrain.config import TrainConfig, bert_config
from bertdemo.pretrain.fused_ce import Workspace, linear_cross_entropy
from bertdemo.pretrain.masking import IGNORE_INDEX, MaskedBatch, make_nsp_pairs, mask_tokens

BertPretrainModel = BertForMaskedLM | BertForPreTraining


def cpu_threads(requested: int = 0, world_size: int = 1) -> int:
    """CPU threads for training: `requested`, or the cores shared by the processes minus one for the UI."""
    if requested > 0:
        return requested
    cores = os.cpu_count() or 1
    return max(1, cores // max(1, world_size) - (1 if world_size == 1 else 0))


def build_model(cfg: TrainConfig, tokenizer) -> BertPretrainModel:
    """A freshly initialised BertForMaskedLM (or BertForPreTraining with NSP) for the run's shape,
    or, with `cfg.init_from`, the pretrained encoder of that folder plus a new head."""
    if cfg.init_from:
        model = warm_start_model(cfg.init_from, cfg.nsp)
    else:
        config = bert_config(cfg, vocab_size=len(tokenizer))
        config.pad_token_id = tokenizer.pad_token_id
        with MODEL_INIT_LOCK:
            model = (BertForPreTraining if cfg.nsp else BertForMaskedLM)(config)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"The model's vocabulary has {model.config.vocab_size} entries, the tokenizer "
                         f"{len(tokenizer)}: warm-start from a model with the uncased BERT vocabulary.")
    apply_freeze(model, cfg.train_layers, cfg.freeze_embeddings)
    return model


def warm_start_model(path: str, nsp: bool = False) -> BertPretrainModel:
    """The encoder weights of the model folder `path` (e.g. a bare ``BertModel``) with an MLM (+NSP)
    head: kept when the folder has one, else new, its decoder tied to the word embeddings."""
    model_cls = BertForPreTraining if nsp else BertForMaskedLM
    config = BertConfig.from_pretrained(path)
    config.architectures = [model_cls.__name__]
    config.tie_word_embeddings = True  # decoder weight = word embeddings (original BERT)
    with MODEL_INIT_LOCK:
        model = model_cls.from_pretrained(path, config=config)
        model.tie_weights()
    return model


def apply_freeze(model: BertPretrainModel, train_layers: int = -1, freeze_embeddings: bool = False) -> None:
    """Train only part of the model: `train_layers` = k >= 0 keeps the embeddings and all but the top
    k encoder layers fixed (the MLM head always trains; its decoder follows the embeddings, to which it
    is tied); `freeze_embeddings` fixes only the embeddings. -1 / False = everything trains."""
    if train_layers < 0 and not freeze_embeddings:
        return
    bert = model.bert
    frozen: list[nn.Module] = [bert.embeddings]
    if train_layers >= 0:
        n = len(bert.encoder.layer)
        frozen += list(bert.encoder.layer[: n - train_layers])
    for module in frozen:
        module.requires_grad_(False)


def trainable_names(model: nn.Module) -> list[str]:
    """Names of the parameters that training changes (tied weights under their first name)."""
    return [name for name, p in model.named_parameters() if p.requires_grad]


def load_model(path: str, nsp: bool) -> BertPretrainModel:
    """Model weights of a checkpoint folder, with the NSP head (new if absent) when `nsp`."""
    model_cls = BertForPreTraining if nsp else BertForMaskedLM
    with MODEL_INIT_LOCK:
        return model_cls.from_pretrained(path)


class PretrainObjective(nn.Module):
    """Masked-LM (+ NSP) losses of a BERT with the vocabulary projection only at masked positions."""

    def __init__(self, model: BertPretrainModel, fused_ce: bool = True) -> None:
        super().__init__()
        self.model = model
        self.fused_ce = fused_ce  # training: fused projection + cross-entropy (no (M, V) logits kept)
        self.workspace = Workspace()

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T)
        labels: torch.Tensor,  # (B, T), -100 where not predicted
        positions: torch.Tensor | None = None,  # (B, k) predicted positions (fixed-count masking)
        token_type_ids: torch.Tensor | None = None,  # (B, T) segment ids (NSP)
        next_sentence_label: torch.Tensor | None = None,  # (B,) 0 IsNext, 1 NotNext
    ) -> dict[str, torch.Tensor]:
        # packed blocks hold no padding: every position attends everywhere, no attention_mask needed
        out = self.model.bert(input_ids=input_ids, token_type_ids=token_type_ids)
        hidden = out.last_hidden_state  # (B, T, H)
        if positions is not None:
            h = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1)))  # (B, k, H)
            y = labels.gather(1, positions)  # (B, k)
        else:
            selected = labels != IGNORE_INDEX  # (B, T)
            h, y = hidden[selected], labels[selected]  # (M, H), (M,)
        head = self.model.cls.predictions
        if self.fused_ce and self.training and torch.is_grad_enabled():
            t = head.transform(h)  # (..., H)
            mlm_loss = linear_cross_entropy(t.reshape(-1, t.size(-1)), head.decoder.weight, head.decoder.bias,
                                            y.reshape(-1), self.workspace)
            result = {"loss": mlm_loss, "mlm_loss": mlm_loss}
            return self._add_nsp(result, out, next_sentence_label)
        logits = head(h).float()  # (..., V) only at predicted positions
        logits, y = logits.reshape(-1, logits.size(-1)), y.reshape(-1)
        count = (y != IGNORE_INDEX).sum()
        mlm_loss = F.cross_entropy(logits, y, ignore_index=IGNORE_INDEX, reduction="sum") / count.clamp(min=1)
        result = {"loss": mlm_loss, "mlm_loss": mlm_loss, "mlm_logits": logits, "mlm_labels": y}
        return self._add_nsp(result, out, next_sentence_label)

    def _add_nsp(self, result: dict, out, next_sentence_label: torch.Tensor | None) -> dict[str, torch.Tensor]:
        if next_sentence_label is not None:
            nsp_logits = self.model.cls.seq_relationship(out.pooler_output).float()  # (B, 2)
            nsp_loss = F.cross_entropy(nsp_logits, next_sentence_label)
            result.update(loss=result["mlm_loss"] + nsp_loss, nsp_loss=nsp_loss, nsp_logits=nsp_logits)
        return result


class BatchMaker:
    """Turns (B, T) packed blocks into the objective's inputs: NSP pairs (optional), then masks."""

    def __init__(self, cfg: TrainConfig, tokenizer, device: torch.device) -> None:
        self.cfg = cfg
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.mask_id, self.vocab_size = tokenizer.mask_token_id, len(tokenizer)
        self.special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), device=device)

    def __call__(self, blocks: torch.Tensor, generator: torch.Generator) -> dict[str, torch.Tensor | None]:
        token_type_ids = nsp_labels = None
        if self.cfg.nsp:
            blocks, token_type_ids, nsp_labels = make_nsp_pairs(
                blocks, cls_id=self.cls_id, sep_id=self.sep_id, generator=generator
            )
        mb: MaskedBatch = mask_tokens(
            blocks, self.special_ids, mask_token_id=self.mask_id, vocab_size=self.vocab_size,
            generator=generator, mlm_probability=self.cfg.mlm_probability,
            mask_replace_prob=self.cfg.mask_replace_prob, random_replace_prob=self.cfg.random_replace_prob,
            fixed_count=self.cfg.fixed_mask_count,
        )
        return {"input_ids": mb.input_ids, "labels": mb.labels, "positions": mb.positions,
                "token_type_ids": token_type_ids, "next_sentence_label": nsp_labels}


def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW, weight decay on matrices only (not biases / LayerNorm), fused on CUDA."""
    params = {id(p): p for p in model.parameters() if p.requires_grad}.values()  # tied weights once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    extra = {"fused": True} if device.type == "cuda" else {"foreach": True}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.999), eps=1e-8, **extra)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to cfg.lr over warmup_steps, then linear decay to 0 at cfg.steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    remaining = max(1, cfg.steps - cfg.warmup_steps)
    return cfg.lr * max(0.0, 1.0 - (step - cfg.warmup_steps) / remaining)


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX: bf16 matmuls run about twice as fast as fp32 on this CPU."""
    cpu = getattr(torch, "cpu", None)
    try:
        return bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())
    except AttributeError:
        return False


def use_bf16(device: torch.device, precision: str = "auto") -> bool:
    """Whether to train under bf16 autocast (weights, optimizer and loss stay fp32)."""
    if precision == "fp32" or device.type not in ("cuda", "cpu"):
        return False
    if precision == "bf16":
        return True
    return device.type == "cuda" or cpu_has_native_bf16()


def autocast(device: torch.device, enabled: bool = True):
    """bf16 autocast on CUDA / CPU when enabled; full precision otherwise."""
    if enabled and device.type in ("cuda", "cpu"):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.inference_mode()
def evaluate(objective: PretrainObjective, heldout: torch.Tensor, make_batch: BatchMaker, cfg: TrainConfig,
             device: torch.device, bf16: bool = False) -> dict[str, float]:
    """Held-out MLM loss / accuracy (+ NSP) with the same masks at every evaluation (fixed seed)."""
    model = objective.model
    was_training = model.training
    model.eval()
    generator = torch.Generator(device=device)
    generator.manual_seed(cfg.seed + 999_983)
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device)
    count = torch.zeros((), device=device)
    nsp_loss_sum, nsp_correct, nsp_count = torch.zeros((), device=device), torch.zeros((), device=device), 0
    try:
        for i in range(cfg.eval_batches):
            start = (i * cfg.batch_size) % len(heldout)
            start = 0 if len(heldout) - start < 2 else start  # NSP pairs need two rows
            blocks = heldout[start : start + cfg.batch_size]
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

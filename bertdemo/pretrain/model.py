"""The BERT a run trains, and what it learns to predict.

* The model: built fresh for the run's shape, warm-started from a model folder, or loaded from a
  checkpoint (or from weights in memory); partial freezing (train only the top layers / keep the
  embeddings).
* The objective (:class:`PretrainObjective`): masked-LM (+ NSP) loss computed only at the masked
  positions, the last encoder layer run only there (:func:`bertdemo.models.partial_forward.encode_at`), and the vocabulary
  projection fused with the cross-entropy (:mod:`bertdemo.pretrain.fused_ce`); or, for a left-to-right run
  (``objective = "ltr"``), the next-word loss of a ``BertLMHeadModel`` (``is_decoder=True``: the same BERT with the
  causal mask) at every position of the block, nothing masked.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertForMaskedLM, BertForPreTraining, BertLMHeadModel

from bertdemo.locks import MODEL_INIT_LOCK
from bertdemo.models.causal import is_left_to_right
from bertdemo.models.partial_forward import encode_at  # the last layer only at the masked positions
from bertdemo.pretrain.config import LTR, TrainConfig, bert_config
from bertdemo.pretrain.fused_ce import Workspace, linear_cross_entropy
from bertdemo.pretrain.locality import query_positions
from bertdemo.pretrain.masking import IGNORE_INDEX, MaskedBatch, continuation_lookup, make_nsp_pairs, mask_tokens

BertPretrainModel = BertForMaskedLM | BertForPreTraining | BertLMHeadModel


def model_class(nsp: bool, left_to_right: bool = False) -> type[BertPretrainModel]:
    """The transformers class a run trains: BertLMHeadModel (left-to-right), BertForPreTraining (NSP) or
    BertForMaskedLM."""
    if left_to_right:
        return BertLMHeadModel
    return BertForPreTraining if nsp else BertForMaskedLM


def build_model(cfg: TrainConfig, tokenizer) -> BertPretrainModel:
    """A freshly initialised BertForMaskedLM (BertForPreTraining with NSP, BertLMHeadModel with is_decoder=True for
    a left-to-right run) for the run's shape, or, with `cfg.model.init_from`, the pretrained encoder of that folder
    plus a new head."""
    ltr = cfg.objective.objective == LTR
    if cfg.model.init_from:
        model = warm_start_model(cfg.model.init_from, cfg.objective.nsp, ltr)
    else:
        config = bert_config(cfg, vocab_size=len(tokenizer))
        config.pad_token_id = tokenizer.pad_token_id
        with MODEL_INIT_LOCK:
            model = model_class(cfg.objective.nsp, ltr)(config)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"The model's vocabulary has {model.config.vocab_size} entries, the tokenizer "
                         f"{len(tokenizer)}: warm-start from a model with the uncased BERT vocabulary.")
    if starts_on_neighbours(cfg):
        neighbour_init(model)
    apply_freeze(model, cfg.model.train_layers, cfg.model.freeze_embeddings)
    if not cfg.model.position_embeddings:
        remove_position_embeddings(model)
    return model


NEIGHBOUR_FREQUENCIES = 16  # K: the positional subspace is the last 2K hidden dims (fewer when heads are narrow)
NEIGHBOUR_SHARE = 0.5  # share of each embedding's squared norm (after its LayerNorm) that the position carries
NEIGHBOUR_PEAK = 30.0  # attention score of the neighbour above the mean score: all of the softmax on it at first, and
# still most of it once the words' embeddings have grown (with 8, 90 % at first, the heads lost it within 50 steps)


def neighbour_frequencies(k: int) -> torch.Tensor:
    """(k,) angular frequencies π·√(n/k), n = 1..k: spread over (0, π], denser near π, so the kernel
    Σ cos(ω_n d) / k is 1 at d = 0, -0.47 at d = ±1 and below 0.45 for every other |d| up to 130 (k = 16);
    the Transformer's geometric frequencies would make it broad, evenly spaced ones periodic."""
    return torch.pi * (torch.arange(1, k + 1, dtype=torch.float64) / k).sqrt()


def neighbour_offsets(heads: int, left_to_right: bool = False) -> list[int]:
    """The key each head looks at, relative to its query: the word before, the word after, then 2 before…; for a
    left-to-right model, which sees no word after, the word before, 2 before, 3 before…"""
    if left_to_right:
        return [-(h + 1) for h in range(heads)]
    return [-(h // 2 + 1) if h % 2 == 0 else h // 2 + 1 for h in range(heads)]


def starts_on_neighbours(cfg: TrainConfig) -> bool:
    """Whether a run's model is given :func:`neighbour_init`: asked for, a fresh model (not a warm start), with
    position embeddings (an order-blind model has no neighbours to start on) and heads of at least 2 dims (a
    head of 1 dim has no plane to rotate a position in)."""
    if not cfg.model.neighbour_init or cfg.model.init_from or not cfg.model.position_embeddings:
        return False
    _, hidden, heads, _ = cfg.model_shape()
    return hidden // heads >= 2


@torch.no_grad()
def neighbour_init(model: BertPretrainModel, share: float = NEIGHBOUR_SHARE, peak: float = NEIGHBOUR_PEAK) -> None:
    """Initial weights with which every head attends to a neighbour from the first step (a stock BERT: only
    the initial values change). Position i's embedding is ``a·(cos ω_n i, sin ω_n i)`` in a subspace of 2K
    hidden dims that words and segments leave empty (zero there), sized so that after the embedding
    LayerNorm it holds ``share`` of each vector's squared norm. In every layer each head's W_q copies that
    subspace into the first 2K of its dims and W_k copies it rotated by ``o·ω_n`` in each frequency's plane
    (o = the head's offset, :func:`neighbour_offsets`: only words before for a left-to-right model), so the head's score of query i for key j is
    ``peak · Σ cos(ω_n (i - j + o)) / K``: largest at j = i + o. Added to the random weights already there
    (heads still learn content). Positions stay learned embeddings and keep training."""
    emb = model.bert.embeddings
    first = model.bert.encoder.layer[0].attention.self
    hidden, d = first.query.in_features, first.attention_head_size
    k = min(NEIGHBOUR_FREQUENCIES, d // 2, hidden // 4)
    if k < 1:
        raise ValueError(f"neighbour_init needs attention heads of at least 2 dims, got {d}.")
    dims = slice(hidden - 2 * k, hidden)  # the positional subspace
    omega = neighbour_frequencies(k)  # (K,)
    emb.word_embeddings.weight[:, dims] = 0
    emb.token_type_embeddings.weight[:, dims] = 0
    rest = (emb.word_embeddings.weight.double().pow(2).sum(1).mean()
            + emb.token_type_embeddings.weight[0].double().pow(2).sum())  # a token's expected squared norm
    amplitude = (share / (1 - share) * rest / k).sqrt()  # a²·K = share / (1 - share) · the rest
    angles = torch.arange(emb.position_embeddings.num_embeddings, dtype=torch.float64)[:, None] * omega  # (P, K)
    position = torch.zeros(emb.position_embeddings.weight.shape, dtype=torch.float64)
    position[:, dims] = amplitude * torch.stack((angles.cos(), angles.sin()), -1).flatten(1)  # (P, 2K) cos, sin pairs
    emb.position_embeddings.weight.copy_(position)
    # after the LayerNorm each pair has squared norm c² = hidden·share / K; the score is g²·c²·Σcos / √d
    g = (peak * d ** 0.5 / (hidden * share)) ** 0.5
    eye = torch.eye(2 * k, dtype=torch.float64)
    for layer in model.bert.encoder.layer:
        att = layer.attention.self
        for head, offset in enumerate(neighbour_offsets(att.num_attention_heads, is_left_to_right(model))):
            theta = -offset * omega  # key j rotated by θ matches query i = j + θ/ω
            cos, sin = theta.cos(), theta.sin()
            rotation = torch.zeros(2 * k, 2 * k, dtype=torch.float64)
            rotation[0::2, 0::2], rotation[0::2, 1::2] = torch.diag(cos), torch.diag(-sin)
            rotation[1::2, 0::2], rotation[1::2, 1::2] = torch.diag(sin), torch.diag(cos)
            rows = slice(head * d, head * d + 2 * k)
            att.query.weight[rows, dims] += (g * eye).to(att.query.weight.dtype)
            att.key.weight[rows, dims] += (g * rotation).to(att.key.weight.dtype)


def remove_position_embeddings(model: BertPretrainModel) -> None:
    """Zero the learned position embeddings and keep them at zero (frozen): the encoder then sees a
    bag of tokens and cannot tell their order (attention itself is permutation-equivariant)."""
    weight = model.bert.embeddings.position_embeddings.weight
    with torch.no_grad():
        weight.zero_()
    weight.requires_grad_(False)


def warm_start_model(path: str, nsp: bool = False, left_to_right: bool = False) -> BertPretrainModel:
    """The encoder weights of the model folder `path` (e.g. a bare ``BertModel``) with an MLM (+NSP)
    head — or, ``left_to_right``, as a BertLMHeadModel with the causal mask — the head kept when the folder has
    one, else new, its decoder tied to the word embeddings. Always float32 weights, whatever the folder stores (a
    shipped fp16 model, loaded as stored, would train with half-precision optimizer steps, ~20x slower on a CPU)."""
    model_cls = model_class(nsp, left_to_right)
    config = BertConfig.from_pretrained(path)
    config.is_decoder = left_to_right
    config.architectures = [model_cls.__name__]
    config.tie_word_embeddings = True  # decoder weight = word embeddings (original BERT)
    with MODEL_INIT_LOCK:
        model = model_cls.from_pretrained(path, config=config, dtype=torch.float32)
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


def model_from_config(config: dict, nsp: bool) -> BertPretrainModel:
    """A model of a checkpoint's architecture (its config.json content), for weights already in memory."""
    bert = BertConfig.from_dict(config)
    with MODEL_INIT_LOCK:
        return model_class(nsp, is_left_to_right(bert))(bert)


def load_weights(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load a state dict into ``model``; a name it lacks is fine only for a tied weight (the decoder's, which
    a safetensors file keeps once). ValueError naming the weights that differ otherwise."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    params = model.state_dict(keep_vars=True)
    loaded = {id(params[name]) for name in state if name in params}
    untied = [name for name in missing if id(params[name]) not in loaded]
    if untied or unexpected:
        raise ValueError(f"The weights do not fit this model: missing {untied}, unexpected {unexpected}.")


def load_checkpoint_model(path: str, nsp: bool) -> BertPretrainModel:
    """Model weights of a checkpoint folder, with the NSP head (new if absent) when `nsp`; a left-to-right
    checkpoint (``is_decoder`` in its config) as the BertLMHeadModel it is; float32 weights, as a warm start's."""
    model_cls = model_class(nsp, is_left_to_right(BertConfig.from_pretrained(path)))
    with MODEL_INIT_LOCK:
        return model_cls.from_pretrained(path, dtype=torch.float32)


# --- the objective ---------------------------------------------------------------------------------
# The pretraining objective: masked-LM (+ NSP) losses with the vocabulary projection only at the
# masked positions, and the batch maker that turns packed blocks into its inputs.
# The sparse head runs the vocabulary projection (H -> V, the most expensive matmul of a small
# BERT) only where labels are: hidden states are gathered at those positions first, then passed
# through ``model.cls.predictions``. In training the projection and the cross-entropy are fused
# (`fused_ce`). With fixed-count masking and no NSP the last encoder layer, too, runs only at those
# positions (`sparse_encoder`). The objective is an ``nn.Module`` so DDP and ``torch.compile`` see one forward.

class PretrainObjective(nn.Module):
    """Masked-LM (+ NSP) losses of a BERT with the vocabulary projection only at masked positions; for a
    left-to-right model (``is_decoder``) the next-word loss at every position. Either loss is returned as
    ``loss`` and ``mlm_loss`` (the run's language-modelling loss, whichever objective it is)."""

    def __init__(self, model: BertPretrainModel, fused_ce: bool = True, sparse_encoder: bool = True) -> None:
        super().__init__()
        self.model = model
        self.fused_ce = fused_ce  # training: fused projection + cross-entropy (no (M, V) logits kept)
        self.sparse_encoder = sparse_encoder  # last layer only at the predicted positions (when it can)
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
        out = None
        if is_left_to_right(self.model) and positions is not None:  # only the masked LM's positions p: each
            # from the output at p - 1, which has read the true words before p (a block starts with [CLS]: p >= 1)
            hidden = self.model.bert(input_ids=input_ids, use_cache=False).last_hidden_state  # (B, T, H), causal
            h = hidden.gather(1, (positions - 1).unsqueeze(-1).expand(-1, -1, hidden.size(-1)))  # (B, k, H)
        elif is_left_to_right(self.model):  # the output at t predicts the token at t + 1, at every position
            hidden = self.model.bert(input_ids=input_ids, use_cache=False).last_hidden_state  # (B, T, H), causal
            hidden, labels, positions = hidden[:, :-1], labels[:, 1:], None  # (B, T-1, H), (B, T-1): all predicted
        elif positions is not None and next_sentence_label is None and self.sparse_encoder:
            with query_positions(positions):  # for a locality bias on the last layer's queries
                h = encode_at(self.model.bert, input_ids, positions, token_type_ids)  # (B, k, H)
        else:
            out = self.model.bert(input_ids=input_ids, token_type_ids=token_type_ids)
            hidden = out.last_hidden_state  # (B, T, H)
        if positions is not None:
            if out is not None:
                h = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1)))  # (B, k, H)
            y = labels.gather(1, positions)  # (B, k)
        else:
            selected = labels != IGNORE_INDEX  # (B, T)
            h, y = hidden[selected], labels[selected]  # (M, H), (M,)
        head = self.model.cls.predictions
        if self.fused_ce and self.training and torch.is_grad_enabled():
            t = head.transform(h)  # (..., H)
            weight, bias, y = head.decoder.weight, head.decoder.bias, y.reshape(-1)
            mlm_loss = linear_cross_entropy(t.reshape(-1, t.size(-1)), weight, bias, y, self.workspace)
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
    """Turns (B, T) packed blocks into the objective's inputs: NSP pairs (optional), then masks. For a
    left-to-right run the blocks as they are (every next word predicted); the masks an MLM run would draw are
    still drawn from the generator and dropped, so a masked-LM run and a left-to-right run of one seed see the
    same batches in the same order (the twins)."""

    def __init__(self, cfg: TrainConfig, tokenizer, device: torch.device) -> None:
        self.cfg = cfg
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.mask_id, self.vocab_size = tokenizer.mask_token_id, len(tokenizer)
        self.special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)), device=device)
        # whole-word masking: which vocabulary entries continue a word ("##ing"), looked up on the device
        self.is_continuation = continuation_lookup(tokenizer, device) if cfg.objective.whole_word_masking else None

    def __call__(self, blocks: torch.Tensor, generator: torch.Generator, block_ids: torch.Tensor | None = None,
                 epoch: int = 0) -> dict[str, torch.Tensor | None]:
        """Inputs for one step. With static masks (``objective.static_masks`` = N) and ``block_ids``
        given, block i's masks in epoch e are copy ``e mod N`` of its N fixed masks, as the original
        BERT data pipeline made them (each sequence duplicated N times); otherwise masks are new."""
        token_type_ids = nsp_labels = None
        if self.cfg.objective.objective == LTR:  # the true words as input: nothing is replaced by [MASK]
            drawn = None
            if not (self.cfg.objective.static_masks and block_ids is not None):
                drawn = self._mask(blocks, generator)  # drawn always: the generator (so the data order) stays its twin's
            if self.cfg.objective.ltr_targets == "masked" and drawn is not None:  # only the twin's masked words
                return {"input_ids": blocks, "labels": drawn.labels, "positions": drawn.positions,
                        "token_type_ids": None, "next_sentence_label": None}
            return {"input_ids": blocks, "labels": blocks, "positions": None, "token_type_ids": None,
                    "next_sentence_label": None}
        if self.cfg.objective.nsp:
            blocks, token_type_ids, nsp_labels = make_nsp_pairs(
                blocks, cls_id=self.cls_id, sep_id=self.sep_id, generator=generator
            )
        copies = self.cfg.objective.static_masks
        if copies and block_ids is not None:
            rows = [self._mask(row[None], self._static_generator(int(i), epoch % copies, blocks.device))
                    for row, i in zip(blocks, block_ids.tolist())]
            mb = MaskedBatch(torch.cat([r.input_ids for r in rows]), torch.cat([r.labels for r in rows]),
                             None if rows[0].positions is None else torch.cat([r.positions for r in rows]))
        else:
            mb = self._mask(blocks, generator)
        return {"input_ids": mb.input_ids, "labels": mb.labels, "positions": mb.positions,
                "token_type_ids": token_type_ids, "next_sentence_label": nsp_labels}

    def _mask(self, blocks: torch.Tensor, generator: torch.Generator) -> MaskedBatch:
        o = self.cfg.objective
        return mask_tokens(
            blocks, self.special_ids, mask_token_id=self.mask_id, vocab_size=self.vocab_size,
            generator=generator, mlm_probability=o.mlm_probability, mask_replace_prob=o.mask_replace_prob,
            random_replace_prob=o.random_replace_prob, fixed_count=o.fixed_mask_count,
            is_continuation=self.is_continuation,
        )

    def _static_generator(self, block_id: int, copy: int, device: torch.device) -> torch.Generator:
        """The generator of one block's copy-th fixed mask: the same numbers every time it comes round."""
        generator = torch.Generator(device=device)
        generator.manual_seed((self.cfg.system.seed * 1_000_003 + block_id) * 1_009 + copy)
        return generator


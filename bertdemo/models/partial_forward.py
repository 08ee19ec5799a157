"""A BERT encoder with its last layer computed only at chosen positions.

Whoever reads the final hidden states at a few positions only (Fill-Mask at its masks, the
pretraining masked-LM loss at its predicted positions) needs the last layer there and nowhere
else: a position's last-layer output depends on the other positions only through that layer's
keys and values. So :func:`encode_at` runs every lower layer as ``BertLayer`` does, and the last
one with keys and values everywhere and its queries, attention output, output projection, layer
norms and feed-forward at the chosen positions only: the same function of the same weights (equal
to ``base_model(...).last_hidden_state`` at those positions up to float rounding, dropout
included in training), for a fraction of the last layer's work.

Attention goes through the model's own registered attention function (SDPA, or this app's
:func:`bertdemo.models.attention_modes.bertdemo_attention`, so head ablation applies). The
int8 copy's attention modules carry one fused query/key/value projection
(:mod:`bertdemo.models.int8`), used wherever queries, keys and values come from the same positions.

Tested against the full forward in tests/test_partial_forward.py.
"""

from __future__ import annotations

import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from bertdemo import compat
from bertdemo.models import attention_modes

_LAYERED_TYPES = ("bert", "roberta")  # embeddings -> bidirectional mask -> encoder.layer[...], nothing else


def encode_at(base_model, input_ids: torch.Tensor, positions: torch.Tensor,
              token_type_ids: torch.Tensor | None = None,
              attention_mask: torch.Tensor | None = None, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
    """(B, k, H) final hidden states of (B, T) ``input_ids`` at (B, k) ``positions``.

    ``base_model``: a BERT or RoBERTa encoder (``model.bert``, ``model.base_model``).
    ``attention_mask``: (B, T), 0 on padding; None when nothing is padded (packed blocks).
    ``inputs_embeds``: (B, T, H) the word-embedding layer's output to use instead of looking ``input_ids`` up
    (positions and segments still come from ``input_ids``): attribution's path through the embeddings.
    """
    h = base_model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids, inputs_embeds=inputs_embeds)
    mask = None
    if attention_mask is not None:  # (B, 1, T or 1, T) as the model's attention function takes it
        mask = compat.bidirectional_mask(base_model.config, h, attention_mask)
    *lower, last = base_model.encoder.layer
    for layer in lower:
        h = _layer(layer, h, mask)  # (B, T, H)
    return _layer(last, h, mask, positions)  # (B, k, H)


def supported(model) -> bool:
    """Whether :func:`hidden_at` runs ``model``'s encoder itself, with the last layer at the chosen positions.

    BERT and RoBERTa encoders whose attention goes through :mod:`bertdemo.models.attention_modes`,
    outside modes that record weights or queries/keys/values (those need every position); head
    ablation is fine (it acts on each query's own output).
    """
    config = model.config
    mode = attention_modes.current_mode()
    return (config.model_type in _LAYERED_TYPES and attention_modes.supports_modes(model)
            and not config.is_decoder and not getattr(config, "chunk_size_feed_forward", 0)
            and not mode.weights and not mode.qkv)


def hidden_at(model, enc: dict, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """The encoder's final hidden states at (``rows[i]``, ``cols[i]``) of the batch ``enc``: (N, H).

    Any number of positions per row (Fill-Mask: a request's masks). Equal to
    ``model.base_model(**enc).last_hidden_state[rows, cols]`` up to float rounding; computed by
    :func:`encode_at` when :func:`supported`, else by the model's own forward.
    """
    base = model.base_model
    if not supported(model) or rows.numel() == 0:
        return base(**model_inputs(enc)).last_hidden_state[rows, cols]
    B = enc["input_ids"].shape[0]
    counts = torch.bincount(rows, minlength=B)  # (B,) positions per row
    order = torch.argsort(rows, stable=True)
    starts = counts.cumsum(0) - counts
    slot = torch.empty_like(rows)
    slot[order] = torch.arange(rows.numel(), device=rows.device) - starts[rows[order]]  # index within its row
    positions = torch.zeros(B, int(counts.max()), dtype=torch.long, device=rows.device)  # (B, k); spare slots: 0
    positions[rows, slot] = cols
    out = encode_at(base, enc["input_ids"], positions, enc.get("token_type_ids"), enc.get("attention_mask"),
                    enc.get("inputs_embeds"))
    return out[rows, slot]  # (N, H)


def logits_at(model, enc: dict, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """A masked-LM's vocabulary logits only at (``rows``, ``cols``): (N, V)."""
    return head_logits(model, hidden_at(model, enc, rows, cols), enc, rows, cols)


def head_logits(model, hidden: torch.Tensor, enc: dict, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """The masked-LM head on ``hidden`` (N, H), the final hidden states at (``rows``, ``cols``): (N, V).

    For a head of unknown type the model's own forward computes every position's logits and they
    are read at (``rows``, ``cols``).
    """
    if hasattr(model, "cls"):  # BERT: BertOnlyMLMHead
        return model.cls(hidden)
    if hasattr(model, "lm_head"):  # RoBERTa family
        return model.lm_head(hidden)
    if hasattr(model, "vocab_projector"):  # DistilBERT
        h = model.vocab_layer_norm(model.activation(model.vocab_transform(hidden)))
        return model.vocab_projector(h)
    if hasattr(model, "predictions"):  # ALBERT
        return model.predictions(hidden)
    return model(**model_inputs(enc)).logits[rows, cols]  # (N, V), computed everywhere


def model_inputs(enc: dict) -> dict:
    """``enc`` as a model's own forward takes it: given ``inputs_embeds``, without ``input_ids`` (a model
    refuses both)."""
    return {k: v for k, v in enc.items() if not (k == "input_ids" and "inputs_embeds" in enc)}


def _qkv(attention, h: torch.Tensor, x: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
    """Queries (from ``x``, or ``h`` when None), keys and values (from ``h``): (..., H) each.

    The int8 copy's fused projection gives exactly the three separate ones in one matmul; it
    serves only where queries come from the same positions as keys and values.
    """
    fused = getattr(attention, "bertdemo_qkv", None)
    if fused is None or x is not None:
        return attention.query(h if x is None else x), attention.key(h), attention.value(h)
    return fused(h).chunk(3, dim=-1)


def _layer(layer, h: torch.Tensor, mask: torch.Tensor | None, positions: torch.Tensor | None = None) -> torch.Tensor:
    """One ``BertLayer``: its output (B, T, H), or with (B, k) ``positions`` its output there, (B, k, H)."""
    attention = layer.attention.self
    B, T, _ = h.shape
    heads, d = attention.num_attention_heads, attention.attention_head_size
    x = None
    if positions is not None:
        x = h.gather(1, positions.unsqueeze(-1).expand(-1, -1, h.shape[-1]))  # (B, k, H) the queries' inputs
        if mask is not None and mask.shape[2] != 1:  # (B, 1, T, T) -> (B, 1, k, T): these queries' mask rows
            mask = mask.gather(2, positions[:, None, :, None].expand(-1, 1, -1, mask.shape[-1]))
    q, k, v = _qkv(attention, h, x)
    q = q.view(B, -1, heads, d).transpose(1, 2)  # (B, heads, T or k, d)
    k = k.view(B, T, heads, d).transpose(1, 2)  # (B, heads, T, d)
    v = v.view(B, T, heads, d).transpose(1, 2)
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(compat.attn_implementation(attention.config),
                                                   compat.eager_attention())
    out, _ = attend(attention, q, k, v, mask, dropout=attention.dropout.p if attention.training else 0.0,
                    scaling=attention.scaling)  # (B, T or k, heads, d)
    residual = h if x is None else x
    out = out.reshape(*residual.shape[:-1], -1)  # (B, T or k, H): heads concatenated
    a = layer.attention.output(out, residual)  # dense, dropout, + residual, LayerNorm
    return layer.output(layer.intermediate(a), a)  # feed-forward, dropout, + residual, LayerNorm

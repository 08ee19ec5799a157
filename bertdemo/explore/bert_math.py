"""BERT's arithmetic spelled out from the weights: linear, LayerNorm, the additive attention mask, cosine,
and one encoder layer step by step (:func:`layer_steps`). The Inside BERT views (``inside``,
``inside_layer``, ``inside_output``) all recompute with these; this module imports none of them.

Shapes follow ``modeling_bert.py``: hidden states (B, S, D), attention (B, H, S, S).
"""

from __future__ import annotations

import math

import torch


def linear(x: torch.Tensor, module) -> torch.Tensor:
    """``x @ W^T + b`` with the weights of an ``nn.Linear``."""
    y = x @ module.weight.T
    return y + module.bias if module.bias is not None else y


def layer_norm(x: torch.Tensor, module) -> torch.Tensor:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis, with an ``nn.LayerNorm``'s weights."""
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + module.eps) * module.weight + module.bias


def additive_mask(attention_mask: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """(B, S) of 1/0 -> (B, 1, 1, S): 0 where a token may be attended, the float32 minimum at padding. ``causal``
    (a left-to-right model): (B, 1, S, S), the float32 minimum also at every key after its query (key j > query i)."""
    mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    if not causal:
        return mask
    s = attention_mask.shape[-1]
    future = torch.ones(s, s, dtype=torch.bool, device=attention_mask.device).triu(1)  # (S, S) j > i
    return mask.expand(-1, -1, s, -1).masked_fill(future, torch.finfo(torch.float32).min)


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity along the last axis."""
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def layer_steps(layer, hidden: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """One ``BertLayer`` recomputed from its weights; every intermediate, by canonical name.

    ``hidden``: (B, S, D); ``mask``: additive, broadcastable to (B, H, S, S).
    """
    att = layer.attention.self
    b, s, _ = hidden.shape
    h, dh = att.num_attention_heads, att.attention_head_size

    def heads(x: torch.Tensor) -> torch.Tensor:  # (B, S, D) -> (B, H, S, d_h)
        return x.view(b, s, h, dh).transpose(1, 2)

    q, k, v = (heads(linear(hidden, m)) for m in (att.query, att.key, att.value))
    scores = q @ k.transpose(-1, -2)  # (B, H, S, S) raw q·k
    scaled = scores / math.sqrt(dh)
    masked = scaled + mask
    probs = masked.softmax(-1)  # (B, H, S, S), rows sum to 1
    context = probs @ v  # (B, H, S, d_h)
    concat = context.transpose(1, 2).reshape(b, s, h * dh)  # (B, S, D)
    projected = linear(concat, layer.attention.output.dense)
    attention_output = layer_norm(projected + hidden, layer.attention.output.LayerNorm)
    up = linear(attention_output, layer.intermediate.dense)  # (B, S, I)
    activated = layer.intermediate.intermediate_act_fn(up)
    down = linear(activated, layer.output.dense)  # (B, S, D)
    output = layer_norm(down + attention_output, layer.output.LayerNorm)
    return {
        "input": hidden, "query": q, "key": k, "value": v, "scores": scores, "scaled": scaled,
        "masked": masked, "probs": probs, "context": context, "concat": concat, "projected": projected,
        "attention_output": attention_output, "intermediate": up, "activated": activated,
        "ffn_output": down, "output": output,
    }

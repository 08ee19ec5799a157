"""Inside BERT, part 2: one encoder layer, one head, step by step, from the weights.

    X (S, D) -> Q, K, V = X W^T + b, split into heads (H, S, d_h)
             -> scores Q K^T (H, S, S) -> / sqrt(d_h) -> + attention mask -> softmax = P
             -> P V (H, S, d_h) -> heads concatenated (S, D) -> output projection W_O
             -> residual + LayerNorm -> feed-forward W_1 + GELU (S, I) -> W_2 (S, D)
             -> residual + LayerNorm = the layer's output, hidden_states[l + 1]

Only the chosen layer and head are returned in full (the rest is cheap arithmetic), and the
result is checked against the model's own ``output_attentions`` and ``output_hidden_states``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bertdemo.explore.bert_math import additive_mask, layer_steps
from bertdemo.explore.inside import Trace, bert_modules, computing, trace
from bertdemo.models.causal import is_left_to_right
from bertdemo.models.store import LoadedModel


def _recompute(bert, own: Trace, layer: int) -> tuple[dict[str, np.ndarray], float, float]:
    """Layer ``layer`` from its weights on the model's own input to it: every step (B dropped), and the
    max |difference| of the softmax and of the output against the model's own forward."""
    mask = additive_mask(own.enc.tensors["attention_mask"], causal=is_left_to_right(bert))  # the causal mask too
    with computing():
        steps = layer_steps(bert.encoder.layer[layer], own.hidden_states[layer], mask)
        diff_att = float((steps["probs"] - own.attentions[layer]).abs().max())
        diff_out = float((steps["output"] - own.hidden_states[layer + 1]).abs().max())
        x = {k: v[0].detach().float().cpu().numpy() for k, v in steps.items()}  # batch axis dropped
    return x, diff_att, diff_out


@dataclass
class Step:
    """One step of the layer: what was computed, its full shape, and its matrix (for the chosen head)."""

    name: str
    formula: str
    shape: tuple[int, ...]  # the full shape of what this step computes, e.g. (H, S, S) or (S, D)
    matrix: np.ndarray  # (rows, cols) as drawn: the chosen head's slice for per-head steps


@dataclass
class LayerStepResult:
    """One layer, one head, one query token: every step, and the neuron view of that token."""

    model_name: str
    tokens: list[str]
    layer: int
    head: int
    query: int  # position of the query token
    num_layers: int
    num_heads: int
    head_dim: int  # d_h = D / H
    hidden_size: int
    intermediate_size: int
    activation: str  # config.hidden_act, e.g. "gelu"
    steps: list[Step]
    q: np.ndarray  # (d_h,) the query token's q in the chosen head
    keys: np.ndarray  # (S, d_h) every token's k in the chosen head
    products: np.ndarray  # (S, d_h) q ⊙ k_j, elementwise (summed: the score)
    scores: np.ndarray  # (S,) q · k_j
    scaled: np.ndarray  # (S,) / sqrt(d_h)
    mask: np.ndarray  # (S,) the additive attention mask (0 = may attend)
    probs: np.ndarray  # (S,) softmax: the attention row of the query token
    value_norms: np.ndarray  # (S,) |v_j|
    context: np.ndarray  # (d_h,) sum_j p_j v_j
    max_diff_attention: float  # probs (H, S, S) vs the model's output_attentions[layer]
    max_diff_output: float  # output vs the model's hidden_states[layer + 1]
    causal: bool = False  # a left-to-right model: the mask also hides every key after the query (−3.4e38)


def _check_index(value: int, count: int, what: str) -> int:
    value = int(value)
    if not 0 <= value < count:
        raise ValueError(f"{what} must be 0 to {count - 1}; got {value}.")
    return value


def layer_step(loaded: LoadedModel, text: str, layer: int, head: int, query: int) -> LayerStepResult:
    """Section 2: layer ``layer``, head ``head``, query token at position ``query`` (0 = [CLS])."""
    bert = bert_modules(loaded)
    cfg = loaded.model.config
    layer = _check_index(layer, cfg.num_hidden_layers, "Layer")
    head = _check_index(head, cfg.num_attention_heads, "Head")
    own = trace(loaded, text)
    enc = own.enc
    query = _check_index(query, enc.length, f"The query token position ({enc.length} tokens)")
    x, diff_att, diff_out = loaded.remember(("inside_layer", text, layer), lambda: _recompute(bert, own, layer))
    v_norms = np.linalg.norm(x["value"][head], axis=-1)
    s, d = x["input"].shape
    dh = x["query"].shape[-1]
    hh = cfg.num_attention_heads
    act = str(getattr(cfg, "hidden_act", "gelu"))
    causal = is_left_to_right(cfg)
    inter = x["intermediate"].shape[-1]
    per_head = [
        ("Q = X·W_Q + b_Q", "query", f"queries of head {head}"),
        ("K = X·W_K + b_K", "key", f"keys of head {head}"),
        ("V = X·W_V + b_V", "value", f"values of head {head}"),
        ("Q·Kᵀ", "scores", "raw scores q·k"),
        ("÷ √d_h", "scaled", f"divided by √{dh} = {math.sqrt(dh):.3f}"),
        ("+ attention mask", "masked", "0 where a token may be attended; −3.4e38 at padding"
         + (" and at every later token (the causal mask of a left-to-right model)" if causal else "")),
        ("softmax", "probs", "attention weights: each row sums to 1"),
        ("P·V", "context", "the weighted sum of the values"),
    ]
    steps_out = [Step(f"input X = hidden_states[{layer}]", "X", (s, d), x["input"])]
    steps_out += [Step(note, formula, (hh, *x[key].shape[1:]), x[key][head]) for formula, key, note in per_head]
    steps_out += [
        Step("heads concatenated", "concat(head_1 … head_H)", (s, d), x["concat"]),
        Step("output projection", "· W_O + b_O", (s, d), x["projected"]),
        Step("residual + LayerNorm", "LayerNorm(X + ·)", (s, d), x["attention_output"]),
        Step(f"feed-forward up + {act.upper()}", f"{act}(· W_1 + b_1)", (s, inter), x["activated"]),
        Step("feed-forward down", "· W_2 + b_2", (s, d), x["ffn_output"]),
        Step(f"residual + LayerNorm = hidden_states[{layer + 1}]", "LayerNorm(· + ·)", (s, d), x["output"]),
    ]
    q = x["query"][head, query]
    keys = x["key"][head]
    return LayerStepResult(
        model_name=loaded.name, tokens=enc.tokens, layer=layer, head=head, query=query,
        num_layers=cfg.num_hidden_layers, num_heads=hh, head_dim=dh, hidden_size=d,
        intermediate_size=inter, activation=act, steps=steps_out,
        q=q, keys=keys, products=keys * q[None, :], scores=x["scores"][head, query],
        scaled=x["scaled"][head, query], mask=(x["masked"] - x["scaled"])[head, query],
        probs=x["probs"][head, query], value_norms=v_norms, context=x["context"][head, query],
        max_diff_attention=diff_att, max_diff_output=diff_out, causal=causal,
    )

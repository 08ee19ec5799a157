"""A locality bias on attention for the first part of a run, fading to zero so the model ends a stock BERT.

A fresh BERT's attention is nearly uniform: every position mixes the whole block, so for its first
minutes the model can only learn which words are common ("the , . of and" for every [MASK]). A
distance penalty on the attention scores — ALiBi's (Press et al. 2022): head h adds
``-slope_h × |i - j|`` to the score of query i for key j, slopes ``2^(-8(h+1)/heads)`` — makes each
head look at its neighbours from the first step; scaled up (× 8 on bert-tiny's 2 heads) it breaks
that plateau within a minute or two on a CPU.

The bias lives only in the training run: an attention function registered with transformers'
``AttentionInterface`` under :data:`IMPLEMENTATION` adds it before PyTorch's SDPA, reading each
attention module's current slopes (plain attributes, never saved). :class:`LocalityBias` sets those
slopes from the run's progress, fading them linearly to zero by ``locality_fade`` of the run; at zero the model is switched back to stock SDPA. ``config.json`` never records a
custom attention implementation, so a checkpoint is a plain ``BertForMaskedLM`` — identical in its
predictions to the trained model once the bias is gone.

The last encoder layer may run its queries at the predicted positions only
(:func:`bertdemo.models.partial_forward.encode_at`): then :func:`query_positions` tells the
attention function where those queries sit in the block.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from bertdemo import compat

IMPLEMENTATION = "bertdemo_locality"
STOCK_IMPLEMENTATION = "sdpa"
_QUERY_POSITIONS: contextvars.ContextVar[torch.Tensor | None] = contextvars.ContextVar(
    "bertdemo_locality_query_positions", default=None)


def locality_checkpoint_note(step: int, strength: float) -> str:
    """What a learner must know about a checkpoint saved while the bias is still on."""
    return (f"The checkpoint of step {step:,} was saved with the locality bias at {strength:.0%} of its strength. "
            "Loaded in the other tabs it is a standard BERT, without the bias, so its answers there differ from "
            "the probes here until the bias has faded (the run's last checkpoint has none).")


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's per-head slopes: the geometric sequence 2^(-8/n), 2^(-16/n)… for n heads (n a power of 2;
    otherwise those of the next lower power of 2, then every other slope of the next higher one)."""
    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]

    low = 1 << (heads.bit_length() - 1)
    if low == heads:
        return power_of_two(heads)
    return power_of_two(low) + power_of_two(2 * low)[0::2][: heads - low]


@contextlib.contextmanager
def query_positions(positions: torch.Tensor | None) -> Iterator[None]:
    """Within this block, attention whose queries are fewer than its keys has them at (B, k) ``positions``."""
    token = _QUERY_POSITIONS.set(positions)
    try:
        yield
    finally:
        _QUERY_POSITIONS.reset(token)


def distance_bias(slopes: torch.Tensor, q_len: int, k_len: int, dtype: torch.dtype) -> torch.Tensor:
    """``-slope_h × |i - j|``: (1 or B, heads, q_len, k_len); queries at :func:`query_positions` when fewer than keys."""
    keys = torch.arange(k_len, device=slopes.device)
    if q_len == k_len:
        queries = keys[None]  # (1, T)
    else:
        queries = _QUERY_POSITIONS.get()  # (B, k)
        if queries is None or queries.shape[-1] != q_len:
            raise ValueError("A locality bias on queries at chosen positions needs query_positions(...) around the call.")
    distance = (queries[:, :, None] - keys[None, None, :]).abs()  # (1 or B, q, k)
    return (-slopes[None, :, None, None] * distance[:, None]).to(dtype)


def locality_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                       **kwargs) -> tuple[torch.Tensor, None]:
    """SDPA with the module's current distance bias added to the scores: ``(output (B, S, heads, d), None)``.

    query (B, heads, S_q, d), key / value (B, heads, S_k, d); ``attention_mask`` bool (True = attend),
    additive float or None. A module without slopes (or at zero) is plain SDPA."""
    slopes = getattr(module, "locality_slopes", None)
    if slopes is not None:
        bias = distance_bias(slopes.to(query.device), query.shape[2], key.shape[2], query.dtype)
        if attention_mask is None and getattr(module, "is_causal", False) and query.shape[2] == key.shape[2] > 1:
            # a left-to-right model's SDPA would apply the causal mask itself only without a mask: keep it here
            future = torch.ones(query.shape[2], key.shape[2], dtype=torch.bool, device=query.device).triu(1)
            attention_mask = bias.masked_fill(future, torch.finfo(query.dtype).min)
        elif attention_mask is None:
            attention_mask = bias
        elif attention_mask.dtype == torch.bool:
            attention_mask = bias.masked_fill(~attention_mask, torch.finfo(query.dtype).min)
        else:
            attention_mask = bias + attention_mask
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                  **kwargs)


AttentionInterface.register(IMPLEMENTATION, locality_attention)
AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)  # padding masks as SDPA takes them


class LocalityBias:
    """The fading locality bias of one training run's BERT."""

    def __init__(self, model, factor: float, fade: float) -> None:
        """``factor``: × ALiBi's slopes; ``fade``: share of the run by which it reaches 0 (0 = never fades)."""
        self.model, self.fade = model, fade
        self.modules = [layer.attention.self for layer in model.bert.encoder.layer]
        heads = self.modules[0].num_attention_heads
        self.slopes = torch.tensor(alibi_slopes(heads)) * factor  # (heads,)
        self.strength = 0.0
        self.active = factor > 0
        stock = compat.attn_implementation(model.config)
        self.stock = STOCK_IMPLEMENTATION if stock in (None, IMPLEMENTATION) else stock  # what it returns to

    def strength_at(self, progress: float) -> float:
        """Falling linearly from 1 at the start to 0 at ``fade`` of the run (always 1 when it never fades)."""
        if not self.active:
            return 0.0
        if self.fade == 0:
            return 1.0
        return max(0.0, 1.0 - progress / self.fade)

    def applied_strength(self) -> float:
        """The bias the model's attention adds now, as a share of the starting strength: read from the
        attention modules' slopes (0 when the model runs stock attention or has no slopes)."""
        if not self.active or compat.attn_implementation(self.model.config) != IMPLEMENTATION:
            return 0.0
        shares = [float((module.locality_slopes.cpu() / self.slopes).mean()) if hasattr(module, "locality_slopes")
                  else 0.0 for module in self.modules]
        return round(sum(shares) / len(shares), 4)

    def update(self, progress: float) -> float:
        """Set the bias for this point of the run (``progress`` in [0, 1]); returns its strength."""
        strength = self.strength_at(progress)
        if strength == self.strength:
            return strength
        device = self.model.device
        for module in self.modules:
            if strength > 0:
                module.locality_slopes = (self.slopes * strength).to(device)
            elif hasattr(module, "locality_slopes"):
                del module.locality_slopes
        if (strength > 0) != (self.strength > 0):
            self.model.set_attn_implementation(IMPLEMENTATION if strength > 0 else self.stock)
        self.strength = strength
        return strength

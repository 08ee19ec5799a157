"""One attention function for every view, chosen per call by a context variable.

Models are loaded with ``attn_implementation="bertdemo"`` (see :func:`implementation_for`).
The function registered under that name looks at the current :class:`AttentionMode`:

- default: PyTorch SDPA (fast; no weights are materialised);
- ``weights=True`` (or ``output_attentions=True`` on the forward): the explicit
  ``softmax(Q Kᵀ · scaling + mask) V`` of ``modeling_bert.eager_attention_forward``, and the
  weights ``(B, H, S, S)`` are returned and recorded;
- ``qkv=True``: records the per-head queries, keys and values ``(B, H, S, d)`` of every layer;
- ``ablate={(layer, head), ...}``: those heads' attention probabilities are multiplied by 0,
  so their share of the layer's output (before the output projection) is 0.

The mode lives in a :class:`contextvars.ContextVar`, never in the shared config, so two
requests running on one shared model at the same time (threads, or tasks) each get their own::

    with attention_mode(weights=True, ablate={(3, 1)}) as rec:
        model(**enc)
    rec.weights[0]  # (B, H, S, S) of layer 0

Layer indices come from ``module.layer_idx`` (BERT, RoBERTa, ELECTRA…); for models whose
attention modules lack it (DistilBERT), :func:`index_layers` numbers them once.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from bertdemo import compat

IMPLEMENTATION = "bertdemo"


@dataclass
class Recording:
    """What one ``with attention_mode(...)`` block captured, keyed by layer index."""

    weights: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> (B, H, S, S)
    qkv: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=dict)  # (B, H, S, d) each

    def stacked_weights(self) -> torch.Tensor:
        """All recorded layers' weights in layer order: (L, B, H, S, S)."""
        if not self.weights:
            raise ValueError("No attention weights were recorded (was the model run inside attention_mode?).")
        return torch.stack([self.weights[i] for i in sorted(self.weights)])


@dataclass(frozen=True)
class AttentionMode:
    """How the attention function behaves in the current context."""

    weights: bool = False
    qkv: bool = False
    ablate: frozenset[tuple[int, int]] = frozenset()  # (layer, head) pairs switched off
    recording: Recording | None = None

    def heads_off(self, layer: int | None) -> list[int]:
        return sorted(h for (l, h) in self.ablate if l == layer)


_DEFAULT = AttentionMode()
_MODE: contextvars.ContextVar[AttentionMode] = contextvars.ContextVar("bertdemo_attention_mode", default=_DEFAULT)


def current_mode() -> AttentionMode:
    """The mode in force for this thread / task."""
    return _MODE.get()


def is_default_mode() -> bool:
    """True outside every ``attention_mode`` block: plain SDPA, nothing recorded, no head switched off."""
    return _MODE.get() is _DEFAULT


@contextlib.contextmanager
def attention_mode(
    weights: bool = False, qkv: bool = False, ablate: Iterable[tuple[int, int]] = ()
) -> Iterator[Recording]:
    """Run the forwards inside this block with the given mode; yields their :class:`Recording`."""
    off = frozenset((int(layer), int(head)) for layer, head in ablate)
    recording = Recording()
    token = _MODE.set(AttentionMode(weights=weights, qkv=qkv, ablate=off, recording=recording))
    try:
        yield recording
    finally:
        _MODE.reset(token)


def _layer_of(module: torch.nn.Module) -> int | None:
    idx = getattr(module, "layer_idx", None)
    return idx if idx is not None else getattr(module, "bertdemo_layer_idx", None)


def _additive(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """A boolean keep-mask (True = attend) becomes 0 / dtype-min; a float mask is already additive."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def bertdemo_attention(
    module: torch.nn.Module,
    query: torch.Tensor,  # (B, H, S, d)
    key: torch.Tensor,  # (B, H_kv, S_kv, d)
    value: torch.Tensor,  # (B, H_kv, S_kv, d)
    attention_mask: torch.Tensor | None,  # (B, 1, S, S_kv) bool (True = attend), float additive, or None
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The registered attention function: returns ``(output (B, S, H, d), weights (B, H, S, S_kv) or None)``."""
    mode = _MODE.get()
    layer = _layer_of(module)
    off = mode.heads_off(layer) if mode.ablate else []
    if mode.ablate and layer is None:
        raise ValueError("Head ablation needs layer indices: call attention_modes.index_layers(model) first.")
    if mode.qkv and mode.recording is not None and layer is not None:
        mode.recording.qkv[layer] = (query.detach(), key.detach(), value.detach())
    want_weights = mode.weights or bool(kwargs.get("output_attentions"))

    if not want_weights:
        out, _ = sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
        if off:  # (B, S, H, d): zeroing a head's output = zeroing its probabilities before @ V
            out = out.clone()
            out[:, :, off] = 0
        return out, None

    groups = query.shape[1] // key.shape[1]
    if groups > 1:  # grouped-query attention: share each key/value head
        key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, S, S_kv)
    mask = _additive(attention_mask, scores.dtype)
    if mask is None and getattr(module, "is_causal", False) and query.shape[2] > 1:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril(scores.shape[-1] - scores.shape[-2])
        mask = _additive(mask, scores.dtype)
    if mask is not None:
        scores = scores + mask
    probs = torch.nn.functional.softmax(scores, dim=-1)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=module.training)
    if off:
        keep = torch.ones(probs.shape[1], dtype=probs.dtype, device=probs.device)
        keep[off] = 0
        probs = probs * keep[None, :, None, None]
    out = torch.matmul(probs, value).transpose(1, 2).contiguous()  # (B, S, H, d)
    if mode.weights and mode.recording is not None and layer is not None:
        mode.recording.weights[layer] = probs.detach()
    return out, probs


AttentionInterface.register(IMPLEMENTATION, bertdemo_attention)
# Masks as SDPA takes them (bool, True = attend; None when nothing is padded). Without this a
# custom implementation gets no mask at all and padding would be attended to.
AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)


def implementation_for(config) -> str:
    """``"bertdemo"`` for masked-LMs whose attention goes through the interface, else ``"eager"``."""
    try:
        model_class = compat.masked_lm_class(config)
    except (KeyError, ValueError):
        return "eager"
    return IMPLEMENTATION if getattr(model_class, "_supports_attention_backend", False) else "eager"


def supports_modes(model) -> bool:
    """True when ``model`` runs its attention through :func:`bertdemo_attention`."""
    return compat.attn_implementation(model.config) == IMPLEMENTATION


def _attention_class(model) -> type | None:
    recorder = compat.recorded_outputs(model)
    target = recorder.get("attentions")
    return getattr(target, "target_class", target) if target is not None else None


def index_layers(model) -> int:
    """Make sure every self-attention module knows its layer index; returns the number of layers."""
    cls = _attention_class(model)
    modules = [m for m in model.modules() if cls is not None and isinstance(m, cls)]
    for i, module in enumerate(modules):
        if getattr(module, "layer_idx", None) is None:
            module.bertdemo_layer_idx = i
    return len(modules)

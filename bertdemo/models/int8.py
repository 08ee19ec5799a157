"""The opt-in fast mode: a copy of a loaded masked-LM whose Linear layers run in dynamic int8.

Every ``nn.Linear`` (the encoder's query/key/value/output projections and feed-forward layers,
the masked-LM head's transform and its vocabulary projection) becomes torch's dynamically
quantized Linear: weights stored as int8 with one scale per output row, activations quantized
on the fly per call, accumulation in int32, results in float32. On a CPU this reads a quarter of
the weight bytes and uses the int8 dot-product instructions, so a forward pass is 2-4x quicker;
the probabilities move slightly (see tests/test_fill_mask_fast.py for the tolerance).

One copy per loaded model, made on first use and kept on it (``LoadedModel.derived``): a model
evicted from the store takes its copy with it. The copy shares the original's embeddings and
layer norms; only the Linear layers are new (int8 weights: about a quarter of their fp32 size).

Each self-attention module of the copy also gets ``bertdemo_qkv``: its query, key and value
projections stacked into one int8 Linear (3H outputs), which :mod:`bertdemo.models.partial_forward`
runs instead of three. The weights are quantized per output row and the input once per call, so
the fused outputs are exactly the three separate ones; the separate ones stay for the forwards
that transformers' own code runs.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings

import torch
from torch import nn

from bertdemo.models.store import LoadedModel

PRECISION = "dynamic int8 Linear layers (weights int8 per output row, activations int8 per call)"


def _quantize_dynamic():
    """torch's eager dynamic quantization (deprecated in favour of torchao, which is not a dependency here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
    return quantize_dynamic, per_channel_dynamic_qconfig


def int8_copy(model: nn.Module) -> nn.Module:
    """A new dynamic-int8 copy of ``model`` (an eval-mode CPU model); :func:`fast_variant` keeps one per model."""
    linear_tensors = {id(t) for m in model.modules() if isinstance(m, nn.Linear) for t in m.parameters(recurse=False)}
    # everything but the Linear layers' own tensors is shared, not copied (the tied vocabulary
    # projection's weight is the word embeddings': shared too, and quantized into a new tensor)
    shared = {id(t): t for t in (*model.parameters(), *model.buffers()) if id(t) not in linear_tensors}
    shared.update({id(t): t for m in model.modules() if isinstance(m, nn.Embedding) for t in m.parameters()})
    clone = copy.deepcopy(model, memo=shared)
    quantize_dynamic, qconfig = _quantize_dynamic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized-tensor creation warns about its own deprecation
        for name, attention in _self_attentions(model):  # fused from the float weights, before the copy is quantized
            fused = nn.Linear(attention.query.in_features, 3 * attention.query.out_features)
            with torch.no_grad():
                parts = (attention.query, attention.key, attention.value)
                fused.weight.copy_(torch.cat([p.weight for p in parts]))  # (3H, H)
                fused.bias.copy_(torch.cat([p.bias for p in parts]))
            clone.get_submodule(name).bertdemo_qkv = fused.eval()
        quantize_dynamic(clone, {nn.Linear: qconfig}, dtype=torch.qint8, inplace=True)
    return clone.eval()


def _self_attentions(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """(name, module) of the modules with ``query``, ``key`` and ``value`` Linear layers of one shape (BERT-style)."""
    found = []
    for name, module in model.named_modules():
        parts = [getattr(module, attr, None) for attr in ("query", "key", "value")]
        if all(isinstance(p, nn.Linear) and p.bias is not None and p.weight.shape == parts[0].weight.shape
               for p in parts):
            found.append((name, module))
    return found


def fast_variant(loaded: LoadedModel) -> LoadedModel:
    """``loaded`` with its model swapped for the int8 copy. CPU models only (int8 kernels are CPU kernels)."""
    if loaded.device.type != "cpu":
        raise ValueError(
            f"Fast mode (int8) runs on the CPU; {loaded.name} runs on {loaded.device.type}, "
            "where full precision is already quick. Untick Fast mode."
        )
    return dataclasses.replace(loaded, model=loaded.derived("int8", lambda: int8_copy(loaded.model)))

"""Inside BERT, part 5: the parameters per component, summing to the model's total.

Parameters are walked once with ``named_parameters()``, which yields a shared tensor once: the
MLM decoder tied to the word embeddings is counted under the word embeddings, not twice.
Names follow ``modeling_bert.py`` (RoBERTa shares them; other models fall back to their own names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bertdemo.explore.inside_output import decoder_tied

# (pattern on the parameter name, group, component); the first match wins. "{i}" is the layer index.
_RULES = [
    (r"embeddings\.word_embeddings\.", "embeddings", "word (token) embeddings"),
    (r"embeddings\.position_embeddings\.", "embeddings", "position embeddings"),
    (r"embeddings\.token_type_embeddings\.", "embeddings", "segment (token type) embeddings"),
    (r"embeddings\.LayerNorm\.", "embeddings", "LayerNorm"),
    (r"layer\.(\d+)\.attention\.self\.query\.", "layer {i}", "attention Q (query)"),
    (r"layer\.(\d+)\.attention\.self\.key\.", "layer {i}", "attention K (key)"),
    (r"layer\.(\d+)\.attention\.self\.value\.", "layer {i}", "attention V (value)"),
    (r"layer\.(\d+)\.attention\.output\.dense\.", "layer {i}", "attention output projection"),
    (r"layer\.(\d+)\.attention\.output\.LayerNorm\.", "layer {i}", "attention LayerNorm"),
    (r"layer\.(\d+)\.intermediate\.dense\.", "layer {i}", "feed-forward up (D → I)"),
    (r"layer\.(\d+)\.output\.dense\.", "layer {i}", "feed-forward down (I → D)"),
    (r"layer\.(\d+)\.output\.LayerNorm\.", "layer {i}", "feed-forward LayerNorm"),
    (r"pooler\.", "pooler", "pooler dense"),
    (r"(predictions\.transform|lm_head)\.dense\.", "MLM head", "transform dense"),
    (r"(predictions\.transform\.LayerNorm|lm_head\.layer_norm)\.", "MLM head", "transform LayerNorm"),
    (r"(predictions|lm_head)\.decoder\.weight", "MLM head", "decoder weight (not tied)"),
    (r"(predictions|lm_head)\.(decoder\.)?bias", "MLM head", "decoder bias"),
    (r"seq_relationship\.", "NSP head", "next-sentence classifier"),
    (r"layer\.(\d+)\.", "layer {i}", None),  # other layer parameters: by their own name
]


@dataclass
class Component:
    group: str  # "embeddings", "layer 3", "MLM head", …
    name: str
    count: int
    parameters: list[str] = field(default_factory=list)  # the parameter names it covers


@dataclass
class ParamBreakdown:
    model_name: str
    components: list[Component]
    total: int  # sum of the components
    numel_total: int  # sum(p.numel() for p in model.parameters())
    num_layers: int
    tied_decoder: bool
    architecture: str  # print(model)

    def groups(self) -> dict[str, int]:
        """Parameters per group, in order."""
        out: dict[str, int] = {}
        for c in self.components:
            out[c.group] = out.get(c.group, 0) + c.count
        return out

    def layers_identical(self) -> bool:
        """True when every encoder layer has the same components with the same counts."""
        per = {}
        for c in self.components:
            if c.group.startswith("layer "):
                per.setdefault(c.group, []).append((c.name, c.count))
        return len({tuple(v) for v in per.values()}) <= 1


def _classify(name: str) -> tuple[str, str, int]:
    """(group, component, rule index) of one parameter name."""
    for rank, (pattern, group, component) in enumerate(_RULES):
        m = re.search(pattern, name)
        if m:
            if "{i}" in group:
                group = group.format(i=m.group(1))
                component = component or name[m.end():].rsplit(".", 1)[0]
            return group, component, rank
    return "other", name.rsplit(".", 1)[0], len(_RULES)


def param_breakdown(model, model_name: str = "") -> ParamBreakdown:
    """Section 5: parameters per component of ``model``, in model order; they sum to the model's total."""
    components: dict[tuple[str, str], Component] = {}
    order: dict[tuple[str, str], tuple[int, int]] = {}  # groups in model order, components in rule order
    groups: dict[str, int] = {}
    for name, param in model.named_parameters():  # a tied tensor is yielded once
        group, component, rank = _classify(name)
        entry = components.setdefault((group, component), Component(group, component, 0))
        order.setdefault((group, component), (groups.setdefault(group, len(groups)), rank))
        entry.count += param.numel()
        entry.parameters.append(name)
    parts = [components[key] for key in sorted(components, key=order.__getitem__)]
    total = sum(c.count for c in parts)
    numel = sum(p.numel() for p in model.parameters())
    if total != numel:  # cannot happen: every parameter lands in exactly one component
        raise ValueError(f"The components sum to {total:,} but the model has {numel:,} parameters.")
    return ParamBreakdown(
        model_name=model_name or type(model).__name__,
        components=parts,
        total=total,
        numel_total=numel,
        num_layers=int(getattr(model.config, "num_hidden_layers", 0) or 0),
        tied_decoder=decoder_tied(model),
        architecture=str(model),
    )


def as_plain(result: ParamBreakdown) -> dict:
    """JSON-ready: the components with their counts, and the totals (the /param_breakdown numbers)."""
    return {
        "model": result.model_name,
        "components": [{"group": c.group, "component": c.name, "count": c.count} for c in result.components],
        "groups": result.groups(),
        "total": result.total,
        "numel_total": result.numel_total,
        "tied_decoder": result.tied_decoder,
    }

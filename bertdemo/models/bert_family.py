"""The BERT family side by side (tiny … large): parameters per component, by formula, nothing allocated.

Shapes: Turc et al. 2019 ("Well-Read Students Learn Better") for tiny, mini, small and medium;
Devlin et al. 2019 for base and large. Every model has the uncased WordPiece vocabulary
(V = 30522), 512 positions and 2 segments. The counts are those of ``BertForMaskedLM(config)``
(the decoder's weight tied to the word embeddings, its bias its own); ``BertForPreTraining`` adds the
pooler and the next-sentence classifier. Torch-free: the page builds its table before PyTorch loads.
"""

from __future__ import annotations

from dataclasses import dataclass

VOCAB_SIZE, MAX_POSITIONS, TYPE_VOCAB = 30522, 512, 2

# name -> (layers L, hidden H, heads A, feed-forward F)
FAMILY: dict[str, tuple[int, int, int, int]] = {
    "bert-tiny": (2, 128, 2, 512),
    "bert-mini": (4, 256, 4, 1024),
    "bert-small": (4, 512, 8, 2048),
    "bert-medium": (8, 512, 8, 2048),
    "bert-base": (12, 768, 12, 3072),
    "bert-large": (24, 1024, 16, 4096),
}


@dataclass(frozen=True)
class Component:
    """One part of the model: its formula in V, P, H, F, L and its count."""

    name: str
    formula: str
    count: int


@dataclass(frozen=True)
class FamilyMember:
    name: str
    layers: int
    hidden: int
    heads: int
    ffn: int
    components: list[Component]  # summing to ``masked_lm``
    masked_lm: int  # BertForMaskedLM
    nsp_extra: int  # pooler + next-sentence classifier (BertForPreTraining = masked_lm + nsp_extra)

    @property
    def pretraining(self) -> int:
        return self.masked_lm + self.nsp_extra

    def to_json(self) -> dict:
        return {"name": self.name, "layers": self.layers, "hidden": self.hidden, "heads": self.heads,
                "ffn": self.ffn, "masked_lm": self.masked_lm, "pretraining": self.pretraining,
                "components": {c.name: c.count for c in self.components}}


def components(layers: int, hidden: int, ffn: int, vocab: int = VOCAB_SIZE, positions: int = MAX_POSITIONS,
               type_vocab: int = TYPE_VOCAB, tied: bool = True) -> list[Component]:
    """The parameters of ``BertForMaskedLM`` per component (``tied``: decoder weight = word embeddings)."""
    h, f, n = hidden, ffn, layers
    out = [
        Component("word embeddings", "V·H", vocab * h),
        Component("position embeddings", "P·H", positions * h),
        Component("segment embeddings", "2·H", type_vocab * h),
        Component("embedding LayerNorm", "2·H", 2 * h),
        Component("attention Q, K, V, O (all layers)", "L·4·(H² + H)", n * 4 * (h * h + h)),
        Component("feed-forward (all layers)", "L·(2·H·F + F + H)", n * (2 * h * f + f + h)),
        Component("LayerNorms in the layers", "L·2·2·H", n * 4 * h),
        Component("MLM head transform + LayerNorm", "H² + H + 2·H", h * h + 3 * h),
        Component("MLM decoder", "V (bias; weight tied)" if tied else "V·H + V", vocab if tied else vocab * h + vocab),
    ]
    return out


def nsp_extra(hidden: int) -> int:
    """The pooler (H² + H) and the next-sentence classifier (2·H + 2) of ``BertForPreTraining``."""
    return hidden * hidden + hidden + 2 * hidden + 2


def member(name: str) -> FamilyMember:
    """One of :data:`FAMILY` with its counts."""
    if name not in FAMILY:
        raise ValueError(f"Unknown BERT size {name!r}; choose one of {', '.join(FAMILY)}.")
    layers, hidden, heads, ffn = FAMILY[name]
    parts = components(layers, hidden, ffn)
    return FamilyMember(name, layers, hidden, heads, ffn, parts, sum(c.count for c in parts), nsp_extra(hidden))


def family() -> list[FamilyMember]:
    """Every size, smallest first."""
    return [member(name) for name in FAMILY]


def family_markdown(members: list[FamilyMember] | None = None) -> str:
    """The family as one Markdown table: a row per component, a column per size."""
    members = members or family()
    head = "| component | formula | " + " | ".join(m.name.removeprefix("bert-") for m in members) + " |"
    rule = "|---|---|" + "---:|" * len(members)
    shape = [
        "| shape L / H / A / F | | " + " | ".join(f"{m.layers} / {m.hidden} / {m.heads} / {m.ffn}" for m in members)
        + " |"
    ]
    rows = [
        f"| {c.name} | {c.formula} | " + " | ".join(f"{m.components[i].count:,}" for m in members) + " |"
        for i, c in enumerate(members[0].components)
    ]
    total = ["| **BertForMaskedLM** | sum | " + " | ".join(f"**{m.masked_lm:,}**" for m in members) + " |",
             "| + pooler + NSP (BertForPreTraining) | H² + 3·H + 2 | "
             + " | ".join(f"{m.pretraining:,}" for m in members) + " |"]
    return "\n".join([head, rule, *shape, *rows, *total])

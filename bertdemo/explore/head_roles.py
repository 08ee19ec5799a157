"""What the heads became: each attention head labelled by what it measurably does (Clark et al. 2019).

"What does BERT look at?" found heads that put most of their attention on the previous token, on the
next one, on [SEP], on [CLS], or spread it broadly. This module measures every head of a model on a fixed
set of sentences (:data:`HEAD_SENTENCES`, each read alone as ``[CLS] sentence [SEP]``): from each word
(the queries between [CLS] and [SEP]) the share of its attention that goes to the word before, the word
after, itself, [CLS] and [SEP], averaged over all words, and the entropy of its attention as a share of the
most it could be (``ln`` of the positions the word can see: all of them, or for a left-to-right model
those up to itself).

A head's label is the target holding at least :data:`LABEL_SHARE` of its attention on average (the
largest such); else "broad" when its entropy is at least :data:`BROAD_ENTROPY` of the maximum; else
"mixed" (no single target, not spread). The share that earns the label is kept with it.
:func:`roles_over_checkpoints` does the same for a run's checkpoints: when did a previous-word head grow?
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from bertdemo.locks import tokenize
from bertdemo.models import attention_modes
from bertdemo.models.threads import small_forward
from bertdemo.request_budget import WorkBudget, sequence_gflop, unbounded

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

HEAD_SENTENCES = (
    "The cat sat on the mat.",
    "She opened the door and walked into the kitchen.",
    "The children played football in the park after school.",
    "He bought a loaf of bread and some milk at the shop.",
    "The river flows through the city and into the sea.",
    "My brother plays the guitar in a small band.",
    "The old man read the newspaper on the train.",
    "It rained all day, so we stayed at home.",
    "The teacher wrote the answer on the board.",
    "Birds build their nests in the spring.",
    "The museum was closed on monday morning.",
    "We watched a film about a dog who found his way home.",
    "The company opened a new office in london last year.",
    "Paris is the capital and largest city of france.",
    "The game was cancelled because of the storm.",
    "Water boils at one hundred degrees.",
    "She smiled when she saw the letter from her friend.",
    "The war ended in the spring of that year.",
    "They planted apple trees along the road.",
    "The doctor told him to rest for a week.",
)
TARGETS = ("previous word", "next word", "same word", "[CLS]", "[SEP]")
ROLES = (*TARGETS, "broad", "mixed")
LABEL_SHARE = 0.5  # a head earns a target's label when at least this share of its attention goes there
BROAD_ENTROPY = 0.75  # ... or "broad" when its attention's entropy is at least this share of the maximum
MAX_CHECKPOINTS = 12  # a run's checkpoints measured at once (evenly picked, the first and the latest kept)


@dataclass(frozen=True)
class HeadRole:
    """One head: its label, the share that earns it, and every target's share."""

    layer: int
    head: int
    role: str  # one of ROLES
    share: float  # the labelled target's mean share; for "broad" / "mixed": the entropy's share of its maximum
    shares: dict[str, float]  # target -> mean share of the attention from a word
    entropy: float  # mean entropy of a word's attention / its maximum (0..1)


@dataclass
class HeadRoles:
    """Every head of one model, measured on the same sentences."""

    model_name: str
    layers: int
    heads: int
    roles: list[HeadRole]  # layer by layer, head by head
    sentences: int
    words: int  # queries averaged over (per head)
    causal: bool  # a left-to-right model: nothing after a word is visible to it

    def counts(self) -> dict[str, int]:
        """Role -> how many heads carry it (every role, zeros included)."""
        return {role: sum(r.role == role for r in self.roles) for role in ROLES}

    def role_of(self, layer: int, head: int) -> HeadRole:
        return self.roles[layer * self.heads + head]


def _label(shares: dict[str, float], entropy: float) -> tuple[str, float]:
    target = max(TARGETS, key=lambda t: shares[t])
    if shares[target] >= LABEL_SHARE:
        return target, shares[target]
    return ("broad" if entropy >= BROAD_ENTROPY else "mixed"), entropy


def head_roles_gflop(config: Any, sentences: int = len(HEAD_SENTENCES), tokens: int = 16) -> float:
    return sentences * sequence_gflop(config, tokens)


@torch.inference_mode()
def head_roles(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, name: str,
               sentences: tuple[str, ...] | list[str] = HEAD_SENTENCES, budget: WorkBudget | None = None) -> HeadRoles:
    """Label every head of ``model`` by where its attention goes on ``sentences`` (see the module's docstring)."""
    budget = budget or unbounded()
    budget.charge(head_roles_gflop(model.config, len(sentences)), f"{len(sentences)} sentences through {name}",
                  "Use a smaller model.")
    budget.check_time(len(sentences))
    device = next(model.parameters()).device
    enc = tokenize(tokenizer, list(sentences), padding=True, return_tensors="pt")
    with small_forward(enc["input_ids"].numel()):  # a small batch and its small sums: one thread
        with attention_modes.attention_mode(weights=True):
            out = model.base_model(input_ids=enc["input_ids"].to(device),
                                   attention_mask=enc["attention_mask"].to(device), output_attentions=True)
        if not out.attentions:
            raise ValueError(f"{name} returned no attention weights.")
        att = torch.stack([a.float().cpu() for a in out.attentions])  # (L, B, H, S, S)
        L, _B, H, _S, _ = att.shape
        causal = bool(getattr(model.config, "is_decoder", False))
        sums = {t: torch.zeros(L, H, dtype=torch.float64) for t in TARGETS}
        entropy = torch.zeros(L, H, dtype=torch.float64)
        words = 0
        for b, n in enumerate(enc["attention_mask"].sum(dim=1).tolist()):
            if n < 3:
                continue
            q = torch.arange(1, n - 1)  # the words
            a = att[:, b][:, :, q, :n].double()  # (L, H, W, n): from each word to every real position
            for t, cols in (("previous word", q - 1), ("next word", q + 1), ("same word", q),
                            ("[CLS]", torch.zeros_like(q)), ("[SEP]", torch.full_like(q, n - 1))):
                sums[t] += a.gather(3, cols.view(1, 1, -1, 1).expand(L, H, -1, 1)).squeeze(3).sum(dim=2)
            visible = (q + 1 if causal else torch.full_like(q, n)).double()  # positions each word can see
            h = -(a * a.clamp_min(1e-12).log()).sum(dim=3)  # (L, H, W)
            entropy += (h / visible.log().clamp_min(1e-12)).sum(dim=2)
            words += len(q)
        if words == 0:
            raise ValueError("No sentence had a word to measure.")
        roles = []
        for layer in range(L):
            for head in range(H):
                shares = {t: float(sums[t][layer, head] / words) for t in TARGETS}
                ent = float(entropy[layer, head] / words)
                role, share = _label(shares, ent)
                roles.append(HeadRole(layer, head, role, share, shares, ent))
        return HeadRoles(name, L, H, roles, len(sentences), words, causal)


def checkpoints_to_measure(steps: list[int], limit: int = MAX_CHECKPOINTS) -> list[int]:
    """At most ``limit`` of a run's checkpoint steps, evenly spread, the first and the last always kept."""
    steps = sorted(set(steps))
    if len(steps) <= limit:
        return steps
    picks = {steps[round(i * (len(steps) - 1) / (limit - 1))] for i in range(limit)}
    return sorted(picks)


@dataclass
class RolesOverSteps:
    """A run's heads at each measured checkpoint."""

    run_name: str
    steps: list[int]
    measured: list[HeadRoles]

    def first_step_with(self, role: str) -> int | None:
        """The first measured step at which some head carries ``role`` (None: never)."""
        return next((s for s, r in zip(self.steps, self.measured) if r.counts()[role] > 0), None)


def roles_over_checkpoints(run_name: str, checkpoints: list[tuple[int, Any, Any]],
                           budget: WorkBudget | None = None) -> RolesOverSteps:
    """:func:`head_roles` at each (step, model, tokenizer) of a run, lowest step first."""
    budget = budget or unbounded()
    ordered = sorted(checkpoints, key=lambda c: c[0])
    if not ordered:
        raise ValueError(f"{run_name} has no checkpoints to measure.")
    measured = [head_roles(model, tok, f"{run_name} step {step:,}", budget=budget) for step, model, tok in ordered]
    return RolesOverSteps(run_name, [s for s, _m, _t in ordered], measured)

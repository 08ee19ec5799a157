"""Head ablation: switch attention heads off and see what the masked-LM predicts without them.

A head is switched off by multiplying its attention probabilities by 0 (see
:mod:`bertdemo.models.attention_modes`), so its slice of the layer's output is 0 before the
output projection; the rest of the model is untouched. We compare, at every [MASK]:

- the Fill-Mask top-k with all heads and with the chosen heads off (``fill_mask.predict``
  run inside the ablation context);
- the masked-LM loss: the mean over the masks of −log p(target), where the target at each
  mask is the word the learner names for it, or — when none are named — the intact
  model's own top choice. Probabilities are the model's full-vocabulary softmax, read from
  the same forward that gave the top-k: two forwards in all, one with and one without the heads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from bertdemo.explore import fill_mask
from bertdemo.explore.encoding import parse_word_list
from bertdemo.models import attention_modes
from bertdemo.models.store import LoadedModel

_ITEM = re.compile(r"^(\d+)\s*[:.]\s*(\d+|\*)$")


@dataclass
class AblationResult:
    """Fill-Mask and loss with all heads (``before``) and with ``heads`` switched off (``after``)."""

    heads: list[tuple[int, int]]  # (layer, head) pairs switched off, sorted
    before: fill_mask.FillMaskResult
    after: fill_mask.FillMaskResult
    targets: list[str]  # the word scored at each mask
    targets_given: bool  # True: the learner's words; False: the intact model's top choices
    loss_before: float  # mean −log p(target) over the masks, nats
    loss_after: float

    @property
    def loss_change(self) -> float:
        return self.loss_after - self.loss_before

    def table(self) -> list[list]:
        """[mask, rank, before token, before p, after token, after p] per mask and rank, for a table."""
        rows = []
        for b, a in zip(self.before.masks, self.after.masks):
            for rank, (cb, ca) in enumerate(zip(b.candidates, a.candidates), start=1):
                rows.append([b.index + 1, rank, cb.token, float(f"{cb.prob:.3g}"), ca.token, float(f"{ca.prob:.3g}")])
        return rows


def parse_heads(spec: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``"2:0, 3:5, 4:*"`` -> [(2, 0), (3, 5), (4, 0), (4, 1), …]; ``layer:*`` is a whole layer."""
    heads: set[tuple[int, int]] = set()
    for item in re.split(r"[,;\s]+", (spec or "").strip()):
        if not item:
            continue
        match = _ITEM.match(item)
        if not match:
            raise ValueError(f"{item!r} is not layer:head (e.g. 2:0) or layer:* (a whole layer).")
        layer = int(match.group(1))
        if not 0 <= layer < n_layers:
            raise ValueError(f"Layer {layer} does not exist: this model has layers 0 to {n_layers - 1}.")
        if match.group(2) == "*":
            heads.update((layer, h) for h in range(n_heads))
            continue
        head = int(match.group(2))
        if not 0 <= head < n_heads:
            raise ValueError(f"Head {head} does not exist: this model has heads 0 to {n_heads - 1}.")
        heads.add((layer, head))
    if not heads:
        raise ValueError("Name the heads to switch off as layer:head, e.g. 2:0, 3:5 — or 4:* for a whole layer.")
    return sorted(heads)


def _loss(probs: torch.Tensor, tokenizer, words: list[str] | None, ids: list[int]) -> float:
    """Mean −log p over the masks: of ``words[i]`` at mask i when given, else of token ``ids[i]``."""
    if words:
        scores = [fill_mask.score_target(tokenizer, w, probs[i]) for i, w in enumerate(words)]
        bad = next((s for s in scores if s.prob is None), None)
        if bad is not None:
            raise ValueError(f"{bad.word!r} cannot be scored at one mask: {bad.message}.")
        p = torch.tensor([s.prob for s in scores])
    else:
        p = probs[torch.arange(len(ids)), torch.tensor(ids)]
    return float(-p.clamp_min(1e-30).log().mean())


def ablate(
    loaded: LoadedModel,
    text: str,
    text_pair: str | None,
    heads: str | list[tuple[int, int]],
    top_k: int = 5,
    answers: str | list[str] | None = None,
) -> AblationResult:
    """Fill-Mask and masked-LM loss at the masks of ``text``, with all heads and with ``heads`` off."""
    if not attention_modes.supports_modes(loaded.model):
        raise ValueError(f"{loaded.name}'s attention does not run through this app's attention function, "
                         "so its heads cannot be switched off.")
    n_layers = attention_modes.index_layers(loaded.model)
    n_heads = int(loaded.model.config.num_attention_heads)
    off = parse_heads(heads, n_layers, n_heads) if isinstance(heads, str) else sorted(set(heads))
    before = fill_mask.predict(loaded, text, text_pair, top_k, keep_tensors=True)  # forward 1: every head
    with attention_modes.attention_mode(ablate=off):
        after = fill_mask.predict(loaded, text, text_pair, top_k, keep_tensors=True)  # forward 2: heads off
    words = parse_word_list(answers)
    if words and len(words) != len(before.masks):
        raise ValueError(
            f"Give one word per [MASK]: the text has {len(before.masks)} mask(s) and you gave {len(words)} word(s)."
        )
    top_ids = [m.candidates[0].id for m in before.masks]
    tok = loaded.tokenizer
    return AblationResult(
        heads=off,
        before=before,
        after=after,
        targets=words or [m.candidates[0].token for m in before.masks],
        targets_given=bool(words),
        loss_before=_loss(before.probs, tok, words, top_ids),
        loss_after=_loss(after.probs, tok, words, top_ids),
    )

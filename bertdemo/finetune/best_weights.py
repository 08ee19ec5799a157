"""The best evaluation so far on validation and the weights the model had then: what a fine-tuning run keeps when it
chooses its step (or epoch) on validation — transformers' ``load_best_model_at_end``. One home for both run kinds
that choose: the own-data fit (:mod:`bertdemo.finetune.own_fit`, chosen by epoch) and the word tagger
(:mod:`bertdemo.finetune.token_engine`, chosen by step)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class KeptBest:
    """The step whose evaluation ranks highest so far (``rank``: compared as a tuple, higher is better; the earliest
    step wins a tie) and a CPU copy of the model's weights at that step."""

    step: int = -1
    rank: tuple[float, ...] = (-math.inf,)
    weights: dict[str, torch.Tensor] | None = None

    def beats(self, rank: tuple[float, ...]) -> bool:
        """Whether an evaluation ranked ``rank`` would replace the kept one (strictly better)."""
        return rank > self.rank

    def keep(self, step: int, rank: tuple[float, ...], model: torch.nn.Module) -> None:
        """Keep ``model``'s weights as the best, at ``step``, ranked ``rank``."""
        self.step, self.rank = step, rank
        self.weights = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}

    def restore(self, model: torch.nn.Module) -> None:
        """Put the kept weights back into ``model`` (its device kept); nothing when none were kept."""
        if self.weights is not None:
            model.load_state_dict(self.weights)

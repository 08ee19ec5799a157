"""The order probe: does a model know word order? Its guesses for a sentence and for a shuffled copy.

Self-attention treats its input as a set; only the position embeddings tell BERT where a token
sits. A model pretrained without them (Pretrain tab: "no position embeddings") gives the very
same hidden state at the [MASK] for any order of the words — this module measures that.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from bertdemo.explore.encoding import normalise_masks
from bertdemo.explore.fill_mask import FillMaskResult, predict
from bertdemo.models.store import LoadedModel


@dataclass
class OrderProbe:
    """Predictions for the sentence and its shuffled copy, and how far apart the [MASK]'s states are."""

    text: str
    shuffled: str
    original: FillMaskResult
    shuffled_result: FillMaskResult
    max_state_difference: float  # largest |difference| of the first [MASK]'s final hidden state
    model_name: str

    @property
    def order_blind(self) -> bool:
        return self.max_state_difference < 1e-4


def shuffle_words(text: str, seed: int = 0) -> str:
    """The words of `text` in another order (the mask stays one word); the same seed, the same order."""
    words = text.split()
    if len(words) < 2:
        raise ValueError("Give a sentence of at least two words to shuffle.")
    rng = random.Random(seed)
    shuffled = words[:]
    for _ in range(10):  # a different order whenever the words allow one
        rng.shuffle(shuffled)
        if shuffled != words:
            break
    return " ".join(shuffled)


def order_probe(loaded: LoadedModel, text: str, seed: int = 0, top_k: int = 5) -> OrderProbe:
    """Predict the [MASK] of `text` and of a shuffled copy with the same model: one forward each, which
    gives both the candidates and the first [MASK]'s final hidden state."""
    text = normalise_masks((text or "").strip(), loaded.tokenizer.mask_token or "[MASK]")
    original = predict(loaded, text, top_k=top_k, keep_tensors=True)
    shuffled = shuffle_words(text, seed)
    shuffled_result = predict(loaded, shuffled, top_k=top_k, keep_tensors=True)
    difference = (original.hidden[0].float() - shuffled_result.hidden[0].float()).abs().max().item()
    return OrderProbe(text, shuffled, original, shuffled_result, difference, loaded.name)

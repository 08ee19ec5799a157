"""The order probe: does a model know word order? Its guesses for a sentence and for a shuffled copy.

Self-attention treats its input as a set; only the position embeddings tell BERT where a token
sits. A model pretrained without them (Pretrain tab: "no position embeddings") gives the very
same hidden state at the [MASK] for any order of the words — this module measures that.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from bertdemo.explore.fill_mask import FillMaskResult, normalise_masks, predict
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


def shuffle_words(text: str, mask_token: str, seed: int = 0) -> str:
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


def _mask_state(loaded: LoadedModel, text: str) -> torch.Tensor:
    tokenizer = loaded.tokenizer
    enc = tokenizer(text, return_tensors="pt").to(loaded.device)
    position = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero().flatten()[0]
    with torch.inference_mode():
        hidden = loaded.model.base_model(**enc).last_hidden_state  # (1, T, H)
    return hidden[0, position].float().cpu()


def order_probe(loaded: LoadedModel, text: str, seed: int = 0, top_k: int = 5) -> OrderProbe:
    """Predict the [MASK] of `text` and of a shuffled copy with the same model."""
    text = normalise_masks((text or "").strip(), loaded.tokenizer.mask_token or "[MASK]")
    original = predict(loaded, text, top_k=top_k)
    shuffled = shuffle_words(text, loaded.tokenizer.mask_token, seed)
    shuffled_result = predict(loaded, shuffled, top_k=top_k)
    difference = (_mask_state(loaded, text) - _mask_state(loaded, shuffled)).abs().max().item()
    return OrderProbe(text, shuffled, original, shuffled_result, difference, loaded.name)

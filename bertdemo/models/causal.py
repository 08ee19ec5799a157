"""Left-to-right (causal) BERTs: how to tell one, and where it predicts a word.

A left-to-right LM of BERT's shape is transformers' ``BertLMHeadModel`` with ``config.is_decoder = True``:
the same weights as ``BertForMaskedLM`` (encoder + ``cls.predictions``), the only difference the causal mask,
so position i attends to positions 0..i only. It predicts the word at position i from its output at
position i - 1 (the next-word prediction), never from position i itself: the word there, and every word
after it, is invisible to that output. Torch-free.
"""

from __future__ import annotations

from typing import Any

LEFT_TO_RIGHT_NOTE = ("left-to-right LM: it answers from the words before the blank only (the causal mask hides "
                      "the blank and every word after it); its prediction for the blank is its output at the "
                      "position before it")


def is_left_to_right(model_or_config: Any) -> bool:
    """Whether a model (or its config) is a left-to-right LM: a decoder-only BERT-family model."""
    config = getattr(model_or_config, "config", model_or_config)
    return bool(getattr(config, "is_decoder", False)) and not getattr(config, "is_encoder_decoder", False)


def predicting_positions(model_or_config: Any, positions: Any) -> Any:
    """The positions whose outputs predict the words at ``positions`` (ints or a tensor): the same positions for a
    masked LM, the one before each for a left-to-right LM (ValueError for position 0, which nothing precedes)."""
    if not is_left_to_right(model_or_config):
        return positions
    if hasattr(positions, "min"):
        if positions.numel() and int(positions.min()) < 1:
            raise ValueError("A left-to-right model cannot predict the first token: no word comes before it.")
        return positions - 1
    if any(int(p) < 1 for p in positions):
        raise ValueError("A left-to-right model cannot predict the first token: no word comes before it.")
    return [int(p) - 1 for p in positions]


def refuse_left_to_right(model_or_config: Any, model_name: str, view: str, why: str) -> None:
    """ValueError naming the view and why it needs a masked LM, when the model is a left-to-right one."""
    if is_left_to_right(model_or_config):
        raise ValueError(f"{view} needs a masked LM (BERT); {model_name} is a left-to-right LM: {why}")

"""What ``BertForMaskedLM(**inputs)`` returns for the learner's sentence, and what ``BertModel`` returns.

One forward of the loaded masked-LM with ``output_hidden_states=True, output_attentions=True``; every
shape is read from that output (never written down by hand), and the top prediction at the first
``[MASK]`` comes from its ``logits``. ``BertModel`` (the encoder alone) returns ``last_hidden_state``
(the encoder inside the masked-LM computes it in the same forward) and ``pooler_output`` =
``tanh(W·h_[CLS] + b)``, whose weights a masked-LM checkpoint may or may not carry.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bertdemo.explore.inside import encode_for_inside
from bertdemo.explore.nsp import read_tensors
from bertdemo.models.causal import predicting_positions
from bertdemo.models.store import LoadedModel

POOLER_KEYS = ("bert.pooler.dense.weight", "bert.pooler.dense.bias")


@dataclass
class ModelOutputs:
    """Shapes of the forward's outputs (B = 1) and the top word at the first mask."""

    model_name: str
    tokens: list[str]
    logits: tuple[int, ...]  # (1, S, V)
    hidden_states: list[tuple[int, ...]]  # L + 1 entries of (1, S, H): embeddings, then each layer
    attentions: list[tuple[int, ...]]  # L entries of (1, heads, S, S)
    last_hidden_state: tuple[int, ...]  # BertModel: (1, S, H) == hidden_states[-1]
    pooler_output: tuple[int, ...]  # BertModel: (1, H)
    pooler_in_checkpoint: bool  # False: BertModel.from_pretrained would initialise the pooler at random
    mask_position: int | None  # the first [MASK], if any
    top_token: str | None  # argmax of logits[0, mask_position]
    top_prob: float | None

    def to_json(self) -> dict:
        return dict(self.__dict__)


def model_outputs(loaded: LoadedModel, text: str) -> ModelOutputs:
    """One forward of ``loaded`` on ``text``: the shapes it returns and the top word at the first mask."""
    enc = encode_for_inside(loaded, text, limit=loaded.max_length)
    tok = loaded.tokenizer
    with torch.inference_mode():
        out = loaded.model(**enc.tensors, output_hidden_states=True, output_attentions=True)
    positions = [i for i, t in enumerate(enc.input_ids) if t == tok.mask_token_id]
    top_token = top_prob = None
    if positions:
        read = predicting_positions(loaded.model, positions[:1])[0]  # left-to-right: the position before the mask
        probs = out.logits[0, read].float().softmax(-1)
        top_prob, top_id = (float(v) for v in probs.max(-1))
        top_token = tok.convert_ids_to_tokens(int(top_id))
    hidden = int(out.hidden_states[-1].shape[-1])
    return ModelOutputs(
        model_name=loaded.name, tokens=enc.tokens, logits=tuple(out.logits.shape),
        hidden_states=[tuple(h.shape) for h in out.hidden_states],
        attentions=[tuple(a.shape) for a in out.attentions],
        last_hidden_state=tuple(out.hidden_states[-1].shape), pooler_output=(1, hidden),
        pooler_in_checkpoint=len(read_tensors(loaded, POOLER_KEYS)) == len(POOLER_KEYS),
        mask_position=positions[0] if positions else None, top_token=top_token, top_prob=top_prob,
    )

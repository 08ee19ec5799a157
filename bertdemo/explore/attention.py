"""Pure attention extraction: text (+ optional pair) -> tokens and weights [layers, heads, T, T].

Attention is data, not HTML: the result is a numpy array validated against the token
list (as bertviz's ``format_attention`` does), and :func:`select_view` cuts one layer/head
(or the mean over heads) with [CLS]/[SEP] optionally hidden and rows renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bertdemo.explore.fill_mask import normalise_masks
from bertdemo.models.store import LoadedModel
from bertdemo.explore.tokens import MAX_CHARS

MAX_ATTENTION_TOKENS = 128  # beyond this the heatmaps stop being readable


@dataclass
class AttentionResult:
    """Every head's attention for one input."""

    tokens: list[str]  # T tokens, specials included
    special: list[bool]  # True for [CLS]/[SEP]/[PAD]… (length T)
    segments: list[int]  # token_type_id per token (length T)
    attentions: np.ndarray  # (L, H, T, T) float32; row i = how token i attends to every token j
    model_name: str

    def __post_init__(self) -> None:
        if self.attentions.ndim != 4:
            raise ValueError(f"Attention must be [layers, heads, T, T]; got shape {self.attentions.shape}.")
        n_layers, n_heads, t_from, t_to = self.attentions.shape
        if not (len(self.tokens) == t_from == t_to == len(self.special) == len(self.segments)):
            raise ValueError(
                f"Attention covers {t_from}x{t_to} positions but there are {len(self.tokens)} tokens."
            )

    @property
    def num_layers(self) -> int:
        return self.attentions.shape[0]

    @property
    def num_heads(self) -> int:
        return self.attentions.shape[1]


@dataclass
class AttentionView:
    """One heatmap's worth: a square matrix with its token labels."""

    tokens: list[str]
    matrix: np.ndarray  # (T', T')
    title: str
    renormalised: bool


def compute(loaded: LoadedModel, text: str, text_pair: str | None = None) -> AttentionResult:
    """Run the encoder once with ``output_attentions`` and return all layers' weights."""
    if not text or not text.strip():
        raise ValueError("Enter a sentence to see how its tokens attend to each other.")
    if len(text) > MAX_CHARS:
        raise ValueError(f"The text is {len(text):,} characters; the limit is {MAX_CHARS:,}.")
    tok = loaded.tokenizer
    if tok.mask_token:
        text = normalise_masks(text, tok.mask_token)
    pair = text_pair if text_pair and text_pair.strip() else None
    enc = tok(text, pair, return_tensors="pt", truncation=False, return_special_tokens_mask=True, verbose=False)
    special = enc.pop("special_tokens_mask")[0].bool().tolist()
    n = enc["input_ids"].shape[1]
    limit = min(MAX_ATTENTION_TOKENS, loaded.max_length)
    if n > limit:
        raise ValueError(
            f"The input is {n} tokens; the attention view shows at most {limit}. Use a shorter text."
        )
    segments = enc["token_type_ids"][0].tolist() if "token_type_ids" in enc else [0] * n
    enc = {k: v.to(loaded.device) for k, v in enc.items()}
    with torch.inference_mode():
        out = loaded.model.base_model(**enc, output_attentions=True)
    if not out.attentions or out.attentions[0] is None:
        raise ValueError(f"{loaded.name} did not return attention weights.")
    # L tensors of (B=1, H, T, T) -> (L, H, T, T)
    att = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()
    return AttentionResult(
        tokens=tok.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        special=special,
        segments=segments,
        attentions=att,
        model_name=loaded.name,
    )


def _keep(result: AttentionResult, hide_special: bool) -> np.ndarray:
    keep = np.array([not s for s in result.special]) if hide_special else np.ones(len(result.tokens), bool)
    if not keep.any():
        raise ValueError("Nothing left to show once [CLS]/[SEP] are hidden.")
    return keep


def _trim(matrix: np.ndarray, keep: np.ndarray, renormalise: bool) -> np.ndarray:
    """Drop hidden rows/columns (..., T, T) -> (..., T', T'); optionally rescale rows to sum to 1."""
    m = matrix[..., keep, :][..., :, keep]
    if renormalise:
        m = m / np.clip(m.sum(-1, keepdims=True), 1e-9, None)
    return m


def select_view(
    result: AttentionResult,
    layer: int,
    head: int | None,
    hide_special: bool = False,
    renormalise: bool = True,
) -> AttentionView:
    """One layer's head (``head=None``: mean over heads), specials optionally hidden.

    With specials hidden and ``renormalise``, each row is rescaled to sum to 1 over the
    tokens that remain (otherwise rows keep their original weights and sum to < 1).
    """
    if not 0 <= layer < result.num_layers:
        raise ValueError(f"Layer must be 0 to {result.num_layers - 1}.")
    if head is not None and not 0 <= head < result.num_heads:
        raise ValueError(f"Head must be 0 to {result.num_heads - 1}.")
    matrix = result.attentions[layer].mean(0) if head is None else result.attentions[layer, head]  # (T, T)
    keep = _keep(result, hide_special)
    hidden = hide_special and not keep.all()
    tokens = [t for t, k in zip(result.tokens, keep) if k]
    title = f"Layer {layer}, " + ("mean over heads" if head is None else f"head {head}")
    return AttentionView(tokens, _trim(matrix, keep, renormalise and hidden), title, renormalise and hidden)


def all_heads(result: AttentionResult, hide_special: bool = False, renormalise: bool = True) -> np.ndarray:
    """Every layer x head matrix with the same trimming as :func:`select_view`: (L, H, T', T')."""
    keep = _keep(result, hide_special)
    return _trim(result.attentions, keep, renormalise and hide_special and not keep.all())

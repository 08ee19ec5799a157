"""Pure attention extraction: text (+ optional pair) -> tokens and weights [layers, heads, T, T].

Attention is data, not HTML: the result is a numpy array validated against the token
list (as bertviz's ``format_attention`` does). Views cut it for the page:

- :func:`select_view` one layer's head (or the mean over heads), [CLS]/[SEP] optionally hidden
  (rows renormalised or not; the weight that hiding removed is reported), and a sentence
  A ↔ B filter (all, A->B, B->A) as bertviz's ``sentence_b_start`` offers;
- :func:`rollout` attention rollout (Abnar & Zuidema 2020) and :func:`rollout_view`;
- :func:`token_across_layers` where one token looks in every layer (mean over heads);
- :func:`view_csv` the numbers of any view as CSV text; :func:`as_plain` a view as plain values (the API,
  the MCP tool).

Token positions are always the original indices in ``input_ids`` ([CLS] = 0), also when
specials are hidden, so "5: it" is the same token in every view.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np
import torch

from bertdemo.explore.encoding import encode_checked
from bertdemo.limits import MAX_ATTENTION_TOKENS
from bertdemo.models import attention_modes
from bertdemo.models.causal import is_left_to_right
from bertdemo.models.store import LoadedModel
from bertdemo.models.threads import small_forward

DIRECTIONS = ("all", "A->B", "B->A")  # which rows (from) and columns (to) a view keeps


@dataclass
class AttentionResult:
    """Every head's attention for one input."""

    tokens: list[str]  # T tokens, specials included
    special: list[bool]  # True for [CLS]/[SEP]/[PAD]… (length T)
    segments: list[int]  # token_type_id per token (length T)
    attentions: np.ndarray  # (L, H, T, T) float32; row i = how token i attends to every token j
    model_name: str
    sentence_b_start: int | None = None  # first position of sentence B (bertviz's split); None: no B
    causal: bool = False  # a left-to-right model: every weight above the diagonal (a later token) is exactly 0

    def __post_init__(self) -> None:
        if self.attentions.ndim != 4:
            raise ValueError(f"Attention must be [layers, heads, T, T]; got shape {self.attentions.shape}.")
        _n_layers, _n_heads, t_from, t_to = self.attentions.shape
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

    def label(self, position: int) -> str:
        """How the page names a token: its original position and text, e.g. ``"5: it"``."""
        return f"{position}: {self.tokens[position]}"


@dataclass
class AttentionView:
    """One heatmap's worth: a (rows, columns) matrix with the original positions of its tokens."""

    row_tokens: list[str]  # tokens attending (from)
    row_positions: list[int]  # their original indices in input_ids
    tokens: list[str]  # tokens attended to (columns)
    positions: list[int]
    matrix: np.ndarray  # (rows, columns)
    title: str
    renormalised: bool  # rows rescaled to 1 after hiding [CLS]/[SEP]
    removed: float = 0.0  # mean share of a shown row's weight that was on the hidden [CLS]/[SEP]
    direction: str = "all"
    rows_are_layers: bool = False  # token_across_layers: rows are layers, not tokens

    @property
    def row_labels(self) -> list[str]:
        if self.rows_are_layers:
            return [f"layer {layer}" for layer in self.row_positions]
        return [f"{p}: {t}" for p, t in zip(self.row_positions, self.row_tokens)]

    @property
    def labels(self) -> list[str]:
        return [f"{p}: {t}" for p, t in zip(self.positions, self.tokens)]


def compute(loaded: LoadedModel, text: str, text_pair: str | None = None) -> AttentionResult:
    """Run the encoder once, recording every layer's attention weights (remembered with the model: the
    same text again, a slider moved back, is answered without a forward). The result is read-only."""
    pair = text_pair if text_pair and text_pair.strip() else None
    return loaded.remember(("attention", text, pair), lambda: _compute(loaded, text, pair))


def _compute(loaded: LoadedModel, text: str, pair: str | None) -> AttentionResult:
    enc, special = encode_checked(
        loaded, text, pair, MAX_ATTENTION_TOKENS,
        empty="Enter a sentence to see how its tokens attend to each other.",
        too_long="The input is {n} tokens; the attention view shows at most {limit}. Use a shorter text.",
    )
    tok = loaded.tokenizer
    n = enc["input_ids"].shape[1]
    segments = enc["token_type_ids"][0].tolist() if "token_type_ids" in enc else [0] * n
    b_start = _sentence_b_start(enc, special) if pair else None
    inputs = {k: v.to(loaded.device) for k, v in enc.items()}
    with torch.inference_mode(), attention_modes.attention_mode(weights=True), small_forward(n):
        out = loaded.model.base_model(**inputs, output_attentions=True)
    if not out.attentions or out.attentions[0] is None:
        raise ValueError(f"{loaded.name} did not return attention weights.")
    # L tensors of (B=1, H, T, T) -> (L, H, T, T)
    att = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()
    att.flags.writeable = False  # shared by every request that asks the same question
    return AttentionResult(
        tokens=tok.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        special=special,
        segments=segments,
        attentions=att,
        model_name=loaded.name,
        sentence_b_start=b_start,
        causal=is_left_to_right(loaded.model),
    )


def _sentence_b_start(enc, special: list[bool]) -> int | None:
    """Index of B's first token; specials before it ([CLS], A's [SEP]s) count as A, as in bertviz."""
    try:
        seq = enc.sequence_ids(0)
    except (ValueError, AttributeError):  # slow tokenizer: fall back on token_type_ids
        types = enc["token_type_ids"][0].tolist() if "token_type_ids" in enc else []
        return types.index(1) if 1 in types else None
    first_b = next((i for i, s in enumerate(seq) if s == 1), None)
    if first_b is None:
        return None
    while first_b > 0 and special[first_b - 1] and seq[first_b - 1] is None and _is_b_prefix(seq, first_b - 1):
        first_b -= 1
    return first_b


def _is_b_prefix(seq: list, i: int) -> bool:
    """True for a special token directly before B that follows another special (RoBERTa's ``</s></s>``)."""
    return i > 0 and seq[i - 1] is None


# --- views ---------------------------------------------------------------------------------


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


def direction_masks(result: AttentionResult, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows kept, columns kept), each (T,) bool, for a sentence filter: all, A->B or B->A."""
    t = len(result.tokens)
    if direction not in DIRECTIONS:
        raise ValueError(f"The sentence filter must be one of {', '.join(DIRECTIONS)}; got {direction!r}.")
    if direction == "all":
        return np.ones(t, bool), np.ones(t, bool)
    if result.sentence_b_start is None:
        raise ValueError(f"The {direction} filter needs a sentence B: type one, or choose 'all'.")
    in_a = np.arange(t) < result.sentence_b_start
    return (in_a, ~in_a) if direction == "A->B" else (~in_a, in_a)


def _view(
    result: AttentionResult,
    matrix: np.ndarray,  # (T, T), rows sum to 1
    title: str,
    hide_special: bool,
    renormalise: bool,
    direction: str,
) -> AttentionView:
    keep = _keep(result, hide_special)
    hidden = hide_special and not keep.all()
    kept = matrix[keep][:, keep]  # (T', T')
    removed = float(np.mean(1.0 - kept.sum(-1))) if hidden else 0.0
    m = _trim(matrix, keep, renormalise and hidden)
    rows, cols = direction_masks(result, direction)
    rows, cols = rows[keep], cols[keep]
    positions = np.flatnonzero(keep)
    if not rows.any() or not cols.any():
        raise ValueError(f"No tokens left for the {direction} filter once [CLS]/[SEP] are hidden.")
    if direction != "all":
        title += f" · {direction}"
    return AttentionView(
        row_tokens=[result.tokens[p] for p in positions[rows]],
        row_positions=positions[rows].tolist(),
        tokens=[result.tokens[p] for p in positions[cols]],
        positions=positions[cols].tolist(),
        matrix=m[rows][:, cols],
        title=title,
        renormalised=renormalise and hidden,
        removed=removed,
        direction=direction,
    )


def _check_layer(result: AttentionResult, layer: int) -> None:
    if not 0 <= layer < result.num_layers:
        raise ValueError(f"Layer must be 0 to {result.num_layers - 1}.")


def select_view(
    result: AttentionResult,
    layer: int,
    head: int | None,
    hide_special: bool = False,
    renormalise: bool = True,
    direction: str = "all",
) -> AttentionView:
    """One layer's head (``head=None``: mean over heads), specials optionally hidden.

    With specials hidden and ``renormalise``, each row is rescaled to sum to 1 over the
    tokens that remain (otherwise rows keep their original weights and sum to < 1); either
    way ``removed`` says how much weight the hidden tokens held. A direction filter then
    keeps rows of one sentence and columns of the other (rows no longer sum to 1).
    """
    _check_layer(result, layer)
    if head is not None and not 0 <= head < result.num_heads:
        raise ValueError(f"Head must be 0 to {result.num_heads - 1}.")
    matrix = result.attentions[layer].mean(0) if head is None else result.attentions[layer, head]  # (T, T)
    title = f"Layer {layer}, " + ("mean over heads" if head is None else f"head {head}")
    return _view(result, matrix, title, hide_special, renormalise, direction)


def all_heads(result: AttentionResult, hide_special: bool = False, renormalise: bool = True) -> np.ndarray:
    """Every layer x head matrix with the same trimming as :func:`select_view`: (L, H, T', T')."""
    keep = _keep(result, hide_special)
    return _trim(result.attentions, keep, renormalise and hide_special and not keep.all())


def rollout(attentions: np.ndarray) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020), cumulative per layer: (L, H, T, T) -> (L, T, T).

    Each layer's mean over heads is mixed with the identity for the residual connection,
    Â_l = 0.5·A_l + 0.5·I with rows renormalised, and the layers are multiplied through:
    R_0 = Â_0, R_l = Â_l · R_{l-1}. Row i of R_l estimates how much of token i's representation
    after layer l comes from each input token.
    """
    n_layers, _, t, _ = attentions.shape
    eye = np.eye(t, dtype=np.float64)
    out = np.empty((n_layers, t, t), dtype=np.float64)
    r = eye
    for layer in range(n_layers):
        a = 0.5 * attentions[layer].astype(np.float64).mean(0) + 0.5 * eye  # (T, T)
        a /= a.sum(-1, keepdims=True)
        r = a @ r
        out[layer] = r
    return out


def rollout_view(
    result: AttentionResult,
    layer: int,
    hide_special: bool = False,
    renormalise: bool = True,
    direction: str = "all",
) -> AttentionView:
    """Rollout through ``layer`` (0-based, inclusive), trimmed like :func:`select_view`."""
    _check_layer(result, layer)
    matrix = rollout(result.attentions[: layer + 1])[-1]
    return _view(result, matrix, f"Attention rollout through layer {layer}", hide_special, renormalise, direction)


def token_across_layers(
    result: AttentionResult, position: int, hide_special: bool = False, renormalise: bool = True
) -> AttentionView:
    """Where the token at ``position`` looks in every layer (mean over heads): rows = layers."""
    if not 0 <= position < len(result.tokens):
        raise ValueError(f"Token position must be 0 to {len(result.tokens) - 1}.")
    keep = _keep(result, hide_special)
    hidden = hide_special and not keep.all()
    rows = result.attentions[:, :, position, :].mean(1)  # (L, T)
    removed = float(np.mean(1.0 - rows[:, keep].sum(-1))) if hidden else 0.0
    rows = rows[:, keep]
    if renormalise and hidden:
        rows = rows / np.clip(rows.sum(-1, keepdims=True), 1e-9, None)
    positions = np.flatnonzero(keep)
    return AttentionView(
        row_tokens=[result.tokens[position]] * result.num_layers,
        row_positions=list(range(result.num_layers)),
        tokens=[result.tokens[p] for p in positions],
        positions=positions.tolist(),
        matrix=rows,
        title=f"Where {result.label(position)} looks in each layer (mean over heads)",
        renormalised=renormalise and hidden,
        removed=removed,
        rows_are_layers=True,
    )


def view_csv(view: AttentionView) -> str:
    """The view's numbers as CSV: one row per attending token, one column per attended token."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["from \\ to", *view.labels])
    for label, row in zip(view.row_labels, view.matrix):
        writer.writerow([label, *(f"{v:.6f}" for v in row)])
    return buf.getvalue()


def as_plain(result: AttentionResult, view: AttentionView) -> dict:
    """A view as plain values: the model and its shape, the rows (tokens attending) and columns (tokens attended
    to), labelled by original position, and the weights (rows x columns, 6 decimals as in :func:`view_csv`)."""
    return {"model": result.model_name, "layers": result.num_layers, "heads": result.num_heads,
            "tokens": list(result.tokens), "view": view.title, "rows": view.row_labels, "columns": view.labels,
            "weights": np.round(np.asarray(view.matrix, dtype=np.float64), 6).tolist(),
            "renormalised": view.renormalised, "removed": round(view.removed, 6), "direction": view.direction,
            "causal": result.causal}

"""Why this word? Each input token's contribution to a [MASK] prediction, by captum.

* ``f`` = the probability the model gives the target word at the chosen [MASK] (softmax over the whole
  vocabulary). The target is the word named, else the model's top prediction there.
* Integrated gradients (captum ``IntegratedGradients`` on the word-embedding layer's output, as captum's
  ``LayerIntegratedGradients`` on that layer computes them, without a hook on the shared model): the path runs
  from the baseline — every token's word embedding replaced by the ``[PAD]`` embedding, except
  ``[CLS]``, ``[SEP]`` and the ``[MASK]`` asked about, which are the question — to the sentence; position
  and segment embeddings are the same along the path. A token's score is the sum over its embedding's
  dimensions. Completeness: the scores add up to f(input) − f(baseline), up to the integral's error,
  shown as the gap in %.
* Gradient × input (captum ``InputXGradient`` on the same layer's output), summed the same way.
* Occlusion (captum ``FeatureAblation`` on the token ids): f(input) − f(input with that one token
  replaced by ``[PAD]``).
* Beside them, the last layer's attention from the [MASK] (mean over heads) — which is not an
  explanation: it says where the layer read from, not what changed the answer.

The model is shared by every request: nothing here hooks, switches or changes it. The word embeddings are
looked up once, and the gradients are taken with respect to that tensor (``torch.autograd.grad``, as captum
does: no ``.grad`` is written on the weights). Between batches the request's budget is checked: its
deadline, and whether its client is still there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bertdemo.explore.encoding import encode_checked, word_pieces
from bertdemo.limits import MAX_ATTR_TOKENS, MAX_IG_STEPS
from bertdemo.models import attention_modes, partial_forward
from bertdemo.models.causal import refuse_left_to_right
from bertdemo.models.store import LoadedModel
from bertdemo.request_budget import WorkBudget, attribution_gflop, unbounded

METHODS = ("integrated gradients", "gradient x input", "occlusion")
DEFAULT_STEPS = 50
MIN_STEPS = 4
INTERNAL_BATCH = 25  # integrated-gradient steps per forward/backward
OCCLUSION_BATCH = 16  # sentences with one token replaced, per forward
Progress = Callable[[float, str], None]


@dataclass
class Attribution:
    model_name: str
    tokens: list[str]
    mask_position: int  # the [MASK] explained (token position)
    target: str  # the word whose probability is explained
    target_id: int
    prob: float  # f(input): the target's probability at the mask
    baseline_prob: float  # f(baseline)
    steps: int
    scores: dict[str, np.ndarray]  # method -> (T,) per-token scores (0 at [CLS], [SEP] and the mask)
    attention: np.ndarray  # (T,) last layer's attention from the mask, mean over heads
    kept: list[bool]  # the tokens the baseline keeps ([CLS], [SEP], the mask): not attributed

    @property
    def ig_sum(self) -> float:
        return float(self.scores["integrated gradients"].sum())

    @property
    def completeness_gap(self) -> float:
        """|sum of IG scores − (f(input) − f(baseline))| as % of |f(input) − f(baseline)|."""
        delta = self.prob - self.baseline_prob
        return abs(self.ig_sum - delta) / max(abs(delta), 1e-12) * 100


def _inputs(loaded: LoadedModel, text: str, mask_number: int):
    tok = loaded.tokenizer
    if tok.mask_token is None or tok.pad_token_id is None:
        raise ValueError(f"{loaded.name} has no [MASK] or [PAD] token to explain a prediction with.")
    enc, special = encode_checked(loaded, text, None, MAX_ATTR_TOKENS, empty="Type a sentence with [MASK].",
                                  too_long="The sentence has {n} tokens; attribution takes at most {limit}.")
    ids = enc["input_ids"][0]
    masks = (ids == tok.mask_token_id).nonzero().flatten().tolist()
    if not masks:
        raise ValueError("Put [MASK] where the word to explain is.")
    if not 1 <= int(mask_number) <= len(masks):
        raise ValueError(f"Mask {int(mask_number)} does not exist: the sentence has {len(masks)} [MASK].")
    position = masks[int(mask_number) - 1]
    kept = [bool(s) or i == position for i, s in enumerate(special)]
    baseline = ids.clone()
    baseline[~torch.tensor(kept)] = tok.pad_token_id
    return enc, position, kept, baseline


def _embeddings(loaded: LoadedModel) -> torch.nn.Module:
    return loaded.model.get_input_embeddings()


def make_forward(loaded: LoadedModel, enc: dict, position: int, target_id: int,
                 check: Callable[[], None] = lambda: None) -> Callable:
    """f(input_ids) -> (B,) the target's probability at ``position`` (segments and attention mask of ``enc``);
    ``check`` runs before each batch (the request's deadline and client)."""
    model = loaded.model
    extra = {k: v.to(loaded.device) for k, v in enc.items() if k in ("token_type_ids", "attention_mask")}

    def forward(input_ids: torch.Tensor) -> torch.Tensor:
        check()
        b = input_ids.shape[0]
        batch = {"input_ids": input_ids, **{k: v.expand(b, -1) for k, v in extra.items()}}
        rows = torch.arange(b, device=input_ids.device)
        cols = torch.full((b,), position, device=input_ids.device)
        logits = partial_forward.logits_at(model, batch, rows, cols)  # (B, V): the mask's logits only
        return logits.softmax(-1)[:, target_id]

    return forward


def make_embedding_forward(loaded: LoadedModel, enc: dict, position: int, target_id: int,
                           check: Callable[[], None] = lambda: None) -> Callable:
    """g(word_embeddings) -> (B,) the target's probability at ``position`` when the word-embedding layer's
    output is (B, T, E) ``word_embeddings`` (positions, segments and attention mask of ``enc``): the function
    captum's layer methods build with a hook, built here from the model's ``inputs_embeds`` instead."""
    model = loaded.model
    ids = enc["input_ids"].to(loaded.device)
    extra = {k: v.to(loaded.device) for k, v in enc.items() if k in ("token_type_ids", "attention_mask")}

    def forward(word_embeddings: torch.Tensor) -> torch.Tensor:
        check()
        b = word_embeddings.shape[0]
        batch = {"input_ids": ids.expand(b, -1), "inputs_embeds": word_embeddings,
                 **{k: v.expand(b, -1) for k, v in extra.items()}}
        rows = torch.arange(b, device=ids.device)
        cols = torch.full((b,), position, device=ids.device)
        logits = partial_forward.logits_at(model, batch, rows, cols)  # (B, V): the mask's logits only
        return logits.softmax(-1)[:, target_id]

    return forward


def target_for(loaded: LoadedModel, word: str, enc: dict, position: int) -> tuple[str, int]:
    """(word, id): the named word (one vocabulary entry) or the model's top prediction at the mask."""
    tok = loaded.tokenizer
    word = (word or "").strip()
    if word:
        pieces = word_pieces(tok, word)
        if len(pieces) != 1:
            raise ValueError(f"'{word}' is {len(pieces)} pieces ({' '.join(pieces)}) for this tokenizer: name a word "
                             "of one piece.")
        return word, int(tok.convert_tokens_to_ids(pieces[0]))
    with torch.inference_mode():
        logits = loaded.model(**{k: v.to(loaded.device) for k, v in enc.items()}).logits[0, position]
    top = int(logits.argmax())
    return tok.convert_ids_to_tokens(top), top


def attribute(loaded: LoadedModel, text: str, mask_number: int = 1, target: str = "",
              methods: tuple[str, ...] = METHODS, steps: int = DEFAULT_STEPS,
              progress: Progress | None = None, budget: WorkBudget | None = None) -> Attribution:
    """Per-token scores for the target word's probability at the chosen [MASK], by each of ``methods``.

    ``budget``: the request's (its cost is charged once the sentence is read; its deadline and client are
    checked before every forward batch); none: unbounded."""
    from captum.attr import FeatureAblation, InputXGradient, IntegratedGradients

    refuse_left_to_right(loaded.model, loaded.name, "Attribution",
                         "its answer for a [MASK] comes from the position before it and can owe nothing to the words "
                         "after it, so there is no masked word's evidence from both sides to split. Pick a masked-LM model.")
    if not MIN_STEPS <= int(steps) <= MAX_IG_STEPS:
        raise ValueError(f"Steps are {MIN_STEPS} to {MAX_IG_STEPS}.")
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"Methods are {', '.join(METHODS)}.")
    steps = int(steps)
    budget = budget or unbounded()
    enc, position, kept, baseline = _inputs(loaded, text, mask_number)
    tokens = enc["input_ids"].shape[1]
    budget.charge(attribution_gflop(loaded.model.config, tokens, steps, methods),
                  f"{loaded.name} for {', '.join(methods)} on {tokens} tokens"
                  + (f" with {steps} steps" if "integrated gradients" in methods else ""),
                  "Use fewer integrated-gradient steps, a shorter sentence, fewer methods or a smaller model.")
    word, target_id = target_for(loaded, target, enc, position)
    forward = make_forward(loaded, enc, position, target_id, budget.check)
    from_embeddings = make_embedding_forward(loaded, enc, position, target_id, budget.check)
    ids = enc["input_ids"].to(loaded.device)
    base = baseline[None].to(loaded.device)
    with torch.no_grad():  # the word-embedding layer's output for the sentence and the baseline, looked up once
        embedded, base_embedded = _embeddings(loaded)(torch.cat([ids, base])).split(1)
    keep = torch.tensor(kept)
    scores: dict[str, np.ndarray] = {}
    with torch.no_grad():
        prob, base_prob = (float(p) for p in forward(torch.cat([ids, base])))
    for i, method in enumerate(methods):
        if progress is not None:
            progress(i / len(methods), f"Computing {method}" + (f" ({steps} steps)" if "integrated" in method else ""))
        if method == "integrated gradients":
            attr = IntegratedGradients(from_embeddings).attribute(embedded, baselines=base_embedded, n_steps=steps,
                                                                  internal_batch_size=INTERNAL_BATCH)
            scores[method] = _per_token(attr)
        elif method == "gradient x input":
            scores[method] = _per_token(InputXGradient(from_embeddings).attribute(embedded.clone().requires_grad_()))
        else:
            mask = torch.arange(ids.shape[1], device=ids.device)[None]
            with torch.no_grad():
                attr = FeatureAblation(forward).attribute(ids, baselines=loaded.tokenizer.pad_token_id,
                                                          feature_mask=mask, perturbations_per_eval=OCCLUSION_BATCH)
            scores[method] = attr[0].detach().float().cpu().numpy()
        scores[method][keep.numpy()] = 0.0
    budget.check()
    pieces = loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return Attribution(loaded.name, pieces, position, word, target_id, prob, base_prob, steps, scores,
                       last_layer_attention(loaded, enc, position), kept)


def _per_token(attr: torch.Tensor) -> np.ndarray:
    """(1, T, H) attributions on the embedding -> (T,) per token."""
    return attr[0].sum(-1).detach().double().cpu().numpy()


def last_layer_attention(loaded: LoadedModel, enc: dict, position: int) -> np.ndarray:
    """(T,) the last layer's attention weights from ``position`` (mean over heads)."""
    inputs = {k: v.to(loaded.device) for k, v in enc.items()}
    with torch.inference_mode(), attention_modes.attention_mode(weights=True):
        out = loaded.model.base_model(**inputs, output_attentions=True)
    if not out.attentions or out.attentions[-1] is None:
        raise ValueError(f"{loaded.name} did not return attention weights.")
    return out.attentions[-1][0, :, position].mean(0).float().cpu().numpy()  # (H, T, T) -> (T,)


def as_plain(result: Attribution) -> dict:
    """The API's answer: per-token scores per method, the attention, and the completeness figures."""
    return {"model": result.model_name, "tokens": result.tokens, "mask_position": result.mask_position,
            "target": result.target, "probability": round(result.prob, 6),
            "baseline": "every token's word embedding replaced by [PAD]'s, except [CLS], [SEP] and this [MASK]",
            "baseline_probability": round(result.baseline_prob, 6), "steps": result.steps,
            "scores": {m: [round(float(x), 6) for x in s] for m, s in result.scores.items()},
            "last_layer_attention": [round(float(x), 6) for x in result.attention],
            "completeness": {"sum_of_ig": round(result.ig_sum, 6) if "integrated gradients" in result.scores else None,
                             "f_input_minus_f_baseline": round(result.prob - result.baseline_prob, 6),
                             "gap_percent": round(result.completeness_gap, 3)
                             if "integrated gradients" in result.scores else None}}


@dataclass(frozen=True)
class Faithfulness:
    """Integrated gradients checked on a set of sentences: how many add up (the completeness gap within
    ``gap_percent``) and how many removals hurt (the top-scored 20 % of tokens replaced by [PAD] lowers f more
    than a random 20 %, the mean of ``draws`` draws)."""

    sentences: int
    complete: int
    removal_hurts: int
    gap_percent: float


def faithfulness(loaded: LoadedModel, texts: list[str], gap_percent: float = 5.0, draws: int = 5,
                 seed: int = 0) -> Faithfulness:
    """Completeness and removal of integrated gradients at the default steps, on ``texts`` (one [MASK] each)."""
    import random

    rng = random.Random(seed)
    complete = hurts = 0
    for text in texts:
        result = attribute(loaded, text, methods=("integrated gradients",))
        complete += int(result.completeness_gap <= gap_percent)
        enc, position, kept, _ = _inputs(loaded, text, 1)
        f = make_forward(loaded, enc, position, result.target_id)
        free = [i for i, k in enumerate(kept) if not k]
        n = max(1, round(0.2 * len(free)))
        top = sorted(free, key=lambda i: -result.scores["integrated gradients"][i])[:n]

        def removed(positions: list[int], enc=enc, f=f) -> float:
            ids = enc["input_ids"].clone()
            ids[0, positions] = loaded.tokenizer.pad_token_id
            with torch.no_grad():
                return float(f(ids)[0])

        random_drop = np.mean([result.prob - removed(rng.sample(free, n)) for _ in range(draws)])
        hurts += int((result.prob - removed(top)) > random_drop)
    return Faithfulness(len(texts), complete, hurts, gap_percent)

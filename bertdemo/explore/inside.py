"""Inside BERT, part 1: the input encoding shared by every view, and the embeddings step by step.

Every number is recomputed from the weights (``model.bert.embeddings.*``) and checked against
the model's own forward (``output_hidden_states``). The other views live beside this module:
``inside_layer`` (one layer, one head), ``inside_output`` (logit lens, MLM loss) and
``inside_anatomy`` (parameters per component).

Shapes follow ``modeling_bert.py``: hidden states (B, S, D), attention (B, H, S, S). The views
use one sentence (B = 1) and drop the batch axis in what they return: (S, D).
Type ``[SEP]`` inside the text to give the model a sentence pair (segment 1 after it).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from bertdemo.explore.bert_math import additive_mask, cosine, layer_norm, layer_steps
from bertdemo.explore.encoding import encode_checked
from bertdemo.explore.typed_pair import split_pair
from bertdemo.limits import MAX_INSIDE_TOKENS
from bertdemo.models.causal import is_left_to_right, predicting_positions
from bertdemo.models.store import LoadedModel
from bertdemo.models.threads import small_forward

POSITIONS_SHOWN = 128  # the position x position cosine map covers the first this many positions
ORDER_SEED = 0  # the shuffled copy of the order test is the same on every run


@dataclass
class Encoded:
    """One tokenized input, as plain lists (B = 1 dropped), plus the tensors for the model."""

    text: str
    tokens: list[str]  # S tokens, specials included
    input_ids: list[int]
    token_type_ids: list[int]  # segment per token
    special: list[bool]
    tensors: dict  # input_ids, token_type_ids, attention_mask: (1, S) on the model's device

    @property
    def length(self) -> int:
        return len(self.tokens)


def bert_modules(loaded: LoadedModel):
    """The BERT encoder (``model.bert``) of a BERT-family masked-LM, or a ValueError saying why not."""
    model = loaded.model
    model_type = getattr(model.config, "model_type", "?")
    bert = getattr(model, "bert", None)
    if model_type != "bert" or bert is None or not hasattr(bert, "embeddings"):
        raise ValueError(
            f"The step-by-step views follow BERT's own modules (bert.embeddings, bert.encoder.layer[i], "
            f"cls.predictions); {loaded.name} is a {model_type} model. Choose a BERT model, e.g. "
            "embedded/bert-explorer-mlm or a Pretrain checkpoint. The parameter anatomy and the MLM "
            "loss work for every masked-LM."
        )
    return bert


@contextlib.contextmanager
def computing() -> Iterator[None]:
    """Where every Inside BERT number is computed: no autograd, and one intra-op thread, as for any request's
    forward this small (at most :data:`MAX_INSIDE_TOKENS` tokens, a few sentences' worth in the order test:
    :func:`bertdemo.models.threads.small_forward`; on two threads its matrix products waited on the core the
    browser or another request held)."""
    with torch.inference_mode(), small_forward(MAX_INSIDE_TOKENS):
        yield


def encode_for_inside(loaded: LoadedModel, text: str, limit: int = MAX_INSIDE_TOKENS) -> Encoded:
    """Tokenize ``text`` (``[MASK]`` in any case; ``[SEP]`` splits a pair) with a length cap."""
    tok = loaded.tokenizer
    first, second = split_pair((text or "").strip(), None, tok.sep_token)
    enc, special = encode_checked(
        loaded, first, second, limit,
        empty="Enter a sentence to follow through the model.",
        too_long="The input is {n} tokens; the inside views show at most {limit} (every token is expanded "
                 "step by step). Use a shorter sentence.",
    )
    if "token_type_ids" not in enc:
        enc["token_type_ids"] = torch.zeros_like(enc["input_ids"])
    ids = enc["input_ids"][0].tolist()
    return Encoded(
        text=text,
        tokens=tok.convert_ids_to_tokens(ids),
        input_ids=ids,
        token_type_ids=enc["token_type_ids"][0].tolist(),
        special=special,
        tensors={k: v.to(loaded.device) for k, v in enc.items()},
    )


@dataclass
class Trace:
    """The model's own forward on one input, once: what every inside view checks against (B = 1 kept)."""

    enc: Encoded
    hidden_states: tuple[torch.Tensor, ...]  # L + 1 of (1, S, D): the embeddings' output, then each layer's
    attentions: tuple[torch.Tensor, ...]  # L of (1, H, S, S)
    mask_logits: dict[int, torch.Tensor] | None  # position of each [MASK] -> the model's logits for it (V,), read
    # there, or for a left-to-right model at the position before it (:func:`bertdemo.models.causal
    # .predicting_positions`); None for a masked-LM: its head is run when a view asks (:func:`mask_logits`)


def trace(loaded: LoadedModel, text: str) -> Trace:
    """``model(**enc, output_hidden_states=True, output_attentions=True)`` for ``text``, remembered with the
    model (its weights' stamp and the text are the key): the views of one sentence share one forward.

    A masked-LM's forward is ``cls(bert(...)[0])``, its head applied row by row: the trace runs the encoder,
    and :func:`mask_logits` the head at the ``[MASK]`` rows alone, the only logits a view reads, when a view
    reads them (the embeddings and one layer, what a click shows first, need none: the head's (D, V) weights
    cost a small model's click more than a layer). ``tests/test_inside.py`` holds both to ``model(...)``."""
    bert = bert_modules(loaded)
    model = loaded.model
    head = _mlm_head(model)

    def forward() -> Trace:
        enc = encode_for_inside(loaded, text)
        with computing():
            if head is None:  # another head: the model's own forward, every row
                out = model(**enc.tensors, output_hidden_states=True, output_attentions=True)
                rows = _mask_rows(loaded, enc)
                logits = dict(zip(rows, out.logits[0, predicting_positions(model, rows)]))
            else:
                out = bert(**enc.tensors, output_hidden_states=True, output_attentions=True)
                logits = None
        return Trace(enc, tuple(out.hidden_states), tuple(out.attentions), logits)

    return loaded.remember(("inside_trace", text), forward)


def mask_logits(loaded: LoadedModel, text: str) -> dict[int, torch.Tensor]:
    """The model's logits (V,) at each ``[MASK]`` of ``text`` (by its position), as ``model(...).logits`` holds
    them: the head run on :func:`trace`'s last hidden states at those rows alone, remembered with the model."""
    own = trace(loaded, text)
    if own.mask_logits is not None:
        return own.mask_logits
    head = _mlm_head(loaded.model)

    def read() -> dict[int, torch.Tensor]:
        rows = _mask_rows(loaded, own.enc)  # a left-to-right model answers a [MASK] from the position before
        with computing():
            logits = head(own.hidden_states[-1][0, predicting_positions(loaded.model, rows)])
        return dict(zip(rows, logits))

    return loaded.remember(("inside_mask_logits", text), read)


def _mlm_head(model: torch.nn.Module) -> torch.nn.Module | None:
    """A masked-LM's head (``BertLMPredictionHead``: (N, D) -> (N, V)), or None for another head."""
    return getattr(getattr(model, "cls", None), "predictions", None)


def _mask_rows(loaded: LoadedModel, enc: Encoded) -> list[int]:
    return [i for i, t in enumerate(enc.input_ids) if t == loaded.tokenizer.mask_token_id]


# --- 1. embeddings -----------------------------------------------------------------------


@dataclass
class OrderTest:
    """The sentence and a shuffled copy through the encoder, with and without position embeddings.

    Without positions the encoder gets the same bag of vectors, so every token ends with the
    same final hidden state wherever it stands: cosine 1.000 per token, difference ~1e-6.
    """

    tokens: list[str]
    shuffled_tokens: list[str]
    permutation: list[int]  # shuffled[i] is original[permutation[i]]
    cosine_with_positions: list[float]  # per original token: its final state, original vs shuffled
    cosine_without_positions: list[float]
    max_diff_with_positions: float  # max |h_original[perm] - h_shuffled| over all tokens and dims
    max_diff_without_positions: float
    input_bag_diff_without_positions: float  # the input vectors, as sorted bags (0: the same bag)
    causal: bool = False  # a left-to-right model: its causal mask sees order even without positions


@dataclass
class EmbeddingsResult:
    """Token + position + segment embeddings, their sum and the LayerNorm output, per token (S, D)."""

    model_name: str
    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    word: np.ndarray  # (S, D) word_embeddings[input_ids]
    position: np.ndarray  # (S, D) position_embeddings[0..S-1]
    segment: np.ndarray  # (S, D) token_type_embeddings[token_type_ids]
    total: np.ndarray  # (S, D) their sum
    normed: np.ndarray  # (S, D) after LayerNorm = hidden_states[0]
    max_abs_diff: float  # normed vs the model's own hidden_states[0]
    position_cosine: np.ndarray  # (P', P') cosine between learned position vectors 0..P'-1
    max_positions: int  # P: positions the model has
    order: OrderTest | None  # None when asked for without it (the page computes it when its table opens)

    @property
    def shape(self) -> tuple[int, int]:
        return self.word.shape


def embed_parts(bert, input_ids: torch.Tensor, token_type_ids: torch.Tensor, positions: bool = True) -> dict:
    """The embedding sum, part by part, from the weights: each (B, S, D)."""
    emb = bert.embeddings
    seq = input_ids.shape[1]
    word = emb.word_embeddings.weight[input_ids]
    segment = emb.token_type_embeddings.weight[token_type_ids]
    position = emb.position_embeddings.weight[:seq].unsqueeze(0).expand_as(word)  # ids 0..S-1, sliced to S
    total = word + segment + (position if positions else 0.0)
    return {"word": word, "position": position, "segment": segment, "total": total,
            "normed": layer_norm(total, emb.LayerNorm)}


def run_encoder(bert, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Every encoder layer, recomputed from the weights: (B, S, D) -> (B, S, D) (a left-to-right model's with its
    causal mask)."""
    mask = additive_mask(attention_mask, causal=is_left_to_right(bert))
    for layer in bert.encoder.layer:
        hidden = layer_steps(layer, hidden, mask)["output"]
    return hidden


def _permutation(special: list[bool]) -> list[int]:
    """A seeded shuffle of the non-special positions ([CLS]/[SEP] stay where they are)."""
    inner = [i for i, s in enumerate(special) if not s]
    order = list(inner)
    if len(inner) > 1:
        rng = np.random.default_rng(ORDER_SEED)
        order = [inner[i] for i in rng.permutation(len(inner))]
        if order == inner:
            order = order[1:] + order[:1]
    perm = list(range(len(special)))
    for slot, source in zip(inner, order):
        perm[slot] = source
    return perm


def _order_test(loaded: LoadedModel, bert, enc: Encoded, original_state: torch.Tensor) -> OrderTest:
    """``original_state``: the model's own final hidden states for ``enc`` (S, D), already computed."""
    perm = _permutation(enc.special)
    t = enc.tensors
    index = torch.tensor(perm, device=loaded.device)
    shuffled = {k: v[:, index] for k, v in t.items()}  # (1, S) each, tokens and segments moved together
    # the model's own forward, positions included: (S, D) each
    with_pos = [original_state, loaded.model.bert(**shuffled).last_hidden_state[0]]
    bags, without = [], []
    for x in (t, shuffled):
        emb = embed_parts(bert, x["input_ids"], x["token_type_ids"], positions=False)["normed"]
        bags.append(emb[0])
        without.append(run_encoder(bert, emb, x["attention_mask"])[0])
    # token i of the shuffled copy is token perm[i] of the original: compare like with like
    inverse = torch.empty_like(index)
    inverse[index] = torch.arange(len(perm), device=index.device)
    cos_with = cosine(with_pos[0], with_pos[1][inverse])
    cos_without = cosine(without[0], without[1][inverse])
    sorted_bag = [b.sort(dim=0).values for b in bags]
    return OrderTest(
        tokens=enc.tokens,
        shuffled_tokens=[enc.tokens[i] for i in perm],
        permutation=perm,
        cosine_with_positions=cos_with.tolist(),
        cosine_without_positions=cos_without.tolist(),
        max_diff_with_positions=float((with_pos[0][index] - with_pos[1]).abs().max()),
        max_diff_without_positions=float((without[0][index] - without[1]).abs().max()),
        input_bag_diff_without_positions=float((sorted_bag[0] - sorted_bag[1]).abs().max()),
        causal=is_left_to_right(bert),
    )


def position_cosine(bert, limit: int = POSITIONS_SHOWN) -> np.ndarray:
    """Cosine similarity between the learned position vectors 0..limit-1: (P', P')."""
    pos = bert.embeddings.position_embeddings.weight[:limit]  # (P', D)
    unit = pos / pos.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return (unit @ unit.T).detach().float().cpu().numpy()


def embeddings(loaded: LoadedModel, text: str, with_order_test: bool = True) -> EmbeddingsResult:
    """Section 1: each token's word, position and segment vectors, their sum, LayerNorm; the order test
    (three more passes through the model) unless ``with_order_test`` is False."""
    result = loaded.remember(("inside_embeddings", text), lambda: _embeddings(loaded, text))
    return dataclasses.replace(result, order=order_test(loaded, text)) if with_order_test else result


def order_test(loaded: LoadedModel, text: str) -> OrderTest:
    """The sentence and a shuffled copy through the encoder, with and without positions (remembered)."""
    def run() -> OrderTest:
        own = trace(loaded, text)
        with computing():
            return _order_test(loaded, bert_modules(loaded), own.enc, own.hidden_states[-1][0])

    return loaded.remember(("inside_order_test", text), run)


def _embeddings(loaded: LoadedModel, text: str) -> EmbeddingsResult:
    bert = bert_modules(loaded)
    own = trace(loaded, text)
    enc = own.enc
    t = enc.tensors
    with computing():
        parts = embed_parts(bert, t["input_ids"], t["token_type_ids"])
        diff = float((parts["normed"] - own.hidden_states[0]).abs().max())  # vs the embedding layer's output
        cos = loaded.remember(("position_cosine",), lambda: position_cosine(bert))
        arrays = {k: v[0].detach().float().cpu().numpy() for k, v in parts.items()}
    return EmbeddingsResult(
        model_name=loaded.name,
        tokens=enc.tokens,
        input_ids=enc.input_ids,
        token_type_ids=enc.token_type_ids,
        max_abs_diff=diff,
        position_cosine=cos,
        max_positions=int(bert.embeddings.position_embeddings.num_embeddings),
        order=None,
        **arrays,
    )

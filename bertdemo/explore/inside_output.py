"""Inside BERT, parts 3 and 4: the MLM head read at every layer (a logit lens), and the MLM loss.

The head, spelled out from the weights (``cls.predictions``)::

    h (D) -> transform: dense (D x D) + GELU + LayerNorm -> decoder: W_word_embeddingsᵀ + bias
      -> V logits -> softmax -> p(right word) -> −log p

The mean of −log p over the masks is the masked-LM loss; it is checked against the loss the
model computes itself when given ``labels=`` (−100 everywhere but the masks).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from bertdemo.explore.bert_math import cosine, layer_norm, linear
from bertdemo.explore.encoding import parse_word_list, word_pieces
from bertdemo.explore.inside import Encoded, bert_modules, computing, encode_for_inside, mask_logits, trace
from bertdemo.explore.messages import no_head_message
from bertdemo.limits import MAX_LENS_TOP_K, MAX_MASKS
from bertdemo.models.causal import predicting_positions
from bertdemo.models.store import LoadedModel


def _require_head(loaded: LoadedModel) -> None:
    if not loaded.has_mlm_head:
        raise ValueError(no_head_message(loaded.name))


def head_steps(cls, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
    """``BertOnlyMLMHead`` from its weights: (N, D) -> transform (N, D) -> logits (N, V)."""
    t = cls.predictions.transform
    dense = linear(hidden, t.dense)
    activated = t.transform_act_fn(dense)
    transformed = layer_norm(activated, t.LayerNorm)
    decoder = cls.predictions.decoder
    logits = transformed @ decoder.weight.T + cls.predictions.bias  # (N, V)
    return {"dense": dense, "activated": activated, "transformed": transformed, "logits": logits}


def decoder_tied(model) -> bool:
    """True when the decoder's weight is the word-embedding matrix itself (one tensor, counted once)."""
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    return out is not None and inp is not None and out.weight is inp.weight


def _mask_positions(loaded: LoadedModel, enc: Encoded) -> list[int]:
    mask_id = loaded.tokenizer.mask_token_id
    positions = [i for i, t in enumerate(enc.input_ids) if t == mask_id]
    if not positions:
        raise ValueError("No mask found: put [MASK] where a word is missing (or, for the loss, give words to mask).")
    if len(positions) > MAX_MASKS:
        raise ValueError(f"{len(positions)} masks found; use at most {MAX_MASKS}.")
    return positions


# --- 3. the logit lens ---------------------------------------------------------------------


@dataclass
class LensLayer:
    """What the MLM head reads from one layer's hidden state at the mask."""

    layer: int  # 0 = the embeddings' output, l = after encoder layer l
    top: list[tuple[str, float]]  # (token, probability), best first
    final_word_prob: float  # probability of the last layer's top word, read at this layer
    cosine_to_final: float  # cos(h_l, h_L) at the mask


@dataclass
class LogitLensResult:
    model_name: str
    tokens: list[str]
    mask_number: int  # 1-based among the masks
    position: int
    final_word: str
    layers: list[LensLayer]
    max_abs_diff_logits: float  # the lens at the last layer vs the model's own logits


def logit_lens(loaded: LoadedModel, text: str, mask_number: int = 1, top_k: int = 5) -> LogitLensResult:
    """Section 3: the top predictions if the MLM head read each layer's output at one [MASK]."""
    bert_modules(loaded)
    _require_head(loaded)
    if not 1 <= int(top_k) <= MAX_LENS_TOP_K:
        raise ValueError(f"Top-k must be 1 to {MAX_LENS_TOP_K}.")
    own = trace(loaded, text)  # the model's own forward, shared with the other views of this text
    enc = own.enc
    positions = _mask_positions(loaded, enc)
    if not 1 <= int(mask_number) <= len(positions):
        raise ValueError(f"Mask #{int(mask_number)} does not exist: the text has {len(positions)} mask(s).")
    pos = positions[int(mask_number) - 1]
    tok, model = loaded.tokenizer, loaded.model
    read = predicting_positions(model, [pos])[0]  # a left-to-right model: the position before the mask
    with computing():
        states = torch.stack([h[0, read] for h in own.hidden_states])  # (L + 1, D)
        logits = head_steps(model.cls, states)["logits"]  # (L + 1, V)
        diff = float((logits[-1] - mask_logits(loaded, text)[pos]).abs().max())
        probs = logits.float().softmax(-1)
        final_id = int(probs[-1].argmax())
        cos = cosine(states, states[-1:]).float().cpu().tolist()
        top = probs.topk(int(top_k), dim=-1)
    layers = [
        LensLayer(
            layer=i,
            top=[(tok.convert_ids_to_tokens(int(j)), float(p)) for p, j in zip(top.values[i], top.indices[i])],
            final_word_prob=float(probs[i, final_id]),
            cosine_to_final=float(cos[i]),
        )
        for i in range(len(states))
    ]
    return LogitLensResult(loaded.name, enc.tokens, int(mask_number), pos,
                           tok.convert_ids_to_tokens(final_id), layers, diff)


# --- 4. the output and the loss -------------------------------------------------------------


@dataclass
class MaskLoss:
    """One mask through the head: the right word, its logit, probability and −log p."""

    number: int  # 1-based
    position: int
    word: str
    word_id: int
    hidden_norm: float  # |h| of the last hidden state at the mask
    transformed_norm: float  # |transform(h)|
    logit: float  # the right word's logit
    max_logit: float
    rank: int  # 1 = the model's top choice
    prob: float
    neg_log_prob: float
    top: list[tuple[str, float]]  # the model's own top 5 here


@dataclass
class MlmLossResult:
    model_name: str
    text: str  # with the masks, as the model saw it
    tokens: list[str]
    masks: list[MaskLoss]
    mean_loss: float  # mean of −log p over the masks
    model_loss: float  # the model's own loss with labels=
    vocab_size: int
    uniform_loss: float  # ln(V): the loss of a uniform guess
    hidden_size: int
    tied: bool  # decoder weight is the word-embedding matrix
    from_weights: bool  # True: the head recomputed from the weights (BERT); False: the model's logits
    max_abs_diff_logits: float


def mask_words(text: str, words: list[str], mask_token: str) -> tuple[str, list[str]]:
    """A plain sentence and words of it -> the sentence with those words masked, and the words in text order.

    Each word masks its first whole-word occurrence not masked yet (case-insensitive).
    """
    spans = []
    for word in words:
        taken = {start for start, _, _ in spans}
        for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags=re.IGNORECASE):
            if m.start() not in taken:
                spans.append((m.start(), m.end(), word))
                break
        else:
            raise ValueError(f"{word!r} is not a word of the sentence, so it cannot be masked.")
    spans.sort()
    masked, last = [], 0
    for start, end, _ in spans:
        masked += [text[last:start], mask_token]
        last = end
    masked.append(text[last:])
    return "".join(masked), [w for _, _, w in spans]


def _answer_ids(tok, words: list[str]) -> list[int]:
    ids = []
    for word in words:
        pieces = word_pieces(tok, word)
        if len(pieces) != 1:
            raise ValueError(
                f"{word!r} is {len(pieces)} pieces {pieces} for this tokenizer; one [MASK] holds one piece. "
                "Choose a one-piece word, or put one [MASK] per piece and give each piece."
            )
        token_id = tok.convert_tokens_to_ids(pieces[0])
        if token_id is None or token_id == tok.unk_token_id:
            raise ValueError(f"{word!r} is not in the vocabulary.")
        ids.append(int(token_id))
    return ids


def mlm_loss(loaded: LoadedModel, text: str, words: str | list[str]) -> MlmLossResult:
    """Section 4: −log p of the right word at each mask, their mean, and the model's own MLM loss.

    ``text`` with ``[MASK]``s takes one right word per mask, in order; a plain ``text`` takes the
    words of it to mask.
    """
    _require_head(loaded)
    answers = tuple(parse_word_list(words))
    return loaded.remember(("mlm_loss", text, answers), lambda: _mlm_loss(loaded, text, list(answers)))


def _mlm_loss(loaded: LoadedModel, text: str, answers: list[str]) -> MlmLossResult:
    tok, model = loaded.tokenizer, loaded.model
    if not answers:
        raise ValueError("Give the right words, comma-separated: one per [MASK] (or words of a plain sentence to mask).")
    if text and not re.search(r"\[mask\]", text, flags=re.IGNORECASE) and tok.mask_token not in text:
        text, answers = mask_words(text, answers, "[MASK]")
    enc = encode_for_inside(loaded, text, limit=loaded.max_length)
    positions = _mask_positions(loaded, enc)
    if len(answers) != len(positions):
        raise ValueError(f"The text has {len(positions)} mask(s) but {len(answers)} right word(s) were given; "
                         "give one per mask, in order.")
    ids = _answer_ids(tok, answers)
    labels = torch.full_like(enc.tensors["input_ids"], -100)
    labels[0, positions] = torch.tensor(ids, device=labels.device)
    from_weights = getattr(model.config, "model_type", "") == "bert" and hasattr(model, "cls")
    # a left-to-right model predicts each mask from the position before it (its own loss shifts the labels so)
    read = predicting_positions(model, positions)
    with computing():
        out = model(**enc.tensors, labels=labels, output_hidden_states=True)
        hidden = out.hidden_states[-1][0, read]  # (N, D)
        if from_weights:
            steps = head_steps(model.cls, hidden)
            logits, transformed = steps["logits"], steps["transformed"]
        else:  # other architectures: the model's own logits at the masks
            logits, transformed = out.logits[0, read], hidden
        diff = float((logits - out.logits[0, read]).abs().max())
        log_probs = logits.float().log_softmax(-1)  # (N, V)
        target = torch.tensor(ids, device=log_probs.device)
        picked = log_probs[torch.arange(len(ids)), target]  # (N,)
        ranks = (log_probs > picked[:, None]).sum(-1) + 1
        top = log_probs.exp().topk(5, dim=-1)
        masks = [
            MaskLoss(
                number=i + 1, position=pos, word=answers[i], word_id=ids[i],
                hidden_norm=float(hidden[i].norm()), transformed_norm=float(transformed[i].norm()),
                logit=float(logits[i, ids[i]]), max_logit=float(logits[i].max()), rank=int(ranks[i]),
                prob=float(picked[i].exp()), neg_log_prob=float(-picked[i]),
                top=[(tok.convert_ids_to_tokens(int(j)), float(p)) for p, j in zip(top.values[i], top.indices[i])],
            )
            for i, pos in enumerate(positions)
        ]
        mean = float(-picked.mean())
    vocab = int(logits.shape[-1])
    return MlmLossResult(
        model_name=loaded.name, text=enc.text, tokens=enc.tokens, masks=masks, mean_loss=mean,
        model_loss=float(out.loss), vocab_size=vocab, uniform_loss=math.log(vocab),
        hidden_size=int(hidden.shape[-1]), tied=decoder_tied(model), from_weights=from_weights,
        max_abs_diff_logits=diff,
    )


def as_plain(result: MlmLossResult) -> dict:
    """The loss result as JSON-ready values (the /mlm_loss endpoint's numbers)."""
    return {
        "model": result.model_name,
        "text": result.text,
        "masks": [
            {"mask": m.number, "position": m.position, "word": m.word, "id": m.word_id, "prob": m.prob,
             "neg_log_prob": m.neg_log_prob, "rank": m.rank, "logit": m.logit}
            for m in result.masks
        ],
        "mean_loss": result.mean_loss,
        "model_loss": result.model_loss,
        "vocab_size": result.vocab_size,
        "uniform_loss": result.uniform_loss,
        "tied_decoder": result.tied,
    }


def lens_as_plain(result: LogitLensResult) -> dict:
    return {
        "model": result.model_name,
        "mask": result.mask_number,
        "position": result.position,
        "final_word": result.final_word,
        "layers": [
            {"layer": l.layer, "top": [[t, p] for t, p in l.top], "final_word_prob": l.final_word_prob,
             "cosine_to_final": l.cosine_to_final}
            for l in result.layers
        ],
        "max_abs_diff_logits": result.max_abs_diff_logits,
    }


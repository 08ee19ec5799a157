"""Next-sentence prediction: pairs built as pretraining builds them, and P(IsNext) from an NSP head.

`build_pairs` packs text into blocks exactly like the pretraining corpus (documents joined by
[SEP], cut into ``[CLS] body [SEP]`` blocks by `pretrain.data.pack_stream`) and turns them
into ``[CLS] A [SEP] B [SEP]`` pairs with the engine's own `pretrain.masking.make_nsp_pairs`:
B is the real continuation of A (IsNext, label 0) or a span of another block (NotNext, 1).

`predict_is_next` scores the learner's own A and B with the NSP head stored in the model's
checkpoint (``BertForPreTraining`` / ``BertForNextSentencePrediction`` weights, e.g. a Pretrain run
trained with NSP, or bert-base-uncased). Only the head's four tensors are read (``bert.pooler.*``
and ``cls.seq_relationship.*``, with safetensors; a ``.bin`` checkpoint only outside public mode)
and applied to the encoder already in memory: ``tanh(W_pool h_[CLS] + b) -> W_nsp · + b``, the
pooler computed here because a masked-LM is built without one. The head is kept with its loaded
model (``LoadedModel.derived``). A checkpoint with no trained NSP head gets a clear "no NSP head"
answer, never the output of a randomly initialised one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import torch
from safetensors import safe_open
from transformers.utils import cached_file

from bertdemo.explore.input_limits import MAX_PAIRS, MAX_SEQ_LEN, MIN_SEQ_LEN, NSP_MAX_CHARS
from bertdemo.explore.masking_lab import engine_tokenizer
from bertdemo.models import embedded
from bertdemo.models.store import LoadedModel
from bertdemo.pretrain.data import pack_stream
from bertdemo.pretrain.masking import make_nsp_pairs

CORPUS_DOCS = 12  # embedded Wikipedia summaries used when the learner gives no text
NSP_HEAD_KEYS = ("cls.seq_relationship.weight", "cls.seq_relationship.bias", "bert.pooler.dense.weight")
_POOLER_BIAS = "bert.pooler.dense.bias"
SAFETENSORS, SAFETENSORS_INDEX, TORCH_BIN = "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"


@dataclass
class NspPair:
    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    label: int  # 0 IsNext, 1 NotNext
    block: int  # the block A comes from (0-based)
    b_block: int  # the block B comes from

    @property
    def label_name(self) -> str:
        return "IsNext" if self.label == 0 else "NotNext"

    def to_json(self) -> dict:
        return {"tokens": self.tokens, "input_ids": self.input_ids, "token_type_ids": self.token_type_ids,
                "next_sentence_label": self.label, "label": self.label_name, "block": self.block,
                "b_block": self.b_block}


@dataclass
class NspPairs:
    source: str  # "your text" or the embedded corpus
    seq_len: int
    n_blocks: int
    pairs: list[NspPair]

    def to_json(self) -> dict:
        return {"source": self.source, "seq_len": self.seq_len, "n_blocks": self.n_blocks,
                "pairs": [p.to_json() for p in self.pairs]}


def build_pairs(text: str = "", seq_len: int = 48, n_pairs: int = 4, seed: int = 0) -> NspPairs:
    """NSP pairs from the learner's text (or the embedded corpus when empty), as pretraining makes them."""
    seq_len, n_pairs, seed = int(seq_len), int(n_pairs), int(seed)
    if not MIN_SEQ_LEN <= seq_len <= MAX_SEQ_LEN:
        raise ValueError(f"sequence length must be between {MIN_SEQ_LEN} and {MAX_SEQ_LEN} (got {seq_len}).")
    if not 2 <= n_pairs <= MAX_PAIRS:
        raise ValueError(f"number of pairs must be between 2 and {MAX_PAIRS} (got {n_pairs}).")
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (got {seed}).")
    text = (text or "").strip()
    if len(text) > NSP_MAX_CHARS:
        raise ValueError(f"The text is {len(text)} characters long; at most {NSP_MAX_CHARS} are used here.")
    tok = engine_tokenizer()
    docs = [d for d in text.split("\n\n") if d.strip()] if text else embedded.wiki_summaries()[:CORPUS_DOCS]
    source = "your text" if text else f"embedded Wikipedia summaries (first {len(docs)})"
    stream = [i for ids in tok(docs, add_special_tokens=False)["input_ids"] for i in ids + [tok.sep_token_id]]
    blocks = pack_stream(np.asarray(stream, dtype=np.int64), seq_len, tok.cls_token_id, tok.sep_token_id, np.int64)
    if len(blocks) < 2:
        raise ValueError(
            f"The text makes {len(blocks)} block(s) of {seq_len} tokens; NSP needs at least 2 "
            f"(B of a NotNext pair comes from another block). Add text, or shorten the sequence length "
            f"(it has {len(stream)} tokens)."
        )
    blocks = torch.from_numpy(blocks[:n_pairs])  # (B, T)
    g = torch.Generator().manual_seed(seed)
    ids, segments, labels = make_nsp_pairs(blocks, cls_id=tok.cls_token_id, sep_id=tok.sep_token_id, generator=g)
    b_rows = _b_source_rows(blocks, ids, segments, labels)
    pairs = [
        NspPair(tok.convert_ids_to_tokens(ids[i].tolist()), ids[i].tolist(), segments[i].tolist(),
                int(labels[i]), i, b_rows[i])
        for i in range(len(blocks))
    ]
    return NspPairs(source, seq_len, len(blocks), pairs)


def _b_source_rows(blocks: torch.Tensor, ids: torch.Tensor, segments: torch.Tensor, labels: torch.Tensor) -> list[int]:
    """Which block each pair's B span was cut from: its own for IsNext, else found by matching the span."""
    out = []
    for i in range(len(ids)):
        if labels[i] == 0:
            out.append(i)
            continue
        b = ids[i][segments[i] == 1][:-1]  # B without the final [SEP]
        start = int((segments[i] == 0).sum()) - 2  # B starts where A stopped, in its source block
        found = [r for r in range(len(blocks)) if r != i and torch.equal(blocks[r, 1 + start : 1 + start + len(b)], b)]
        out.append(found[0] if found else -1)
    return out


@dataclass
class NspPrediction:
    model_name: str
    available: bool  # False: the model has no trained NSP head (see message)
    message: str
    p_is_next: float | None = None
    tokens: list[str] | None = None
    token_type_ids: list[int] | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class NspHead:
    """The NSP head's tensors from a checkpoint (None when it has none), or which of its keys are missing."""

    tensors: dict[str, torch.Tensor] | None
    missing: list[str]

    def p_is_next(self, hidden_cls: torch.Tensor) -> torch.Tensor:
        """P(IsNext) from the final hidden state of [CLS], (B, H) -> (B,)."""
        t = self.tensors
        pooled = torch.tanh(hidden_cls @ t["bert.pooler.dense.weight"].T + t["bert.pooler.dense.bias"])  # (B, H)
        logits = pooled @ t["cls.seq_relationship.weight"].T + t["cls.seq_relationship.bias"]  # (B, 2)
        return logits.softmax(-1)[:, 0]  # label 0 = IsNext


def _file(loaded: LoadedModel, name: str) -> str | None:
    """``name`` in the model's folder or hub cache (never a download outside a reachable hub), or None."""
    return cached_file(loaded.path, name, local_files_only=loaded.source != "hub",
                       _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False)


def _read_tensors(loaded: LoadedModel, keys: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """Those of ``keys`` the checkpoint holds, read alone (safetensors; ``.bin`` only outside public mode)."""
    index = _file(loaded, SAFETENSORS_INDEX)
    if index is not None:  # sharded: each key from the shard the index names
        with open(index, encoding="utf-8") as fh:
            where = json.load(fh)["weight_map"]
        files = {name: _file(loaded, name) for name in {where[k] for k in keys if k in where}}
        out = {}
        for key in (k for k in keys if k in where and files[where[k]]):
            with safe_open(files[where[key]], framework="pt") as f:
                out[key] = f.get_tensor(key)
        return out
    single = _file(loaded, SAFETENSORS)
    if single is not None:
        with safe_open(single, framework="pt") as f:
            return {k: f.get_tensor(k) for k in keys if k in f.keys()}
    if not loaded.safetensors_only:  # a local server may read a torch checkpoint (weights only, no code)
        binary = _file(loaded, TORCH_BIN)
        if binary is not None:
            state = torch.load(binary, map_location="cpu", weights_only=True)
            return {k: state[k] for k in keys if k in state}
    return {}


def _nsp_head(loaded: LoadedModel) -> NspHead:
    """The head of ``loaded``'s checkpoint, float32 on its device."""
    found = _read_tensors(loaded, (*NSP_HEAD_KEYS, _POOLER_BIAS))
    missing = [k for k in NSP_HEAD_KEYS if k not in found] or ([_POOLER_BIAS] if _POOLER_BIAS not in found else [])
    if missing:
        return NspHead(None, missing)
    return NspHead({k: v.to(device=loaded.device, dtype=torch.float32) for k, v in found.items()}, [])


def predict_is_next(loaded: LoadedModel, sentence_a: str, sentence_b: str) -> NspPrediction:
    """P(IsNext) for ``[CLS] A [SEP] B [SEP]`` from the NSP head stored in the model's folder."""
    sentence_a, sentence_b = (sentence_a or "").strip(), (sentence_b or "").strip()
    if not sentence_a or not sentence_b:
        raise ValueError("Enter both sentence A and sentence B.")
    if getattr(loaded.model.config, "model_type", "") != "bert":
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} is a {loaded.model.config.model_type} model: it was trained without "
            "next-sentence prediction, so it has no NSP head."))
    head = loaded.derived("nsp_head", lambda: _nsp_head(loaded))
    if head.tensors is None:
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} has no trained NSP head (its weights lack {', '.join(head.missing)}), so "
            "P(IsNext) cannot be shown — a random head would only give noise. Use a checkpoint from "
            "the Pretrain tab trained with NSP, or bert-base-uncased when the model hub is reachable."))
    tok = loaded.tokenizer
    enc = tok(sentence_a, sentence_b, return_tensors="pt", truncation=True, max_length=loaded.max_length)
    with torch.inference_mode():
        hidden = loaded.model.base_model(**{k: v.to(loaded.device) for k, v in enc.items()}).last_hidden_state
        p = head.p_is_next(hidden[:, 0].float())[0].item()  # (1, T, H) -> [CLS] -> P(IsNext)
    return NspPrediction(
        loaded.name, True, f"P(IsNext) = {p:.3f} from {loaded.name}'s NSP head", p,
        tok.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))[0].tolist(),
    )

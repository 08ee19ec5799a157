"""Next-sentence prediction: pairs built as pretraining builds them, and P(IsNext) from an NSP head.

`build_pairs` packs text into blocks exactly like the pretraining corpus (documents joined by
[SEP], cut into ``[CLS] body [SEP]`` blocks by `pretrain.blocks.pack_stream`) and turns them
into ``[CLS] A [SEP] B [SEP]`` pairs with the engine's own `pretrain.masking.make_nsp_pairs`:
B is the real continuation of A (IsNext, label 0) or a span of another block (NotNext, 1).

`predict_is_next` scores the learner's own A and B with the NSP head of a model folder
(``BertForPreTraining`` / ``BertForNextSentencePrediction`` checkpoints, e.g. a Pretrain run
trained with NSP, or bert-base-uncased). A folder whose weights hold no trained NSP head gets
a clear "no NSP head" answer, never the output of a randomly initialised one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import BertForNextSentencePrediction

from bertdemo.explore.input_limits import MAX_PAIRS, MAX_SEQ_LEN, MIN_SEQ_LEN
from bertdemo.explore.masking_lab import engine_tokenizer
from bertdemo.models import embedded, policy
from bertdemo.models.init_lock import MODEL_INIT_LOCK
from bertdemo.models.store import LoadedModel
from bertdemo.pretrain.data import pack_stream
from bertdemo.pretrain.masking import make_nsp_pairs

MAX_CHARS = 20_000
CORPUS_DOCS = 12  # embedded Wikipedia summaries used when the learner gives no text
NSP_HEAD_KEYS = ("cls.seq_relationship.weight", "cls.seq_relationship.bias", "bert.pooler.dense.weight")


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
    if len(text) > MAX_CHARS:
        raise ValueError(f"The text is {len(text)} characters long; at most {MAX_CHARS} are used here.")
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


class _NspCache:
    """A couple of NSP models, keyed by folder and its config's modification time."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._items: OrderedDict[tuple, tuple[BertForNextSentencePrediction | None, list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, local_only: bool, device: torch.device):
        try:
            stamp = (Path(path) / "config.json").stat().st_mtime_ns
        except OSError:
            stamp = 0
        key = (path, stamp, str(device))
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            with MODEL_INIT_LOCK:
                model, info = BertForNextSentencePrediction.from_pretrained(
                    path, local_files_only=local_only, dtype=torch.float32, output_loading_info=True,
                    **policy.load_kwargs(),  # public mode: safetensors only, as every other load
                )
            missing = [k for k in info.get("missing_keys", []) if k in NSP_HEAD_KEYS]
            model = None if missing else model.to(device).eval()
            self._items[key] = (model, missing)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
            return self._items[key]


_CACHE = _NspCache()


def predict_is_next(loaded: LoadedModel, sentence_a: str, sentence_b: str) -> NspPrediction:
    """P(IsNext) for ``[CLS] A [SEP] B [SEP]`` from the NSP head stored in the model's folder."""
    sentence_a, sentence_b = (sentence_a or "").strip(), (sentence_b or "").strip()
    if not sentence_a or not sentence_b:
        raise ValueError("Enter both sentence A and sentence B.")
    if getattr(loaded.model.config, "model_type", "") != "bert":
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} is a {loaded.model.config.model_type} model: it was trained without "
            "next-sentence prediction, so it has no NSP head."))
    model, missing = _CACHE.get(loaded.path, loaded.source == "hub cache", loaded.device)
    if model is None:
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} has no trained NSP head (its weights lack {', '.join(missing)}), so "
            "P(IsNext) cannot be shown — a random head would only give noise. Use a checkpoint from "
            "the Pretrain tab trained with NSP, or bert-base-uncased when the model hub is reachable."))
    tok = loaded.tokenizer
    enc = tok(sentence_a, sentence_b, return_tensors="pt", truncation=True, max_length=loaded.max_length)
    with torch.inference_mode():
        logits = model(**{k: v.to(loaded.device) for k, v in enc.items()}).logits  # (1, 2)
    p = torch.softmax(logits.float(), dim=-1)[0, 0].item()  # label 0 = IsNext
    return NspPrediction(
        loaded.name, True, f"P(IsNext) = {p:.3f} from {loaded.name}'s NSP head", p,
        tok.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))[0].tolist(),
    )

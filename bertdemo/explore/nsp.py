"""Next-sentence prediction: pairs built as BERT built them, and P(IsNext) from an NSP head.

`build_pairs` cuts text into whole sentences and pairs them as BERT's ``create_pretraining_data.py``
did: A is one or more sentences of a document; B is the sentences that follow it (IsNext, label 0)
or sentences of another document (NotNext, label 1); never a cut inside a sentence or a word.
(The Pretrain tab's NSP option is simpler: it cuts its packed blocks at a random token.)

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
import random
from dataclasses import dataclass

import torch
from safetensors import safe_open
from transformers.utils import cached_file

from bertdemo.corpus.sentences import normalise_space, split_sentences
from bertdemo.explore.masking_lab import engine_tokenizer
from bertdemo.limits import MAX_PAIRS, MAX_SEQ_LEN, MIN_SEQ_LEN, NSP_MAX_CHARS
from bertdemo.locks import tokenize
from bertdemo.models import embedded
from bertdemo.models.causal import is_left_to_right
from bertdemo.models.store import LoadedModel

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
    block: int  # the document A comes from (0-based)
    b_block: int  # the document B comes from
    sentence_a: str = ""  # A's whole sentences, as written
    sentence_b: str = ""

    @property
    def label_name(self) -> str:
        return "IsNext" if self.label == 0 else "NotNext"

    def to_json(self) -> dict:
        return {"tokens": self.tokens, "input_ids": self.input_ids, "token_type_ids": self.token_type_ids,
                "next_sentence_label": self.label, "label": self.label_name, "document": self.block,
                "b_document": self.b_block, "sentence_a": self.sentence_a, "sentence_b": self.sentence_b}


@dataclass
class NspPairs:
    source: str  # "your text" or the embedded corpus
    seq_len: int  # the most tokens a pair may have, specials included
    n_documents: int
    pairs: list[NspPair]

    def to_json(self) -> dict:
        return {"source": self.source, "seq_len": self.seq_len, "n_documents": self.n_documents,
                "pairs": [p.to_json() for p in self.pairs]}


def document_sentences(document: str) -> list[str]:
    """A document's sentences, cut by the corpus's splitter; a line break inside a document (wrapped
    text) does not end a sentence, a blank line ends the document."""
    return split_sentences(normalise_space(document))


def _fill(sentences: list[tuple[str, list[int]]], start: int, budget: int) -> list[int]:
    """Indices of the whole sentences from ``start`` on that fit in ``budget`` tokens together."""
    out, used = [], 0
    for k in range(start, len(sentences)):
        if used + len(sentences[k][1]) > budget:
            break
        out.append(k)
        used += len(sentences[k][1])
    return out


def build_pairs(text: str = "", seq_len: int = 64, n_pairs: int = 4, seed: int = 0) -> NspPairs:
    """NSP pairs from the learner's text (or the embedded corpus when empty), built as BERT built them.

    Like BERT's ``create_pretraining_data.py``: A is one or more whole sentences of a document; for
    IsNext (half the pairs) B is the sentences that follow A there, for NotNext whole sentences
    from another document (another place of the same one when there is only one). Each pair is at
    most ``seq_len`` tokens, ``[CLS] A [SEP] B [SEP]``: no cut inside a sentence or a word (a sentence
    too long to fit is skipped). Seeded: the same seed, the same pairs.
    """
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
    sentences = []  # per document: (sentence, its token ids)
    for doc in docs:
        parts = document_sentences(doc)
        sentences.append(list(zip(parts, tok(parts, add_special_tokens=False)["input_ids"])) if parts else [])
    budget = seq_len - 3  # [CLS] A [SEP] B [SEP]
    rng = random.Random(seed)
    pairs: list[NspPair] = []
    for d, doc in enumerate(sentences):
        i = 0
        while i < len(doc) and len(pairs) < n_pairs:
            chunk = _fill(doc, i, budget)
            if len(chunk) < 2:  # A and B need a sentence each (a sentence too long to fit is skipped)
                i += max(1, len(chunk))
                continue
            a = chunk[: rng.randint(1, len(chunk) - 1)]
            a_len = sum(len(doc[k][1]) for k in a)
            is_next = rng.random() < 0.5
            b_doc, b = d, chunk[len(a):]
            if not is_next:
                b_doc, b = _random_b(sentences, d, chunk, budget - a_len, rng)
                is_next = not b  # nothing fits elsewhere: keep the true continuation
                if is_next:
                    b_doc, b = d, chunk[len(a):]
            pairs.append(_pair(tok, doc, a, sentences[b_doc], b, 0 if is_next else 1, d, b_doc))
            i = chunk[-1] + 1 if is_next else a[-1] + 1  # NotNext: the unused continuation starts the next pair
        if len(pairs) >= n_pairs:
            break
    if not pairs:
        raise ValueError(
            f"No pair of whole sentences fits in {seq_len} tokens: NSP needs at least 2 sentences (A and B), "
            "each complete. Add text with several sentences, or raise the sequence length."
        )
    return NspPairs(source, seq_len, len(docs), pairs)


def _random_b(sentences: list, d: int, chunk: list[int], budget: int, rng: random.Random) -> tuple[int, list[int]]:
    """Whole sentences for a NotNext B: from another document, or elsewhere in the only one (10 tries)."""
    others = [k for k in range(len(sentences)) if k != d and sentences[k]] or [d]
    for _ in range(10):
        b_doc = rng.choice(others)
        doc = sentences[b_doc]
        start = rng.randrange(len(doc))
        if b_doc == d and chunk[0] <= start <= chunk[-1] + 1:
            continue  # never A itself or its true continuation
        b = _fill(doc, start, budget)
        if b:
            return b_doc, b
    return d, []


def _pair(tok, doc_a: list, a: list[int], doc_b: list, b: list[int], label: int, d: int, b_doc: int) -> NspPair:
    ids_a = [t for k in a for t in doc_a[k][1]]
    ids_b = [t for k in b for t in doc_b[k][1]]
    ids = [tok.cls_token_id, *ids_a, tok.sep_token_id, *ids_b, tok.sep_token_id]
    segments = [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
    return NspPair(tok.convert_ids_to_tokens(ids), ids, segments, label, d, b_doc,
                   " ".join(doc_a[k][0] for k in a), " ".join(doc_b[k][0] for k in b))


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


def read_tensors(loaded: LoadedModel, keys: tuple[str, ...]) -> dict[str, torch.Tensor]:
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
            return {k: f.get_tensor(k) for k in keys if k in f.keys()}  # noqa: SIM118 - a safetensors file, not a dict
    if not loaded.safetensors_only:  # a local server may read a torch checkpoint (weights only, no code)
        binary = _file(loaded, TORCH_BIN)
        if binary is not None:
            state = torch.load(binary, map_location="cpu", weights_only=True)
            return {k: state[k] for k in keys if k in state}
    return {}


def _nsp_head(loaded: LoadedModel) -> NspHead:
    """The head of ``loaded``'s checkpoint, float32 on its device."""
    found = read_tensors(loaded, (*NSP_HEAD_KEYS, _POOLER_BIAS))
    missing = [k for k in NSP_HEAD_KEYS if k not in found] or ([_POOLER_BIAS] if _POOLER_BIAS not in found else [])
    if missing:
        return NspHead(None, missing)
    return NspHead({k: v.to(device=loaded.device, dtype=torch.float32) for k, v in found.items()}, [])


def predict_is_next(loaded: LoadedModel, sentence_a: str, sentence_b: str) -> NspPrediction:
    """P(IsNext) for ``[CLS] A [SEP] B [SEP]`` from the NSP head stored in the model's folder."""
    sentence_a, sentence_b = (sentence_a or "").strip(), (sentence_b or "").strip()
    if not sentence_a or not sentence_b:
        raise ValueError("Enter both sentence A and sentence B.")
    if is_left_to_right(loaded.model):
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} is a left-to-right LM: next-sentence prediction is a task of BERT's (masked-LM) "
            "pretraining, and a left-to-right run trains none, so it has no NSP head. Pick a masked-LM model."))
    if getattr(loaded.model.config, "model_type", "") != "bert":
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} is a {loaded.model.config.model_type} model: it was trained without "
            "next-sentence prediction, so it has no NSP head."))
    head = loaded.derived("nsp_head", lambda: _nsp_head(loaded))
    if head.tensors is None:
        return NspPrediction(loaded.name, False, (
            f"{loaded.name} has no trained NSP head (its weights lack {', '.join(head.missing)}), so "
            "P(IsNext) cannot be shown — a random head would only give noise. Get one with an NSP run: "
            "Pretrain tab, tick 'Next-sentence prediction (NSP) too', Start, then pick its run:… checkpoint "
            "in the Model box; or use bert-base-uncased when the model hub is reachable."))
    tok = loaded.tokenizer
    enc = tokenize(tok, sentence_a, sentence_b, return_tensors="pt", truncation=True, max_length=loaded.max_length)
    with torch.inference_mode():
        hidden = loaded.model.base_model(**{k: v.to(loaded.device) for k, v in enc.items()}).last_hidden_state
        p = head.p_is_next(hidden[:, 0].float())[0].item()  # (1, T, H) -> [CLS] -> P(IsNext)
    return NspPrediction(
        loaded.name, True, f"P(IsNext) = {p:.3f} from {loaded.name}'s NSP head", p,
        tok.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
        enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))[0].tolist(),
    )

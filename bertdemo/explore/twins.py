"""Masked LM beside left-to-right LM: the same held-out words, right-context blanks, a learner's sentence.

BERT's paper (§5.1, Table 5) credits bidirectional pretraining: a masked LM reads the words on both
sides of a gap, a left-to-right (LTR) model only those before it. This module measures what that buys
on two models that share a tokenizer:

* :func:`heldout_by_position`: each model's loss (nats) on the same held-out words — the masked LM with
  only that word hidden, the LTR model from the words before it — overall and by the word's position in
  its sentence, beside the n-gram landmarks counted from the training text
  (:mod:`bertdemo.pretrain.landmarks`): unigram, the word before (the most an LTR guesser could use of
  its neighbours) and both neighbours. The words are the run's own fixed held-out questions
  (:mod:`bertdemo.pretrain.heldout`), in the complete sentences of the held-out blocks, each sentence
  read alone (``[CLS] sentence [SEP]``), so every sentence starts the LTR model blind.
* :func:`cloze_ranks`: each model's rank of the right word on a right-context cloze set (the words after
  the blank decide it: ``data/right_context_cloze.tsv``), with mean reciprocal rank and top-1 / top-5.
* :func:`side_by_side`: the top-k at a learner's blank from both models.

A model is LTR when its config says ``is_decoder`` (a ``BertLMHeadModel``: the causal mask is the only
difference); its distribution for the word at position ``i`` is read from its output at ``i - 1``. Rank 1
is the model's first guess; a rank counts the entries whose logit is strictly higher.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from bertdemo.explore.encoding import chosen_words, normalise_masks, word_pieces
from bertdemo.locks import tokenize, tokenizer_lock
from bertdemo.models.threads import small_forward
from bertdemo.pretrain.config import check_block_starts
from bertdemo.pretrain.heldout import IGNORE_INDEX, heldout_questions
from bertdemo.pretrain.landmarks import NgramCounts
from bertdemo.pretrain.masking import allowed_pieces, continuation_ids, mask_contexts
from bertdemo.request_budget import WorkBudget, sequence_gflop, unbounded

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from bertdemo.models.loading import LoadedModel

RIGHT_CONTEXT_CLOZE = Path(__file__).resolve().parents[2] / "data" / "right_context_cloze.tsv"
MAX_HELDOUT_BLOCKS = 64  # held-out blocks read per comparison (each ~19 questions, one forward each for the MLM)
DEFAULT_HELDOUT_BLOCKS = 16
HELDOUT_LOSS_CACHE_BYTES = 4 << 20  # a model's kept held-out losses (per block: ~19 floats; far under this)
MAX_SENTENCE_TOKENS = 62  # a held-out sentence longer than this is skipped (its own input stays short)
MAX_TWIN_TOP_K = 20
MAX_TWIN_TOKENS = 64  # the learner's sentence
SENTENCE_ENDS = (".", "!", "?")
POSITION_BUCKETS = ((1, 1), (2, 2), (3, 3), (4, 5), (6, 8), (9, 12), (13, 20), (21, MAX_SENTENCE_TOKENS))
LANDMARK_SERIES = {"unigram": "unigram",
                   "left": "word before (bigram)",
                   "both": "both neighbours"}
QUESTIONS_PER_BATCH = 64
T = TypeVar("T")


@dataclass(frozen=True)
class Twin:
    """One model of the pair: the name the page shows, the model and its tokenizer; ``loaded``: the model store's
    entry it came from, which keeps what is worked out once per model (its vocabulary's digest, the held-out
    corpus read with its tokenizer) for the next request."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    loaded: LoadedModel | None = field(default=None, compare=False, repr=False)

    def kept(self, key: str, build: Callable[[], T]) -> T:
        """``build()``, kept with the store's model when the twin has one (:meth:`LoadedModel.derived`)."""
        return build() if self.loaded is None else self.loaded.derived(key, build)

    def kept_losses(self, block_keys: list[str]) -> dict[int, np.ndarray]:
        """The held-out losses this model kept, by block index (keyed by its weights and the block; none without a
        store entry)."""
        if self.loaded is None:
            return {}
        cache, stamp = self._losses()
        kept = {b: cache.get((stamp, key)) for b, key in enumerate(block_keys)}
        return {b: values for b, values in kept.items() if values is not None}

    def losses_by_block(self, blocks: list[BlockQuestions], kept: dict[int, np.ndarray],
                        losses: Callable[[Twin, list[np.ndarray], list[tuple[int, int]], WorkBudget], np.ndarray],
                        budget: WorkBudget) -> np.ndarray:
        """``losses`` of every question of ``blocks``, in order: the blocks not ``kept`` (:meth:`kept_losses`)
        read now in one pass, and kept with the store's model."""
        missing = [b for b in range(len(blocks)) if b not in kept]
        sentences, asked = _joined([blocks[b] for b in missing])
        values = losses(self, sentences, asked, budget) if asked else np.zeros(0)
        values.setflags(write=False)  # kept and shared: read-only
        read, start = dict(kept), 0
        for b in missing:
            read[b], start = values[start : start + len(blocks[b].asked)], start + len(blocks[b].asked)
        if self.loaded is not None and missing:
            cache, stamp = self._losses()
            for b in missing:
                cache.put((stamp, blocks[b].key), read[b])
        return np.concatenate([read[b] for b in range(len(blocks))])

    def _losses(self) -> tuple[Any, int]:
        from bertdemo.models.loading import weights_stamp

        return self.loaded.cache("held-out losses", HELDOUT_LOSS_CACHE_BYTES), weights_stamp(self.model)

    def vocabulary(self) -> str:
        """A digest of the tokenizer's vocabulary (token -> id): equal digests, the same ids for the same pieces."""
        return self.kept("vocabulary digest", lambda: vocabulary_digest(self.tokenizer))

    @property
    def objective(self) -> str:
        """"ltr" for a left-to-right model (``config.is_decoder``), else "mlm"."""
        return "ltr" if bool(getattr(self.model.config, "is_decoder", False)) else "mlm"

    @property
    def label(self) -> str:
        kind = "left-to-right LM" if self.objective == "ltr" else "masked LM"
        return f"{self.name} ({kind})"


def twin_of(loaded: LoadedModel) -> Twin:
    """A loaded model of the store as a :class:`Twin`."""
    return Twin(loaded.name, loaded.model, loaded.tokenizer, loaded)


def vocabulary_digest(tokenizer: PreTrainedTokenizerBase) -> str:
    """SHA-1 of the vocabulary's (token, id) pairs in id order."""
    pairs = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    return hashlib.sha1(json.dumps(pairs).encode("utf-8")).hexdigest()


def check_pair(mlm: Twin, ltr: Twin) -> None:
    """ValueError unless ``mlm`` is a masked LM and ``ltr`` a left-to-right one over the same vocabulary."""
    if mlm.objective != "mlm":
        raise ValueError(f"{mlm.name} is a left-to-right model: pick a masked LM on the masked-LM side.")
    if ltr.objective != "ltr":
        raise ValueError(f"{ltr.name} is a masked LM, not a left-to-right one: pick a left-to-right model "
                         "(a run trained with the left-to-right objective).")
    if mlm.tokenizer is not ltr.tokenizer and mlm.vocabulary() != ltr.vocabulary():
        raise ValueError(f"{mlm.name} and {ltr.name} use different vocabularies: the same words cannot be compared.")


def _head(model: Any):
    """The prediction head of a BERT-family LM (``BertForMaskedLM`` / ``BertLMHeadModel``: ``cls``)."""
    head = getattr(model, "cls", None)
    if head is None:
        raise ValueError(f"{type(model).__name__} has no BERT prediction head: compare BERT-family models.")
    return head


def _device(model: Any) -> torch.device:
    return next(model.parameters()).device


@torch.inference_mode()
def _logits_at(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
               rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """(M, V) float32 logits of ``model`` at (row, col) positions of a batch: the head on those outputs only (a
    small batch on one thread: :func:`~bertdemo.models.threads.small_forward`)."""
    device = _device(model)
    with small_forward(input_ids.numel()):
        out = model.base_model(input_ids=input_ids.to(device),
                               attention_mask=None if attention_mask is None else attention_mask.to(device))
        hidden = out.last_hidden_state[rows.to(device), cols.to(device)]
        return _head(model)(hidden).float().cpu()


def _ranks(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(M,) rank of each target among its row of logits: 1 + the entries with a strictly higher logit."""
    true = logits.gather(1, targets[:, None])
    return (logits > true).sum(dim=1) + 1


# --- held-out words by position ------------------------------------------------------------------------------
@dataclass
class HeldoutComparison:
    """Both models and the landmarks on the same held-out words: nats per word, overall and per bucket."""

    mlm_name: str
    ltr_name: str
    buckets: list[str]  # "1", "2", "4–5", ... (position of the word in its sentence, 1 = first word)
    counts: list[int]  # words per bucket
    loss: dict[str, list[float]]  # series -> mean nats per bucket (nan for an empty bucket)
    overall: dict[str, float]  # series -> mean nats over every word
    questions: int
    sentences: int
    blocks: int
    series_order: list[str] = field(default_factory=list)  # the models first, then the landmarks

    def winner_note(self) -> str:
        """One sentence: how much lower the masked LM's loss is than the LTR model's, first words and the rest."""
        m, l = self.overall[self.mlm_name], self.overall[self.ltr_name]
        note = (f"Over {self.questions:,} held-out words, {self.mlm_name} (masked LM) averages {m:.2f} nats and "
                f"{self.ltr_name} (left-to-right) {l:.2f}: "
                + (f"the masked LM lower by {l - m:.2f} nats per word " if m < l else
                   f"the left-to-right model lower by {m - l:.2f} nats per word " if l < m else "the same loss ")
                + f"(perplexity {math.exp(m):,.1f} vs {math.exp(l):,.1f}).")
        return note + self.training_note()

    def training_note(self) -> str:
        """What the pair can show yet, read off the landmarks: "" when a model already beats the word-before
        guesser; else a sentence saying that neither has learned much of context, so the pair cannot yet
        show what reading both sides buys (the comparison would mislead without it)."""
        left = self.overall.get(LANDMARK_SERIES["left"])
        m, l = self.overall[self.mlm_name], self.overall[self.ltr_name]
        if left is None or min(m, l) < left:
            return ""
        return (f" Neither model beats the word-before guesser yet ({left:.2f} nats): both have learned which words "
                "are common and little of their context, so this pair cannot show yet what reading both sides "
                "buys. Train the twins longer (Pretrain → Train both) and compare them here.")


def sentence_spans(block: np.ndarray, end_ids: set[int], boundary_ids: set[int],
                   opens_text: bool = False) -> list[tuple[int, int]]:
    """(start, stop) of the complete sentences of one packed block: a span starts right after a sentence end
    or a [SEP] and runs through its sentence end (". ! ?"); a text that stops without one is no sentence. Spans
    longer than :data:`MAX_SENTENCE_TOKENS` go. At the block's start, after its [CLS], a span starts only where the
    block opens with a text's start (``opens_text``, :func:`blocks_opening_texts`); else it begins mid-text."""
    spans: list[tuple[int, int]] = []
    start = None
    for i, tok in enumerate(block.tolist()):
        if tok in boundary_ids:  # after a [SEP] a new text starts; [CLS] opens the block, mid-text unless packed so
            start = i + 1 if i > 0 or opens_text else None
        elif tok in end_ids:
            if start is not None and i + 1 - start <= MAX_SENTENCE_TOKENS:
                spans.append((start, i + 1))
            start = i + 1
    return [s for s in spans if s[1] > s[0]]


def _bucket_of(position: int) -> int:
    for b, (lo, hi) in enumerate(POSITION_BUCKETS):
        if lo <= position <= hi:
            return b
    return len(POSITION_BUCKETS) - 1


def bucket_labels() -> list[str]:
    return [str(lo) if lo == hi else (f"{lo}+" if hi >= MAX_SENTENCE_TOKENS else f"{lo}–{hi}")
            for lo, hi in POSITION_BUCKETS]


def heldout_gflop(config: Any, questions: int, sentences: int, tokens: int = 32) -> float:
    """The comparison's cost: one masked-LM forward per question, one LTR forward per sentence."""
    return (questions + sentences) * sequence_gflop(config, tokens)


@dataclass(frozen=True)
class HeldoutAsked:
    """The held-out questions of some blocks, inside their complete sentences: per block its sentences and
    questions, and per question (in order) the word, its position in its sentence (1 = first) and its
    neighbours there."""

    questions: list[BlockQuestions]
    words: np.ndarray
    positions: np.ndarray
    left: np.ndarray
    right: np.ndarray


def blocks_opening_texts(blocks: np.ndarray, sep_id: int, block_starts: str = "anywhere") -> list[bool]:
    """Which of consecutive packed ``blocks`` (``[CLS] body [SEP]``) open with a text's start. Packed "anywhere"
    none does (a block is cut from one stream of texts); packed at a text's start
    (:data:`bertdemo.pretrain.config.BLOCK_STARTS`) the first does (a held-out split begins with its first text) and
    each one after a block whose body ends a text (holds a [SEP]): a text longer than a body runs on into the next
    block, which then begins in its middle."""
    check_block_starts(block_starts)
    if block_starts == "anywhere":
        return [False] * len(blocks)
    return [b == 0 or bool((np.asarray(blocks[b - 1])[1:-1] == sep_id).any()) for b in range(len(blocks))]


def heldout_asked(tok: PreTrainedTokenizerBase, blocks: np.ndarray, block_starts: str = "anywhere") -> HeldoutAsked:
    """The fixed held-out questions (:func:`~bertdemo.pretrain.heldout.heldout_questions`) of ``blocks`` that lie in
    complete sentences (:func:`sentence_spans`; ``block_starts``: how the blocks were packed), each sentence read
    alone (``[CLS] sentence [SEP]``); ValueError when there is none."""
    blocks = np.asarray(blocks, dtype=np.int64)
    specials = list(tok.all_special_ids)
    q = heldout_questions(blocks, specials, tok.mask_token_id, max_tokens=len(blocks) * blocks.shape[1])
    end_ids = {i for i in tok.convert_tokens_to_ids(list(SENTENCE_ENDS)) if i is not None and i != tok.unk_token_id}
    boundary = {i for i in (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id) if i is not None}
    questions: list[BlockQuestions] = []  # each block's sentences and the questions asked in them
    opening = blocks_opening_texts(blocks, tok.sep_token_id, block_starts)
    for b, block in enumerate(blocks):
        sentences_b: list[np.ndarray] = []  # [CLS] words [SEP]
        asked_b: list[tuple[int, int]] = []  # (sentence, index in its input) of each question
        for start, stop in sentence_spans(block, end_ids, boundary, opening[b]):
            cols = [c for c in range(start, stop) if q.labels[b, c] != IGNORE_INDEX]
            if not cols:
                continue
            asked_b += [(len(sentences_b), c - start + 1) for c in cols]
            sentences_b.append(np.concatenate([[tok.cls_token_id], block[start:stop], [tok.sep_token_id]]))
        questions.append(BlockQuestions(_block_key(block, opening[b]), sentences_b, asked_b))
    sentences, asked = _joined(questions)
    if not asked:
        raise ValueError("The held-out blocks hold no complete sentence with a held-out question: read more blocks.")
    return HeldoutAsked(questions, np.array([sentences[s][i] for s, i in asked]), np.array([i for _s, i in asked]),
                        np.array([sentences[s][i - 1] for s, i in asked]), np.array([sentences[s][i + 1] for s, i in asked]))


def heldout_landmarks(tok: PreTrainedTokenizerBase, blocks: np.ndarray, counts: NgramCounts,
                      block_starts: str = "anywhere") -> dict[str, np.ndarray]:
    """What :class:`RecordedLandmarks` keeps of ``blocks``' questions: each question's word and neighbours, and its
    log-probability under every landmark counted in ``counts`` (the training text, which a page does not ship)."""
    asked = heldout_asked(tok, blocks, block_starts)
    logp = counts.log_probs(asked.words, asked.left, asked.right)
    return {"words": asked.words, "left": asked.left, "right": asked.right,
            **{f"logp_{key}": logp[key].astype(np.float64) for key in LANDMARK_SERIES}}


@dataclass(frozen=True)
class RecordedLandmarks:
    """The landmarks of a fixed set of held-out questions, recorded when the training text was at hand
    (:func:`heldout_landmarks`): answers :meth:`log_probs` for exactly those questions, or a leading prefix of them
    (fewer blocks read), as :class:`~bertdemo.pretrain.landmarks.NgramCounts` would."""

    arrays: dict[str, np.ndarray]

    def log_probs(self, words: np.ndarray, left: np.ndarray, right: np.ndarray) -> dict[str, np.ndarray]:
        n = len(words)
        for name, given in (("words", words), ("left", left), ("right", right)):
            if n > len(self.arrays[name]) or not np.array_equal(self.arrays[name][:n], np.asarray(given)):
                raise ValueError("These held-out questions are not the ones the landmarks were recorded for.")
        return {key: self.arrays[f"logp_{key}"][:n] for key in LANDMARK_SERIES}


def heldout_by_position(mlm: Twin, ltr: Twin, heldout_blocks: np.ndarray, counts: NgramCounts | RecordedLandmarks,
                        max_blocks: int = DEFAULT_HELDOUT_BLOCKS, budget: WorkBudget | None = None,
                        block_starts: str = "anywhere") -> HeldoutComparison:
    """Each model's loss on the same held-out words, by position in the sentence, beside the landmarks.

    ``heldout_blocks``: (N, T) packed held-out blocks (:func:`bertdemo.pretrain.data.prepare_blocks`), whose
    fixed questions (:func:`~bertdemo.pretrain.heldout.heldout_questions`) inside complete sentences are the
    words asked; ``counts``: the n-grams of the training blocks (:func:`~bertdemo.pretrain.landmarks.count_ngrams`);
    ``block_starts``: how the blocks were packed (:func:`sentence_spans`). The masked LM reads the sentence with that one word hidden; the LTR model the sentence (its output before
    the word; the words after it cannot reach that output)."""
    check_pair(mlm, ltr)
    budget = budget or unbounded()
    if not 1 <= int(max_blocks) <= MAX_HELDOUT_BLOCKS:
        raise ValueError(f"Read between 1 and {MAX_HELDOUT_BLOCKS} held-out blocks.")
    blocks = np.asarray(heldout_blocks, dtype=np.int64)[: int(max_blocks)]
    asked = heldout_asked(mlm.tokenizer, blocks, block_starts)
    questions, words, positions, left, right = asked.questions, asked.words, asked.positions, asked.left, asked.right
    kept = {twin.name: twin.kept_losses([b.key for b in questions]) for twin in (mlm, ltr)}
    to_read = [block for b, block in enumerate(questions) if any(b not in k for k in kept.values())]
    if to_read:  # what the models still have to read: a block read before is kept with each model
        sentences_new, asked_new = _joined(to_read)
        budget.charge(heldout_gflop(mlm.model.config, len(asked_new), len(sentences_new),
                                    int(np.mean([len(s) for s in sentences_new]))),
                      f"{len(asked_new):,} held-out words", "Read fewer held-out blocks.")
    nll = {mlm.name: mlm.losses_by_block(questions, kept[mlm.name], _mlm_nll, budget),
           ltr.name: ltr.losses_by_block(questions, kept[ltr.name], _ltr_nll, budget)}
    logp = counts.log_probs(words, left, right)
    for key, label in LANDMARK_SERIES.items():
        nll[label] = -logp[key]
    bucket = np.array([_bucket_of(int(p)) for p in positions])
    per_bucket = {name: [float(v[bucket == b].mean()) if (bucket == b).any() else float("nan")
                         for b in range(len(POSITION_BUCKETS))] for name, v in nll.items()}
    return HeldoutComparison(mlm.name, ltr.name, bucket_labels(), [int((bucket == b).sum()) for b in range(len(POSITION_BUCKETS))],
                             per_bucket, {name: float(v.mean()) for name, v in nll.items()}, len(words),
                             sum(len(b.sentences) for b in questions), len(blocks), list(nll))


def heldout_losses(twins: list[Twin], blocks: np.ndarray, text_start: bool = False,
                   block_starts: str = "anywhere") -> dict[str, dict[str, Any]]:
    """Each model's loss on the held-out questions of ``blocks`` (packed as ``block_starts`` says; as
    :func:`heldout_by_position` asks them: each sentence alone, or with ``text_start`` as a text's start,
    :func:`as_text_start`), overall and by position band; no landmarks (those were counted for the sentences as
    :func:`heldout_by_position` reads them)."""
    tok = twins[0].tokenizer
    asked = heldout_asked(tok, np.asarray(blocks, dtype=np.int64), block_starts)
    sentences, questions = _joined(asked.questions)
    if text_start:
        sentences = [as_text_start(s, tok.sep_token_id) for s in sentences]
        questions = [(s, i + 1) for s, i in questions]
    bucket = np.array([_bucket_of(int(p)) for p in asked.positions])
    out = {}
    for twin in twins:
        nll = (_ltr_nll if twin.objective == "ltr" else _mlm_nll)(twin, sentences, questions, unbounded())
        out[twin.name] = {"overall": float(nll.mean()),
                          "by_position": [float(nll[bucket == b].mean()) if (bucket == b).any() else float("nan")
                                          for b in range(len(POSITION_BUCKETS))]}
    return out


@dataclass(frozen=True)
class BlockQuestions:
    """One held-out block's complete sentences (``[CLS] words [SEP]``) and its questions in them, as
    (sentence, index in its input); ``key``: the block's digest (its questions follow from its tokens and whether
    it opens a text)."""

    key: str
    sentences: list[np.ndarray]
    asked: list[tuple[int, int]]


def _block_key(block: np.ndarray, opens_text: bool) -> str:
    digest = hashlib.blake2b(np.ascontiguousarray(block, dtype=np.int64).tobytes(), digest_size=16)
    digest.update(b"opens a text" if opens_text else b"")  # its first sentence is then asked too
    return digest.hexdigest()


def _joined(blocks: list[BlockQuestions]) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """The blocks' sentences in one list, and their questions numbered in it."""
    sentences: list[np.ndarray] = []
    asked: list[tuple[int, int]] = []
    for block in blocks:
        asked += [(len(sentences) + s, i) for s, i in block.asked]
        sentences += block.sentences
    return sentences, asked


def _padded(rows: list[np.ndarray], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask


def _mlm_nll(twin: Twin, sentences: list[np.ndarray], asked: list[tuple[int, int]], budget: WorkBudget) -> np.ndarray:
    """-ln P(word) with that word alone replaced by [MASK]: one input per question."""
    tok, out = twin.tokenizer, []
    for start in range(0, len(asked), QUESTIONS_PER_BATCH):
        chunk = asked[start : start + QUESTIONS_PER_BATCH]
        budget.check_time(len(chunk))
        rows, targets = [], []
        for s, i in chunk:
            row = sentences[s].copy()
            targets.append(int(row[i]))
            row[i] = tok.mask_token_id
            rows.append(row)
        ids, mask = _padded(rows, tok.pad_token_id or 0)
        logits = _logits_at(twin.model, ids, mask, torch.arange(len(chunk)), torch.tensor([i for _s, i in chunk]))
        out.append(F.cross_entropy(logits, torch.tensor(targets), reduction="none").double().numpy())
    return np.concatenate(out)


def _ltr_nll(twin: Twin, sentences: list[np.ndarray], asked: list[tuple[int, int]], budget: WorkBudget) -> np.ndarray:
    """-ln P(word | the words before it): each sentence read once, the output before each question's word."""
    tok = twin.tokenizer
    by_sentence: dict[int, list[int]] = {}
    for k, (s, _i) in enumerate(asked):
        by_sentence.setdefault(s, []).append(k)
    out = np.zeros(len(asked))
    order = sorted(by_sentence)
    for start in range(0, len(order), QUESTIONS_PER_BATCH):
        chunk = order[start : start + QUESTIONS_PER_BATCH]
        budget.check_time(len(chunk))
        ids, mask = _padded([sentences[s] for s in chunk], tok.pad_token_id or 0)
        ks = [k for s in chunk for k in by_sentence[s]]
        rows = torch.tensor([chunk.index(asked[k][0]) for k in ks])
        cols = torch.tensor([asked[k][1] - 1 for k in ks])  # the output before the word
        targets = torch.tensor([int(sentences[asked[k][0]][asked[k][1]]) for k in ks])
        logits = _logits_at(twin.model, ids, mask, rows, cols)
        out[ks] = F.cross_entropy(logits, targets, reduction="none").double().numpy()
    return out


# --- right-context cloze ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClozeItem:
    sentence: str  # one [MASK]
    answer: str  # one wordpiece of the vocabulary


def read_right_context_cloze(path: str | Path = RIGHT_CONTEXT_CLOZE) -> list[ClozeItem]:
    """The ``sentence<TAB>answer`` lines of a cloze file (``#`` lines are comments); ValueError naming the line."""
    items = []
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        sentence, _, answer = line.partition("\t")
        if not answer.strip() or normalise_masks(sentence, "[MASK]").count("[MASK]") != 1:
            raise ValueError(f"{Path(path).name}:{number}: expected 'sentence with one [MASK]<TAB>answer'")
        items.append(ClozeItem(sentence.strip(), answer.strip().lower()))
    return items


@dataclass
class ClozeRanks:
    """Each model's rank of the right word per sentence, and its summary."""

    names: list[str]
    objectives: dict[str, str]  # name -> "mlm" / "ltr"
    items: list[ClozeItem]
    ranks: dict[str, list[int]]  # name -> rank per item (1 = first guess)
    first_guess: dict[str, list[str]]  # name -> its top-1 per item

    def summary(self, name: str) -> dict[str, float]:
        r = np.asarray(self.ranks[name], dtype=np.float64)
        return {"mrr": float((1 / r).mean()), "top1": float((r <= 1).mean()), "top5": float((r <= 5).mean()),
                "median_rank": float(np.median(r))}


def _blank_inputs(tokenizer: Any, sentences: list[str], text_start: bool = False,
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded ids, attention mask and the blank's index of each sentence (exactly one [MASK] each); ``text_start``:
    each read as a text's start (:func:`as_text_start`)."""
    texts = [normalise_masks(s, tokenizer.mask_token) for s in sentences]
    enc = tokenize(tokenizer, texts, padding=True, return_tensors="pt")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    if text_start:
        ids = torch.cat([ids[:, :1], torch.full_like(ids[:, :1], tokenizer.sep_token_id), ids[:, 1:]], dim=1)
        mask = torch.cat([mask[:, :1], mask[:, :1], mask[:, 1:]], dim=1)
    where = ids == tokenizer.mask_token_id
    if not bool((where.sum(dim=1) == 1).all()):
        raise ValueError("Each sentence needs exactly one [MASK].")
    return ids, mask, where.long().argmax(dim=1)


def as_text_start(sentence: np.ndarray, sep_id: int) -> np.ndarray:
    """``[CLS] words [SEP]`` as ``[CLS] [SEP] words [SEP]``: a sentence read as a text's start the way this project's
    engine trains — on one stream of texts joined by [SEP] and cut into blocks anywhere, so that a block's [CLS] is
    followed by the middle of a text (all but by chance) and a text starts after a [SEP] (:func:`bertdemo.pretrain.data.pack_stream`)."""
    return np.concatenate([sentence[:1], [sep_id], sentence[1:]])


def blank_logits(twin: Twin, sentences: list[str], text_start: bool = False) -> torch.Tensor:
    """(S, V) logits for each sentence's blank: the masked LM's output at the [MASK]; the LTR model's output at
    the position before it (its prediction of the next word, from the words before the blank only); ``text_start``:
    each sentence read as a text's start (:func:`as_text_start`)."""
    ids, mask, blank = _blank_inputs(twin.tokenizer, sentences, text_start)
    cols = blank - 1 if twin.objective == "ltr" else blank
    return _logits_at(twin.model, ids, mask, torch.arange(len(sentences)), cols)


def cloze_ranks(twins: list[Twin], items: list[ClozeItem] | None = None,
                budget: WorkBudget | None = None, text_start: bool = False) -> ClozeRanks:
    """Each model's rank of the right word on the right-context cloze set (the shipped one by default); each
    sentence read alone (``[CLS] sentence [SEP]``), or with ``text_start`` as a text's start (:func:`as_text_start`)."""
    items = read_right_context_cloze() if items is None else items
    budget = budget or unbounded()
    ranks, first = {}, {}
    for twin in twins:
        budget.charge(len(items) * sequence_gflop(twin.model.config, 24), f"{len(items)} cloze sentences",
                      "Use a smaller model.")
        budget.check_time(len(items))
        vocab = twin.tokenizer.get_vocab()
        missing = [it.answer for it in items if it.answer not in vocab]
        if missing:
            raise ValueError(f"{twin.name}'s vocabulary lacks the answers {', '.join(missing[:5])}.")
        logits = blank_logits(twin, [it.sentence for it in items], text_start)
        targets = torch.tensor([vocab[it.answer] for it in items])
        ranks[twin.name] = _ranks(logits, targets).tolist()
        first[twin.name] = twin.tokenizer.convert_ids_to_tokens(logits.argmax(dim=1).tolist())
    return ClozeRanks([t.name for t in twins], {t.name: t.objective for t in twins}, items, ranks, first)


# --- the learner's sentence ------------------------------------------------------------------------------------
@dataclass
class TwinGuesses:
    """One model's top-k at the learner's blank."""

    name: str
    objective: str
    top: list[tuple[str, float]]  # (token, probability)
    read: str  # the words the model used: the whole sentence, or those before the blank
    expected: tuple[str, int, float] | None = None  # the learner's word: (its piece, its rank, its probability)
    expected_note: str = ""  # why the learner's word has no rank here (it is no single piece of this vocabulary)


def expected_piece(tokenizer: Any, word: str, model_name: str) -> tuple[int | None, str]:
    """(the id of ``word`` as one piece of ``tokenizer``'s vocabulary, ""), or (None, why not): a twin ranks pieces,
    and a word of several has no one rank at one blank."""
    with tokenizer_lock(tokenizer):  # a shared tokenizer: tokenize() resets padding another request may have set
        pieces = word_pieces(tokenizer, word.strip())
    if len(pieces) != 1 or pieces[0] == tokenizer.unk_token:
        split = " ".join(pieces) if pieces else "nothing"
        return None, f"not one piece of {model_name}'s vocabulary (it reads {split}), so no rank"
    return int(tokenizer.convert_tokens_to_ids(pieces[0])), ""


def side_by_side(twins: list[Twin], text: str, top_k: int = 10, text_start: bool = False,
                 expected: str = "") -> list[TwinGuesses]:
    """Top-k words at the one [MASK] of ``text`` from each model, among the pieces that can stand there (Fill-Mask's
    rule: :func:`~bertdemo.pretrain.masking.mask_contexts`; special tokens are no words: a left-to-right model
    offered [SEP], the end of a sentence, for a blank); the LTR model answers from the words before it. Each
    probability is the model's own, over its whole vocabulary; ``text_start``: the sentence read as a text's start
    (:func:`as_text_start`); ``expected``: a word the learner expects there, ranked by each model among the same
    pieces (1 = its first guess)."""
    text = (text or "").strip()
    if not 1 <= int(top_k) <= MAX_TWIN_TOP_K:
        raise ValueError(f"Ask for between 1 and {MAX_TWIN_TOP_K} guesses.")
    if not text:
        raise ValueError("Type a sentence with one [MASK].")
    masks, chosen = normalise_masks(text, "[MASK]").count("[MASK]"), chosen_words(text)
    if masks == 0 and len(chosen) == 1:  # the Learn tab's way of hiding a word
        word = chosen[0]
        raise ValueError(f"Here the blank is written [MASK], and the word you expect goes in its own box: type "
                         f"“{text[:word.start()]}[MASK]{text[word.end():]}” and put “{word.group(1)}” in “The word "
                         "you expect”.")
    if masks != 1:
        raise ValueError("Put exactly one [MASK] in the sentence: both models fill that one blank.")
    if chosen:  # read as the pieces "[", "dog", "]" beside the blank: not what a learner means
        raise ValueError(f"Square brackets hide a word in the Learn tab; here the blank is the [MASK]: write "
                         f"{', '.join(f'“{m.group(1)}”' for m in chosen)} without them.")
    out = []
    for twin in twins:
        masked = normalise_masks(text, twin.tokenizer.mask_token)
        enc = tokenize(twin.tokenizer, masked, return_tensors="pt",
                       return_offsets_mapping=bool(getattr(twin.tokenizer, "is_fast", False)))
        n = enc["input_ids"].shape[1] + int(text_start)  # the [SEP] a text's start reads too
        if n > MAX_TWIN_TOKENS:
            raise ValueError(f"The sentence is {n} tokens long; keep it within {MAX_TWIN_TOKENS}.")
        probs = blank_logits(twin, [text], text_start).softmax(dim=-1)[0]
        # what may stand at the blank, by Fill-Mask's rule: no ## piece where a word starts ("Le [MASK] est …" was
        # answered with ##o, ##xic), only ## pieces glued to letters
        blank = int((enc["input_ids"][0] == twin.tokenizer.mask_token_id).nonzero()[0, 0])
        context = mask_contexts(twin.tokenizer, enc, [blank], masked)[0]
        words = allowed_pieces(probs, context, continuation_ids(twin.tokenizer)).clone()
        words[list(twin.tokenizer.all_special_ids)] = -1.0  # a word for the blank: never [SEP], [CLS], [PAD] …
        ids = words.topk(int(top_k)).indices
        p = probs[ids]  # each word's probability as the model gives it (over every token, specials included)
        tokens = twin.tokenizer.convert_ids_to_tokens(ids.tolist())
        mark, why_not = None, ""
        if expected.strip():
            wanted, why_not = expected_piece(twin.tokenizer, expected, twin.name)
            if wanted is not None and float(words[wanted]) <= 0:  # a special token, or a piece barred at this blank
                wanted, why_not = None, (f"{twin.tokenizer.convert_ids_to_tokens(wanted)} cannot stand at this blank "
                                         "(a special token, or a word's start where the blank continues a word), "
                                         "so no rank")
            if wanted is not None:
                mark = (twin.tokenizer.convert_ids_to_tokens(wanted), int((words > words[wanted]).sum()) + 1,
                        float(probs[wanted]))
        before = normalise_masks(text, "[MASK]").split("[MASK]")[0].strip()
        read = (f"only the words before the blank: “{before} …”" if twin.objective == "ltr"
                else "the whole sentence, both sides of the blank") + (", as a text's start ([CLS] [SEP] …)" if text_start
                                                                       else "")
        out.append(TwinGuesses(twin.name, twin.objective, list(zip(tokens, p.tolist())), read, mark, why_not))
    return out


# --- the page's comparison: the embedded corpus's held-out split ------------------------------------------------
HELDOUT_CORPUS = "wiki"  # the embedded Wikipedia summaries: what the app's runs pretrain on by default
HELDOUT_SEQ_LEN = 128  # the engine's block length


def heldout_from_corpus(mlm: Twin, ltr: Twin, cache_dir: str | Path, max_blocks: int = DEFAULT_HELDOUT_BLOCKS,
                        budget: WorkBudget | None = None, corpus: str = HELDOUT_CORPUS) -> HeldoutComparison:
    """:func:`heldout_by_position` on ``corpus``'s held-out split (the blocks every run of that corpus holds
    out, from the block cache in ``cache_dir``; tokenized once), with the landmarks counted over its training
    blocks (both kept with the masked LM's store entry: read and counted once per model). The deadline of ``budget`` starts once the blocks are ready."""
    from bertdemo.pretrain.data import prepare_blocks
    from bertdemo.pretrain.landmarks import count_ngrams

    check_pair(mlm, ltr)
    budget = budget or unbounded()
    if not 1 <= int(max_blocks) <= MAX_HELDOUT_BLOCKS:
        raise ValueError(f"Read between 1 and {MAX_HELDOUT_BLOCKS} held-out blocks.")
    tok = mlm.tokenizer

    def read() -> tuple[np.ndarray, NgramCounts]:
        blocks = prepare_blocks(corpus, tok, HELDOUT_SEQ_LEN, cache_dir)
        return blocks.heldout, count_ngrams(blocks.train, len(tok), tok.all_special_ids)

    # read and counted once per model of the store (the same blocks and counts every time: its tokenizer's)
    heldout, counts = mlm.kept(f"held-out corpus {corpus} T{HELDOUT_SEQ_LEN} in {Path(cache_dir)}", read)
    budget.restart()
    return heldout_by_position(mlm, ltr, heldout, counts, max_blocks, budget)


# --- the shipped twins' own held-out words ----------------------------------------------------------------------
SHIPPED_CORPUS_NOTE = ("Held-out words: the held-out split of the twins' own corpus (Wikipedia summaries and everyday "
                       "English, each text once; the corpus's last blocks, never trained on), with the landmarks "
                       "counted over its training blocks when the twins were built.")
WIKI_CORPUS_NOTE = ("Held-out words: the embedded Wikipedia summaries' held-out split (the last blocks of the corpus, "
                    "never trained on by this app's runs). The embedded model itself read every summary while it was "
                    "built, so its numbers there are not held out.")


def is_shipped_pair(mlm: Twin, ltr: Twin) -> bool:
    """Both models are shipped twins (:data:`bertdemo.models.twins.TWIN_NAMES`), so they share the twins' corpus."""
    from bertdemo.models.twins import twin_kind

    return twin_kind(mlm.name) is not None and twin_kind(ltr.name) is not None


@dataclass(frozen=True)
class HeldoutFile:
    """A build's held-out questions as shipped (``heldout.npz``, written by
    :mod:`bertdemo.tools.measure_twin_pairs`): the packed blocks, how they were packed (``block_starts``; a file
    without the entry is from a build packed "anywhere") and the landmarks recorded for their questions."""

    blocks: np.ndarray
    block_starts: str
    landmarks: RecordedLandmarks


def read_heldout_file(path: str | Path) -> HeldoutFile:
    """:class:`HeldoutFile` from ``path``."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    block_starts = str(arrays.pop("block_starts", "anywhere"))
    check_block_starts(block_starts)
    return HeldoutFile(arrays.pop("blocks").astype(np.int64), block_starts, RecordedLandmarks(arrays))


def shipped_heldout() -> HeldoutFile:
    """The shipped twins' held-out blocks and the landmarks recorded for their questions
    (``bertdemo/assets/twins/heldout.npz``)."""
    from bertdemo.models.twins import HELDOUT_FILE

    return read_heldout_file(HELDOUT_FILE)


def heldout_for(mlm: Twin, ltr: Twin, cache_dir: str | Path, max_blocks: int = DEFAULT_HELDOUT_BLOCKS,
                budget: WorkBudget | None = None) -> tuple[HeldoutComparison, str]:
    """The held-out comparison on the words the pair never trained on, and the sentence that says which words: the
    twins' own held-out split for the shipped twins, the embedded Wikipedia summaries' for every other pair."""
    if is_shipped_pair(mlm, ltr):
        shipped = mlm.kept("shipped twins' held-out words", shipped_heldout)
        return (heldout_by_position(mlm, ltr, shipped.blocks, shipped.landmarks, max_blocks, budget,
                                    shipped.block_starts), SHIPPED_CORPUS_NOTE)
    return heldout_from_corpus(mlm, ltr, cache_dir, max_blocks, budget), WIKI_CORPUS_NOTE

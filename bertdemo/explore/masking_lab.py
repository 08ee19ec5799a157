"""The masking lab: a sentence masked by the pretraining engine's own code, epoch after epoch.

Everything here calls `bertdemo.pretrain.masking.mask_tokens` — the function the training
loop calls — on the engine's tokenizer (the uncased WordPiece vocabulary of
bert-base-uncased), so what the page shows is what the model is trained on:

* `mask_sample`: one draw — which tokens were chosen, and which became [MASK], a random
  token or stayed — and the tensors the model gets (input_ids, labels, attention_mask).
* `compare_epochs`: dynamic masking (a fresh mask every time the sequence comes round, what
  the engine does) against static masking as the original BERT data pipeline did it (each
  sequence written N times with N fixed masks, ``dupe_factor=10``; epoch e sees copy e mod N).
* `measure_rates`: many draws at once; measured rates against the settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import torch
from transformers import AutoTokenizer

from bertdemo.limits import MAX_DRAWS, MAX_EPOCHS, MAX_LAB_TOKENS, MAX_STATIC_COPIES
from bertdemo.models import embedded
from bertdemo.pretrain.masking import (
    ACTION_KEEP,
    ACTION_MASK,
    ACTION_NONE,
    ACTION_RANDOM,
    IGNORE_INDEX,
    MaskedBatch,
    continuation_lookup,
    mask_tokens,
)

ACTION_NAMES = {ACTION_NONE: None, ACTION_MASK: "mask", ACTION_RANDOM: "random", ACTION_KEEP: "keep"}
STATIC_SEED_OFFSET = 1_000_003  # the static copies were drawn once, when the data was written


@lru_cache(maxsize=1)
def engine_tokenizer():
    """The tokenizer the pretraining engine trains with (uncased WordPiece, bert-base-uncased ids)."""
    return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))


@lru_cache(maxsize=1)
def _lookups() -> tuple[torch.Tensor, torch.Tensor]:
    tok = engine_tokenizer()
    return torch.tensor(sorted(set(tok.all_special_ids))), continuation_lookup(tok)


@dataclass(frozen=True)
class MaskSettings:
    """The page's masking settings (the same names as the pretraining config)."""

    mlm_probability: float = 0.15  # fraction of non-special tokens chosen for prediction
    mask_replace_prob: float = 0.8  # of the chosen: replaced by [MASK]
    random_replace_prob: float = 0.1  # of the chosen: replaced by a random token (the rest stay)
    seed: int = 0
    whole_word: bool = False  # all pieces of a word chosen together
    fixed_count: bool = True  # exactly round(p * (T - 2)) chosen per sequence (the engine's default)

    def validated(self) -> MaskSettings:
        if not 0.0 < self.mlm_probability < 1.0:
            raise ValueError(f"mlm_probability must be between 0 and 1 (got {self.mlm_probability}).")
        m, r = self.mask_replace_prob, self.random_replace_prob
        if min(m, r) < 0 or m + r > 1.0 + 1e-9:
            raise ValueError(
                f"mask_replace_prob + random_replace_prob must be within [0, 1] (got {m} + {r} = {m + r:.3g})."
            )
        if self.seed < 0 or self.seed != int(self.seed):
            raise ValueError(f"seed must be a whole number >= 0 (got {self.seed}).")
        return MaskSettings(float(self.mlm_probability), float(m), float(r), int(self.seed),
                            bool(self.whole_word), bool(self.fixed_count))

    def mode(self, n_tokens: int, n_candidates: int | None = None) -> str:
        """How the chosen tokens are drawn, in words, for a sequence of ``n_tokens`` (specials included) of which
        ``n_candidates`` may be chosen (None: all but [CLS] and [SEP])."""
        unit = "whole words" if self.whole_word else "tokens"
        if self.fixed_count:
            k = max(1, round(self.mlm_probability * (n_tokens - 2)))
            tokens = "token" if k == 1 else "tokens"
            how = f"fixed count: exactly k = round({self.mlm_probability:g} × {n_tokens - 2}) = {k} {tokens}"
            if self.whole_word:
                how = (f"fixed count: whole words in random order while the total stays ≤ k = "
                       f"round({self.mlm_probability:g} × {n_tokens - 2}) = {k} {tokens}")
            if n_candidates is not None and n_candidates != n_tokens - 2:  # a typed [MASK], an [UNK]: never chosen
                how += (f" (k counts every token between [CLS] and [SEP], as the engine does, though only "
                        f"{n_candidates} of them can be chosen: a typed [MASK] or an [UNK] never is)")
            return how + " per sequence (the engine's default)"
        return f"Bernoulli: each of the {unit} chosen independently with probability {self.mlm_probability:g}"


@dataclass
class MaskedToken:
    position: int
    token: str  # the original token
    original_id: int
    chosen: bool
    action: str | None  # "mask" | "random" | "keep" | None (not chosen)
    input_id: int  # what the model gets at this position
    input_token: str
    label: int  # the original id where chosen, -100 elsewhere
    special: bool
    continuation: bool  # a "##" piece continuing the previous token's word


@dataclass
class MaskSample:
    text: str
    settings: MaskSettings
    mode: str
    tokens: list[MaskedToken]
    input_ids: list[int]
    labels: list[int]
    attention_mask: list[int]

    def to_json(self) -> dict:
        return {
            "text": self.text,
            "settings": self.settings.__dict__,
            "mode": self.mode,
            "tokens": [
                {"token": t.token, "chosen": t.chosen, "action": t.action, "input_id": t.input_id,
                 "label": t.label, "input_token": t.input_token, "original_id": t.original_id,
                 "position": t.position, "special": t.special}
                for t in self.tokens
            ],
            "input_ids": self.input_ids,
            "labels": self.labels,
            "attention_mask": self.attention_mask,
        }


def encode_for_masking(text: str) -> list[int]:
    """``[CLS] text [SEP]`` ids, refusing empty or over-long text with a message."""
    if not (text or "").strip():
        raise ValueError("Enter a sentence to mask.")
    ids = engine_tokenizer()(text, add_special_tokens=True)["input_ids"]
    if len(ids) > MAX_LAB_TOKENS:
        raise ValueError(
            f"The text is {len(ids)} tokens long; the lab takes at most {MAX_LAB_TOKENS} (specials included). "
            "Shorten it to a sentence or two."
        )
    if len(ids) < 3:
        raise ValueError("The text has no tokens to mask.")
    return ids


def _draw(ids: list[int], rows: int, settings: MaskSettings, seed: int | torch.Generator) -> MaskedBatch:
    """Mask ``rows`` copies of one sequence at once with the engine's ``mask_tokens``.

    ``seed`` may be a generator to continue from (a sequence seen again draws a fresh mask).
    """
    tok = engine_tokenizer()
    special_ids, is_continuation = _lookups()
    x = torch.tensor([ids] * rows)  # (R, T)
    g = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(seed)
    return mask_tokens(
        x, special_ids, mask_token_id=tok.mask_token_id, vocab_size=len(tok), generator=g,
        mlm_probability=settings.mlm_probability, mask_replace_prob=settings.mask_replace_prob,
        random_replace_prob=settings.random_replace_prob, fixed_count=settings.fixed_count,
        is_continuation=is_continuation if settings.whole_word else None, with_actions=True,
    )


def _sample_from(text: str, settings: MaskSettings, ids: list[int], mb: MaskedBatch, row: int) -> MaskSample:
    tok = engine_tokenizer()
    special_ids, is_continuation = _lookups()
    specials = set(special_ids.tolist())
    inputs, labels = mb.input_ids[row].tolist(), mb.labels[row].tolist()
    actions = mb.actions[row].tolist()
    originals, shown = tok.convert_ids_to_tokens(ids), tok.convert_ids_to_tokens(inputs)
    tokens = [
        MaskedToken(i, originals[i], ids[i], labels[i] != IGNORE_INDEX, ACTION_NAMES[actions[i]], inputs[i],
                    shown[i], labels[i], ids[i] in specials, bool(is_continuation[ids[i]]))
        for i in range(len(ids))
    ]
    return MaskSample(text, settings, settings.mode(len(ids), sum(not t.special for t in tokens)), tokens, inputs,
                      labels, [1] * len(ids))


def mask_sample(text: str, settings: MaskSettings) -> MaskSample:
    """One draw of the engine's masking on ``[CLS] text [SEP]`` (seeded: the same seed, the same mask)."""
    settings = settings.validated()
    ids = encode_for_masking(text)
    mb = _draw(ids, 1, settings, settings.seed)
    return _sample_from(text, settings, ids, mb, 0)


@dataclass
class EpochRow:
    epoch: int  # 1-based
    static_copy: int  # which of the N pre-masked copies this epoch reads (1-based)
    static: MaskSample
    dynamic: MaskSample


@dataclass
class EpochComparison:
    text: str
    settings: MaskSettings
    static_copies: int
    rows: list[EpochRow]
    distinct_static: int  # distinct masked inputs the model saw over the epochs
    distinct_dynamic: int

    def to_json(self) -> dict:
        def brief(s: MaskSample) -> dict:
            return {"chosen": [t.position for t in s.tokens if t.chosen], "input_ids": s.input_ids}

        return {
            "epochs": len(self.rows),
            "static_copies": self.static_copies,
            "distinct_static": self.distinct_static,
            "distinct_dynamic": self.distinct_dynamic,
            "mode": self.rows[0].dynamic.mode if self.rows else "",
            "rows": [{"epoch": r.epoch, "static_copy": r.static_copy, "static": brief(r.static),
                      "dynamic": brief(r.dynamic)} for r in self.rows],
        }


def compare_epochs(text: str, settings: MaskSettings, epochs: int = 20, static_copies: int = 10) -> EpochComparison:
    """The masks one sequence gets in epochs 1..``epochs`` under static and dynamic masking.

    Static: ``static_copies`` masks drawn once (when the data is written); epoch e reads copy
    (e - 1) mod N, so the masks repeat every N epochs. Dynamic: the engine draws a fresh mask
    each time the sequence comes round (one generator, advancing).
    """
    settings = settings.validated()
    epochs, static_copies = int(epochs), int(static_copies)
    if not 1 <= epochs <= MAX_EPOCHS:
        raise ValueError(f"epochs must be between 1 and {MAX_EPOCHS} (got {epochs}).")
    if not 1 <= static_copies <= MAX_STATIC_COPIES:
        raise ValueError(f"static copies must be between 1 and {MAX_STATIC_COPIES} (got {static_copies}).")
    ids = encode_for_masking(text)

    def one_by_one(n: int, seed: int) -> list[MaskSample]:
        g = torch.Generator().manual_seed(seed)  # one generator, advancing: epoch e's mask never depends on n
        return [_sample_from(text, settings, ids, _draw(ids, 1, settings, g), 0) for _ in range(n)]

    static = one_by_one(static_copies, settings.seed + STATIC_SEED_OFFSET)
    dynamic = one_by_one(epochs, settings.seed)
    rows = [EpochRow(e + 1, e % static_copies + 1, static[e % static_copies], dynamic[e]) for e in range(epochs)]
    return EpochComparison(
        text, settings, static_copies, rows,
        distinct_static=len({tuple(r.static.input_ids) for r in rows}),
        distinct_dynamic=len({tuple(r.dynamic.input_ids) for r in rows}),
    )


@dataclass
class Rate:
    name: str
    setting: float  # what the settings ask for
    measured: float
    std_error: float  # of the measured rate, from the binomial variance at the setting
    count: int
    total: int


@dataclass
class RateStats:
    draws: int
    n_tokens: int  # maskable tokens per draw
    mode: str
    rates: list[Rate] = field(default_factory=list)
    n_counted: int = 0  # the tokens a fixed count is a fraction of: all between [CLS] and [SEP] (the engine's k)

    def to_json(self) -> dict:
        return {"draws": self.draws, "n_tokens": self.n_tokens, "n_counted": self.n_counted, "mode": self.mode,
                "rates": [r.__dict__ for r in self.rates]}


def _rate(name: str, setting: float, count: int, total: int) -> Rate:
    se = math.sqrt(max(setting * (1 - setting), 0.0) / total) if total else 0.0
    return Rate(name, setting, count / total if total else 0.0, se, count, total)


def measure_rates(text: str, settings: MaskSettings, draws: int = 1000) -> RateStats:
    """Mask ``draws`` copies of the sequence in one call; the chosen fraction and the 80/10/10 split.

    The chosen fraction is of the non-special tokens; mask / random / keep are of the chosen.
    In fixed-count mode the chosen fraction is exact, so its standard error is 0.
    """
    settings = settings.validated()
    draws = int(draws)
    if not 1 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws must be between 1 and {MAX_DRAWS} (got {draws}).")
    ids = encode_for_masking(text)
    mb = _draw(ids, draws, settings, settings.seed)
    special_ids, _ = _lookups()
    n_real = int((~torch.isin(torch.tensor(ids), special_ids)).sum())
    acts = mb.actions
    chosen = int((acts != ACTION_NONE).sum())
    n_mask, n_random = int((acts == ACTION_MASK).sum()), int((acts == ACTION_RANDOM).sum())
    m, r = settings.mask_replace_prob, settings.random_replace_prob
    chosen_rate = _rate("chosen", settings.mlm_probability, chosen, n_real * draws)
    if settings.fixed_count and not settings.whole_word:
        k = max(1, round(settings.mlm_probability * (len(ids) - 2)))
        chosen_rate.setting, chosen_rate.std_error = min(k, n_real) / n_real, 0.0
    return RateStats(draws, n_real, settings.mode(len(ids), n_real), [
        chosen_rate,
        _rate("[MASK]", m, n_mask, chosen),
        _rate("random", r, n_random, chosen),
        _rate("kept", round(max(0.0, 1 - m - r), 12), chosen - n_mask - n_random, chosen),
    ], len(ids) - 2)

"""The one configuration of a pretraining run: `TrainConfig`, the model presets, and the
BertConfig / parameter count they give.

Defaults are chosen so that the default run (bert-tiny on the embedded Wikipedia
summaries, 128-token blocks, 5 minutes) gets past "the , . of and" within its first minutes on a
2-core CPU and still ends a standard BERT: attention heads initialised to look at the word before and
the word after, a locality bias on attention that fades out over the run, small batches, AdamW's β2
0.98 and a schedule on a 5-minute budget (docs/lab/benchmarks.md, "Breaking the plateau" and "Neighbour
initialisation").
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import io
import json
import math
import tokenize
import typing
import unicodedata
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from bertdemo.limits import MAX_PROBE_CHARS, MAX_PROBE_MASKS
from bertdemo.pretrain.probes import validate_expected

if TYPE_CHECKING:  # transformers (and torch) load only when a model is built: the page's form needs neither
    from transformers import BertConfig

# name -> (layers, hidden, heads, ffn); sizes of Turc et al. 2019 ("Well-Read Students Learn Better").
PRESETS: dict[str, tuple[int, int, int, int]] = {
    "bert-tiny": (2, 128, 2, 512),
    "bert-mini": (4, 256, 4, 1024),
    "bert-small": (4, 512, 8, 2048),
}
CUSTOM = "custom"
VOCAB_SIZE = 30522  # the uncased WordPiece vocabulary of bert-base-uncased
MAX_SEQ_LEN = 512
MAX_LOCALITY_BIAS = 64.0  # x ALiBi's slopes: beyond this every head sees only its own token


MLM, LTR = "mlm", "ltr"
OBJECTIVES = {MLM: "masked LM (BERT): predicts each hidden word from the words on both sides",
              LTR: "left-to-right LM (GPT-style): predicts every word from the words before it only"}

LTR_TARGETS = {"all": "every next word (GPT)",
               "masked": "only the words a masked-LM run of the same seed would mask (the controlled twin)"}

BLOCK_STARTS = {"anywhere": "one stream of texts cut every T-2 tokens (a block's [CLS] before the middle of a text)",
                "text": "each block begins at a text's start (BERT: an input begins with a sentence)"}


def check_block_starts(value: str) -> None:
    """ValueError unless ``value`` is one of :data:`BLOCK_STARTS`."""
    if value not in BLOCK_STARTS:
        raise ValueError(f"block_starts must be one of {list(BLOCK_STARTS)}, got {str(value)[:40]!r}.")

LINE_BREAKING = {"Cc", "Zl", "Zp"}  # control characters (CR, LF, tab, NUL…), line and paragraph separators


def validate_probe_text(text: str) -> str:
    """The probe must hold one to MAX_PROBE_MASKS [MASK]s in at most MAX_PROBE_CHARS characters (every
    evaluation keeps its answers and every open page receives them); ValueError otherwise."""
    text = (text or "").strip()
    if "[MASK]" not in text:
        raise ValueError("The probe sentence must contain at least one [MASK], e.g. 'Paris is the [MASK] of France.'")
    if len(text) > MAX_PROBE_CHARS:
        raise ValueError(f"The probe sentence is {len(text):,} characters; use at most {MAX_PROBE_CHARS}.")
    if text.count("[MASK]") > MAX_PROBE_MASKS:
        raise ValueError(f"The probe sentence has {text.count('[MASK]')} [MASK]s; use at most {MAX_PROBE_MASKS}.")
    if any(unicodedata.category(c) in LINE_BREAKING for c in text):  # would split the metrics CSV's header
        raise ValueError("The probe sentence must be one line of printable text (no line breaks or control characters).")
    return text


@dataclass
class ModelConfig:
    """The BERT to train: a preset, or a custom shape in BertConfig's own field names."""

    preset: str = "bert-tiny"  # one of PRESETS, or "custom" (then the four fields below)
    num_hidden_layers: int = 2  # custom only
    hidden_size: int = 128  # custom only (H)
    num_attention_heads: int = 2  # custom only (must divide hidden_size)
    intermediate_size: int = 512  # custom only: the feed-forward width
    position_embeddings: bool = True  # False: zeroed and frozen, the encoder is order-blind
    dropout: float = 0.0  # hidden + attention dropout of a new model (BERT used 0.1; a short run learns faster without)
    init_from: str = ""  # model folder to warm-start from (shape from its config; MLM head added if absent)
    train_layers: int = -1  # -1 = train everything; k >= 0 = only the top k encoder layers + MLM head
    freeze_embeddings: bool = False  # keep the embeddings (and the decoder tied to them) fixed
    locality_bias: float = 8.0  # attention penalised by distance (ALiBi's slopes x this factor) so it looks at neighbours from the start; 0 = off
    locality_fade: float = 1.0  # the locality bias fades linearly to 0 by this share of the run (then a standard BERT); 0 = it never fades (an experiment: the saved model then predicts without it)
    neighbour_init: bool = True  # initialise position embeddings and every head's W_q, W_k so that each head attends to a neighbour (the word before, the word after) from the first step: a stock BERT, nothing to fade; the default since it ended 5-minute runs at 5.3 against 6.7 (docs/lab/benchmarks.md, "Neighbour initialisation"); skipped for a warm start or without position embeddings


APP_CORPORA = ("wiki", "tinystories")  # the corpora the app brings; a run on any other text (an upload) is private


@dataclass
class DataConfig:
    """The corpus and how it is cut into blocks."""

    corpus: str = "wiki"  # "wiki" (embedded, offline) | "tinystories" (hub) | path to .txt/.jsonl
    tokenizer: str = ""  # folder of the WordPiece tokenizer the run trains with ("" = the embedded uncased one, 30,522 pieces); a run's model has its vocabulary's size
    seq_len: int = 128  # tokens per packed block (T), 16..512
    seq_len_schedule: str = ""  # e.g. "128:0.9,512:0.1": block length by fraction of the steps ("" = seq_len)
    max_corpus_tokens: int = 20_000_000  # stop tokenizing a (large) corpus after this many tokens
    heldout_fraction: float = 0.02  # blocks held out for evaluation (at least a few)
    block_starts: str = "anywhere"  # "anywhere": one stream of texts joined by [SEP], cut every T-2 tokens (RoBERTa-style packing; a block's [CLS] is then followed by the middle of a text); "text": each block begins at a text's start, as BERT's inputs begin with a sentence (a text that does not fit fills the rest of a block with its beginning and begins the next one again; a longer text than a block runs on)
    cache_dir: str = ""  # tokenized-block cache; "" = the app's cache folder


@dataclass
class ObjectiveConfig:
    """What the model learns to predict (DataCollatorForLanguageModeling semantics)."""

    objective: str = "mlm"  # "mlm": masked LM, BERT (each hidden word from both sides); "ltr": left-to-right LM, GPT-style (every next word from the words before it: BertLMHeadModel, is_decoder=True, the causal mask its only difference); the masking settings below apply to "mlm" only
    mlm_probability: float = 0.15  # fraction of (non-special) tokens predicted
    mask_replace_prob: float = 0.8  # of those, replaced by [MASK]
    random_replace_prob: float = 0.1  # of those, replaced by a random token (rest kept)
    fixed_mask_count: bool = True  # exactly round(p * tokens) predictions per row (original BERT)
    whole_word_masking: bool = False  # choose all pieces of a word together
    static_masks: int = 0  # 0 = dynamic (new masks every time); N = N fixed masks per block (original BERT)
    nsp: bool = False  # add next-sentence prediction ([CLS] A [SEP] B [SEP], 50% NotNext)
    ltr_targets: str = "all"  # left-to-right runs only: "all" predicts every next word (GPT); "masked" predicts only the positions a masked-LM run of the same seed would mask (the same words, the same count per step: only what each prediction may read differs)


@dataclass
class OptimConfig:
    """AdamW and its schedule."""

    batch_size: int = 8  # blocks per step (per process under torchrun); small batches: more updates in the first minutes
    steps: int = 5000  # total optimizer steps (or fewer: see time_budget_s)
    lr: float = 1e-3  # peak AdamW learning rate
    warmup_steps: int = 30  # linear warmup, then linear decay to 0 at `steps`
    weight_decay: float = 0.01  # AdamW, not applied to biases and LayerNorm weights
    grad_clip: float = 1.0  # max global grad norm; 0 = off
    adam_beta2: float = 0.98  # AdamW's second-moment decay (Cramming: 0.98 adapts faster)
    time_budget_s: float = 300.0  # > 0: the run also ends after this many seconds of training (evaluations not counted), and the schedules follow the share of that budget used when it is ahead of the steps (Cramming's budget)


@dataclass
class MonitorConfig:
    """Logging, held-out evaluation, the probe and checkpoints."""

    log_every: int = 10  # steps between host syncs that record train loss
    eval_every: int = 125  # steps between held-out evaluations (and probe predictions): ~10 s on 2 CPU cores
    eval_batches: int = 20  # held-out batches per evaluation (20 x 8 = the embedded corpus's 162 held-out blocks)
    checkpoint_every: int = 2000  # steps between checkpoints (also written at stop/finish); 0 = only then
    probe_text: str = "The capital of France is [MASK]."  # one or more [MASK]
    probe_expected: str = "paris"  # the word expected at probe_text's first [MASK] ("" = none): its rank is tracked


@dataclass
class SystemConfig:
    """Where and how the run computes, and where it writes."""

    seed: int = 1337  # seeds the model's initialisation, the data order and the masks
    device: str = "auto"  # "auto" (cuda > mps > cpu) | "cpu" | "cuda" | "cuda:1" | "mps"
    num_threads: int = 0  # CPU threads; 0 = cpu_count - 1 (leave the UI a core)
    precision: str = "auto"  # "auto": bf16 autocast on CUDA and on CPUs with native bf16; "bf16"; "fp32"
    compile: bool = False  # torch.compile the objective (CUDA only)
    runs_dir: str = "runs"  # each run writes runs_dir/<run_id>/checkpoint/
    resume_from: str = ""  # checkpoint folder to continue (model, optimizer, step, metrics)


GROUPS: dict[str, type] = {"model": ModelConfig, "data": DataConfig, "objective": ObjectiveConfig,
                           "optim": OptimConfig, "monitor": MonitorConfig, "system": SystemConfig}
# Settings this engine no longer has: their runs lost or were never measured (docs/lab/, "Levers deleted"); the
# engine that had them is commit 0dfb497 (git show 0dfb497:bertdemo/pretrain/trainer.py). A saved config that left
# one at its default loads; one that used it is refused by name. None: any value (it did nothing alone).
RETIRED = {"locality_hold": 0.0, "locality_dropout": 0.0, "mimetic_init": False, "output_vocab": 0,
           "batch_size_start": 0, "batch_ramp": None}
_LEGACY_NAMES = {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
                 "ffn": "intermediate_size"}  # flat train_config.json of earlier checkpoints


def leaf_fields() -> list[tuple[str, dataclasses.Field]]:
    """(group, field) of every setting; field names are unique across groups (they are the CLI flags)."""
    return [(group, f) for group, cls in GROUPS.items() for f in dataclasses.fields(cls)]


@functools.cache
def setting_types() -> dict[str, type]:
    """Leaf name -> its declared type (``typing.get_type_hints``: the annotations resolved, not read as text)."""
    return {f.name: typing.get_type_hints(GROUPS[group])[f.name] for group, f in leaf_fields()}


@functools.cache
def setting_help() -> dict[str, str]:
    """Leaf name -> what it means: the ``# comment`` after its field in this file (the CLI's help)."""
    found: dict[str, str] = {}
    for cls in GROUPS.values():
        field_name, line = None, 0
        for tok in tokenize.generate_tokens(io.StringIO(inspect.getsource(cls)).readline):
            if tok.type == tokenize.NAME and tok.start[1] == 4 and tok.start[0] != line:
                field_name, line = tok.string, tok.start[0]  # an indented name starts a field's line
            elif tok.type == tokenize.COMMENT and field_name and tok.start[0] == line:
                found[field_name] = tok.string.lstrip("#").strip()
    return {f.name: found.get(f.name, "") for _, f in leaf_fields()}


def _checked(name: str, expected: type, value: Any) -> Any:
    """A setting's value with its declared type, or ValueError (configs may come from outside)."""
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"Setting {name!r} must be {expected.__name__}, got {repr(value)[:60]}.")  # never echoes a huge value
    return value


@dataclass
class TrainConfig:
    """Every setting of a pretraining run, grouped by concern (``cfg.optim.lr``, ``cfg.model.hidden_size``)."""

    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    objective: ObjectiveConfig = dataclasses.field(default_factory=ObjectiveConfig)
    optim: OptimConfig = dataclasses.field(default_factory=OptimConfig)
    monitor: MonitorConfig = dataclasses.field(default_factory=MonitorConfig)
    system: SystemConfig = dataclasses.field(default_factory=SystemConfig)

    @classmethod
    def from_flat(cls, **settings: Any) -> TrainConfig:
        """A config from leaf names (``TrainConfig.from_flat(preset="bert-mini", steps=500)``).

        Every value is type-checked; an unknown name is a ValueError."""
        where = {f.name: (group, f) for group, f in leaf_fields()}
        types = setting_types()
        groups: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
        for name, value in settings.items():
            name = _LEGACY_NAMES.get(name, name)
            if name not in where:
                raise ValueError(f"Unknown setting {name!r}.")
            group, _f = where[name]
            groups[group][name] = _checked(name, types[name], value)
        return cls(**{group: GROUPS[group](**values) for group, values in groups.items()})

    def flat(self) -> dict[str, Any]:
        """Leaf name -> value (the inverse of :meth:`from_flat`)."""
        return {f.name: getattr(getattr(self, group), f.name) for group, f in leaf_fields()}

    def replace(self, **settings: Any) -> TrainConfig:
        """A copy with some leaf settings changed."""
        return TrainConfig.from_flat(**{**self.flat(), **settings})

    def model_shape(self) -> tuple[int, int, int, int]:
        """(num_hidden_layers, hidden_size, num_attention_heads, intermediate_size) of the run's model."""
        m = self.model
        if m.init_from:
            from transformers import BertConfig

            cfg = BertConfig.from_pretrained(m.init_from)
            return (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size)
        if m.preset == CUSTOM:
            return (m.num_hidden_layers, m.hidden_size, m.num_attention_heads, m.intermediate_size)
        if m.preset not in PRESETS:
            raise ValueError(f"Unknown preset {m.preset!r}; choose one of {[*PRESETS, CUSTOM]}.")
        return PRESETS[m.preset]

    def seq_len_phases(self) -> list[tuple[int, int]]:
        """(first step, block length) of each phase: one phase unless a schedule is set."""
        if not self.data.seq_len_schedule.strip():
            return [(0, self.data.seq_len)]
        return parse_seq_len_schedule(self.data.seq_len_schedule, self.optim.steps)

    def max_seq_len(self) -> int:
        """The longest block any phase uses."""
        return max(length for _, length in self.seq_len_phases())

    def validate(self) -> None:
        """Raise ValueError with a clear message for settings that cannot train."""
        m, d, o, opt, mon, sysc = self.model, self.data, self.objective, self.optim, self.monitor, self.system
        if m.init_from and not (Path(m.init_from) / "config.json").is_file():
            raise ValueError(f"init_from {Path(m.init_from).name!r} is not a model folder (no config.json).")
        layers, hidden, heads, ffn = self.model_shape()
        if m.train_layers < -1 or m.train_layers > layers:
            raise ValueError(f"train_layers must be -1 (all) or between 0 and {layers}, got {m.train_layers}.")
        if min(layers, hidden, heads, ffn) < 1:
            raise ValueError("num_hidden_layers, hidden_size, num_attention_heads and intermediate_size "
                             f"must all be positive, got {layers}, {hidden}, {heads} and {ffn}.")
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} must be divisible by the number of heads {heads}.")
        if not 0.0 <= m.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {m.dropout}.")
        for _, length in self.seq_len_phases():
            if not 16 <= length <= MAX_SEQ_LEN:
                raise ValueError(f"block length must be between 16 and {MAX_SEQ_LEN}, got {length}.")
        check_block_starts(d.block_starts)
        if not 0.0 <= d.heldout_fraction < 0.5:
            raise ValueError(f"heldout_fraction must be in [0, 0.5), got {d.heldout_fraction}.")
        if d.max_corpus_tokens < 1000:
            raise ValueError(f"max_corpus_tokens must be at least 1000, got {d.max_corpus_tokens}.")
        if opt.batch_size < 2:
            raise ValueError(f"batch_size must be at least 2, got {opt.batch_size}.")
        if opt.steps < 1:
            raise ValueError(f"steps must be at least 1, got {opt.steps}.")
        if o.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {list(OBJECTIVES)}, got {str(o.objective)[:40]!r}.")
        if o.ltr_targets not in LTR_TARGETS:
            raise ValueError(f"ltr_targets must be one of {list(LTR_TARGETS)}, got {str(o.ltr_targets)[:40]!r}.")
        if o.objective == LTR and o.ltr_targets == "masked" and o.static_masks:
            raise ValueError("ltr_targets 'masked' predicts the words a masked-LM run would mask afresh each time; "
                             "it has no static masks: set static_masks to 0.")
        if o.objective == LTR and o.nsp:
            raise ValueError("Next-sentence prediction goes with the masked LM (BERT); a left-to-right run has none: "
                             "turn NSP off or choose the masked-LM objective.")
        if not 0.0 < o.mlm_probability < 1.0:
            raise ValueError(f"mlm_probability must be between 0 and 1, got {o.mlm_probability}.")
        if min(o.mask_replace_prob, o.random_replace_prob) < 0 or (
            o.mask_replace_prob + o.random_replace_prob > 1.0 + 1e-9
        ):
            raise ValueError("mask_replace_prob + random_replace_prob must be within [0, 1], each at least 0, "
                             f"got {o.mask_replace_prob} + {o.random_replace_prob}.")
        if o.static_masks < 0:
            raise ValueError(f"static_masks must be 0 (dynamic masking) or a number of fixed masks per block, "
                             f"got {o.static_masks}.")
        self._validate_levers()
        if not math.isfinite(opt.lr) or opt.lr <= 0 or opt.lr > 1.0:
            raise ValueError(f"lr must be a positive learning rate of at most 1, got {opt.lr}.")
        for name, value in (("warmup_steps", opt.warmup_steps), ("weight_decay", opt.weight_decay),
                            ("grad_clip", opt.grad_clip)):
            if not value >= 0:
                raise ValueError(f"{name} must not be negative, got {value}.")
        validate_probe_text(mon.probe_text)
        validate_expected(mon.probe_expected)
        if sysc.precision not in ("auto", "bf16", "fp32"):
            raise ValueError(f"precision must be 'auto', 'bf16' or 'fp32', got {sysc.precision!r}.")
        for name, value in (("log_every", mon.log_every), ("eval_every", mon.eval_every),
                            ("eval_batches", mon.eval_batches)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}.")
        if mon.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be 0 (only at the end) or more, got {mon.checkpoint_every}.")
        if sysc.num_threads < 0:
            raise ValueError(f"num_threads must be 0 (automatic) or more, got {sysc.num_threads}.")

    def _validate_levers(self) -> None:
        """The settings that speed up a run's first minutes: ValueError when one cannot train."""
        m, opt = self.model, self.optim
        if not (math.isfinite(m.locality_bias) and 0.0 <= m.locality_bias <= MAX_LOCALITY_BIAS):
            raise ValueError(f"locality_bias must be between 0 (off) and {MAX_LOCALITY_BIAS:g}, got {m.locality_bias}.")
        if not 0.0 <= m.locality_fade <= 1.0:
            raise ValueError(f"locality_fade must be in [0, 1] (0 = never fades), got {m.locality_fade}.")
        if not 0.0 < opt.adam_beta2 < 1.0:
            raise ValueError(f"adam_beta2 must be between 0 and 1, got {opt.adam_beta2}.")
        if not (math.isfinite(opt.time_budget_s) and opt.time_budget_s >= 0):
            raise ValueError(f"time_budget_s must be 0 (no time budget) or a number of seconds, got {opt.time_budget_s}.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """From :meth:`to_dict`'s nested form (or the flat form of earlier checkpoints); types checked."""
        if not isinstance(data, dict):
            raise ValueError("A training config must be a JSON object.")
        if any(isinstance(data.get(group), dict) for group in GROUPS):
            flat: dict[str, Any] = {}
            for group, values in data.items():
                if group not in GROUPS or not isinstance(values, dict):
                    raise ValueError(f"Unknown config group {group!r}.")
                flat.update(values)
        else:
            flat = dict(data)
        for name, default in RETIRED.items():
            if name in flat and (value := flat.pop(name)) != default and default is not None:
                raise ValueError(f"This run was trained with {name} = {value!r}, a setting this version no longer "
                                 "has; it cannot be resumed here.")
        return cls.from_flat(**flat)

    @classmethod
    def from_json(cls, path: str | Path) -> TrainConfig:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"The training config {Path(path).name} cannot be read: {exc}") from None
        return cls.from_dict(data)


def parse_seq_len_schedule(text: str, steps: int) -> list[tuple[int, int]]:
    """"128:0.9,512:0.1" -> [(0, 128), (900, 512)] for 1000 steps: (first step, block length) per phase.

    The fractions must sum to 1; block lengths must not shrink (BERT grew 128 -> 512)."""
    phases: list[tuple[int, float]] = []
    for part in text.split(","):
        try:
            length, fraction = part.split(":")
            phases.append((int(length), float(fraction)))
        except ValueError:
            raise ValueError(f"Block-length schedule {text!r}: write it as LENGTH:FRACTION pairs, "
                             "e.g. 128:0.9,512:0.1.") from None
    if any(f <= 0 for _, f in phases) or abs(sum(f for _, f in phases) - 1.0) > 1e-6:
        raise ValueError(f"Block-length schedule {text!r}: the fractions must be positive and sum to 1.")
    if any(b[0] < a[0] for a, b in pairwise(phases)):
        raise ValueError(f"Block-length schedule {text!r}: block lengths must not shrink.")
    out, start, acc = [], 0, 0.0
    for length, fraction in phases:
        out.append((start, length))
        acc += fraction
        start = round(acc * steps)
    return out


def bert_shape(cfg: TrainConfig, vocab_size: int = VOCAB_SIZE) -> dict[str, int]:
    """The BertConfig fields of a run: preset/custom shape, 512 positions (BERT's; whatever the block length)."""
    layers, hidden, heads, ffn = cfg.model_shape()
    return dict(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=ffn, max_position_embeddings=MAX_SEQ_LEN, type_vocab_size=2)


def bert_config(cfg: TrainConfig, vocab_size: int = VOCAB_SIZE) -> BertConfig:
    """The BertConfig of a run: preset/custom shape, 512 positions (whatever the block length), its dropout."""
    from transformers import BertConfig

    # a left-to-right run: the same BERT with the causal mask (BertLMHeadModel reads is_decoder)
    return BertConfig(**bert_shape(cfg, vocab_size), hidden_dropout_prob=cfg.model.dropout,
                      attention_probs_dropout_prob=cfg.model.dropout, is_decoder=cfg.objective.objective == LTR)


def param_count_of_run(cfg: TrainConfig) -> int:
    """Parameters of the masked-LM a run trains (with the NSP head when it asks for NSP), by formula (a
    left-to-right run's BertLMHeadModel has the same ones):
    no model is built and transformers is not loaded (the page checks the public cap before torch)."""
    shape = SimpleNamespace(tie_word_embeddings=True, **bert_shape(cfg))  # BertConfig's fields, embeddings tied
    return _bert_param_count(shape, cfg.objective.nsp)


def param_count_of_config(config: BertConfig, nsp: bool = False) -> int:
    """Parameters of ``BertForMaskedLM(config)`` (``BertForPreTraining`` when ``nsp``), by formula."""
    return _bert_param_count(config, nsp)


def param_count_of_model(model: Any) -> int:
    """Parameters of a built model (an ``nn.Module``), tied ones counted once."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def param_count(model_or_cfg: Any, nsp: bool = False) -> int:
    """The parameter count of a TrainConfig, a BertConfig or a model: one of the three functions above,
    chosen by the argument's kind (for callers that hold any of them)."""
    if isinstance(model_or_cfg, TrainConfig):
        return param_count_of_run(model_or_cfg)
    if hasattr(model_or_cfg, "parameters"):
        return param_count_of_model(model_or_cfg)
    return param_count_of_config(model_or_cfg, nsp)


def _bert_param_count(c: BertConfig, nsp: bool) -> int:
    """Parameters of ``BertForMaskedLM(c)`` (``BertForPreTraining`` when `nsp`), by formula."""
    h, f = c.hidden_size, c.intermediate_size
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * (2 * h)  # Q K V O, FFN in/out, 2 LayerNorms
    head = (h * h + h) + 2 * h + c.vocab_size  # transform, its LayerNorm, decoder bias
    if not c.tie_word_embeddings:  # the decoder then has its own weight and bias
        head += c.vocab_size * h + c.vocab_size
    extra = (h * h + h) + (2 * h + 2) if nsp else 0  # pooler + next-sentence classifier
    return embeddings + c.num_hidden_layers * layer + head + extra

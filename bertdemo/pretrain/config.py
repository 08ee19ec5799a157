"""The one configuration of a pretraining run: `TrainConfig`, the model presets, and the
BertConfig / parameter count they give.

Defaults are chosen so that the default run (bert-tiny on the embedded Wikipedia
summaries, 128-token blocks) shows a clearly falling loss within its first minute on a
2-core CPU.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def validate_probe_text(text: str) -> str:
    """The probe must hold at least one [MASK]; ValueError otherwise."""
    text = (text or "").strip()
    if "[MASK]" not in text:
        raise ValueError("The probe sentence must contain at least one [MASK], e.g. 'Paris is the [MASK] of France.'")
    return text


@dataclass
class TrainConfig:
    # model
    preset: str = "bert-tiny"  # one of PRESETS or "custom"
    layers: int = 2  # custom only: num_hidden_layers
    hidden: int = 128  # custom only: hidden_size (H)
    heads: int = 2  # custom only: num_attention_heads (must divide hidden)
    ffn: int = 512  # custom only: intermediate_size
    init_from: str = ""  # model folder to warm-start from (shape from its config; MLM head added if absent)
    train_layers: int = -1  # -1 = train everything; k >= 0 = only the top k encoder layers + MLM head
    freeze_embeddings: bool = False  # keep the embeddings (and the decoder tied to them) fixed
    # data
    corpus: str = "wiki"  # "wiki" (embedded, offline) | "tinystories" (hub) | path to .txt/.jsonl
    seq_len: int = 128  # tokens per packed block (T), 16..512
    max_corpus_tokens: int = 20_000_000  # stop tokenizing a (large) corpus after this many tokens
    heldout_fraction: float = 0.02  # blocks held out for evaluation (at least a few)
    cache_dir: str = ""  # tokenized-block cache; "" = ~/.cache/bert-explorer/blocks
    # optimisation
    batch_size: int = 32  # blocks per step (per process under torchrun)
    steps: int = 2000  # total optimizer steps
    lr: float = 1e-3  # peak AdamW learning rate
    warmup_steps: int = 30  # linear warmup, then linear decay to 0 at `steps`
    weight_decay: float = 0.01  # AdamW, not applied to biases and LayerNorm weights
    grad_clip: float = 1.0  # max global grad norm; 0 = off
    # objective (DataCollatorForLanguageModeling semantics)
    mlm_probability: float = 0.15  # fraction of (non-special) tokens predicted
    mask_replace_prob: float = 0.8  # of those, replaced by [MASK]
    random_replace_prob: float = 0.1  # of those, replaced by a random token (rest kept)
    fixed_mask_count: bool = True  # exactly round(p * tokens) predictions per row (original BERT)
    nsp: bool = False  # add next-sentence prediction ([CLS] A [SEP] B [SEP], 50% NotNext)
    # logging / evaluation / checkpoints
    log_every: int = 10  # steps between host syncs that record train loss
    eval_every: int = 50  # steps between held-out evaluations (and probe predictions)
    eval_batches: int = 8  # held-out batches per evaluation
    checkpoint_every: int = 500  # steps between checkpoints (also written at stop/finish); 0 = only then
    probe_text: str = "The capital of France is [MASK]."  # one or more [MASK]
    # system
    seed: int = 1337
    device: str = "auto"  # "auto" (cuda > mps > cpu) | "cpu" | "cuda" | "cuda:1" | "mps"
    num_threads: int = 0  # CPU threads; 0 = cpu_count - 1 (leave the UI a core)
    precision: str = "auto"  # "auto": bf16 autocast on CUDA and on CPUs with native bf16 (AVX512-BF16/AMX); "bf16"; "fp32"
    compile: bool = False  # torch.compile the objective (CUDA only)
    runs_dir: str = "runs"  # each run writes runs_dir/<run_id>/checkpoint/
    resume_from: str = ""  # checkpoint folder to continue (model, optimizer, step, metrics)

    def model_shape(self) -> tuple[int, int, int, int]:
        """(layers, hidden, heads, ffn) of the preset, or of the custom fields (or of `init_from`'s config)."""
        if self.init_from:
            cfg = BertConfig.from_pretrained(self.init_from)
            return (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size)
        if self.preset == CUSTOM:
            return (self.layers, self.hidden, self.heads, self.ffn)
        if self.preset not in PRESETS:
            raise ValueError(f"Unknown preset {self.preset!r}; choose one of {[*PRESETS, CUSTOM]}.")
        return PRESETS[self.preset]

    def validate(self) -> None:
        """Raise ValueError with a clear message for settings that cannot train."""
        if self.init_from and not (Path(self.init_from) / "config.json").is_file():
            raise ValueError(f"init_from {self.init_from!r} is not a model folder (no config.json).")
        layers, hidden, heads, ffn = self.model_shape()
        if self.train_layers < -1 or self.train_layers > layers:
            raise ValueError(f"train_layers must be -1 (all) or between 0 and {layers}, got {self.train_layers}.")
        if min(layers, hidden, heads, ffn) < 1:
            raise ValueError("layers, hidden, heads and ffn must all be positive.")
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} must be divisible by the number of heads {heads}.")
        if not 16 <= self.seq_len <= MAX_SEQ_LEN:
            raise ValueError(f"seq_len must be between 16 and {MAX_SEQ_LEN}, got {self.seq_len}.")
        if self.batch_size < 2:
            raise ValueError("batch_size must be at least 2.")
        if self.steps < 1:
            raise ValueError("steps must be at least 1.")
        if not 0.0 < self.mlm_probability < 1.0:
            raise ValueError("mlm_probability must be between 0 and 1.")
        if min(self.mask_replace_prob, self.random_replace_prob) < 0 or (
            self.mask_replace_prob + self.random_replace_prob > 1.0 + 1e-9
        ):
            raise ValueError("mask_replace_prob + random_replace_prob must be within [0, 1].")
        if self.lr <= 0:
            raise ValueError("lr must be positive.")
        validate_probe_text(self.probe_text)
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ValueError(f"precision must be 'auto', 'bf16' or 'fp32', got {self.precision!r}.")
        if self.log_every < 1 or self.eval_every < 1 or self.eval_batches < 1:
            raise ValueError("log_every, eval_every and eval_batches must be at least 1.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def from_json(cls, path: str | Path) -> TrainConfig:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def bert_config(cfg: TrainConfig, vocab_size: int = VOCAB_SIZE) -> BertConfig:
    """The BertConfig of a run: preset/custom shape, positions for the block length."""
    layers, hidden, heads, ffn = cfg.model_shape()
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=MAX_SEQ_LEN,
        type_vocab_size=2,
    )


def param_count(model_or_cfg: Any, nsp: bool = False) -> int:
    """Number of parameters (tied embeddings counted once) of a model, or of the BERT masked-LM
    (with the NSP head when `nsp`, or when the TrainConfig asks for it) a BertConfig / TrainConfig
    describes. Configs are counted by formula, without building a model."""
    if isinstance(model_or_cfg, TrainConfig):
        model_or_cfg, nsp = bert_config(model_or_cfg), model_or_cfg.nsp
    if isinstance(model_or_cfg, BertConfig):
        return _bert_param_count(model_or_cfg, nsp)
    seen: set[int] = set()
    total = 0
    for p in model_or_cfg.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


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

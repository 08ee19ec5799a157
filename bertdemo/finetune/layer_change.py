"""What fine-tuning changed, layer by layer: how far each layer's weights moved, how much the representations of
the validation sentences changed, and whether the encoder still fills a [MASK] (forgetting, measured).

* :func:`relative_change`: per layer (the embeddings, then each Transformer layer), ‖W_after − W_before‖ /
  ‖W_before‖ over all that layer's parameters together (Frobenius norms; the pooler and the classifier, new
  for the task, are left out).
* :func:`linear_cka`: linear centred kernel alignment (Kornblith et al. 2019, "Similarity of Neural Network
  Representations Revisited", eq. 5) between two (N, D) representations of the same N examples: 1 for the
  same representation up to rotation and isotropic scaling, lower the more fine-tuning changed it.
* :func:`masked_lm_loss`: the mean cross-entropy of the original masked-LM head at a fixed, seeded 15 % of the
  pieces of held-out sentences, each replaced by [MASK] (no 80/10/10: an evaluation, not training).
* :func:`measure_layer_change`: all three for a fine-tuning run's saved model against the start it was built
  from (rebuilt from its saved settings: the same weights, the same seed), on the first
  :data:`MAX_SENTENCES` validation sentences, which fine-tuning never trained on.

No gradio; the Fine-tune tab draws the result (:func:`bertdemo.viz.finetune.layer_change_spec`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bertdemo.locks import tokenize
from bertdemo.request_budget import WorkBudget, sequence_gflop, unbounded

MAX_SENTENCES = 256  # validation sentences read (the bound of the request: four passes over them)
MASK_FRACTION = 0.15
MASK_SEED = 0
BATCH = 32
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class LayerChange:
    """What fine-tuning changed in one run (index 0: the embeddings, l: Transformer layer l)."""

    model: str  # the fine-tuned model's name (ft:<run id>)
    start: str  # what it started from, as the page names it
    layers: tuple[str, ...]  # "embeddings", "layer 1", …
    weight_change: tuple[float, ...]  # relative change of each layer's weights
    cka: tuple[float, ...]  # linear CKA, before vs after, of each layer's output (mean-pooled sentence vectors)
    sentences: int
    mlm_loss_before: float | None  # None: the start has no trained masked-LM head (a random start)
    mlm_loss_after: float | None
    masked_pieces: int
    note: str = ""  # why there is no masked-LM loss, when there is none

    @property
    def most_changed(self) -> int:
        """The layer whose representation changed most (lowest CKA)."""
        return int(np.argmin(self.cka))


def relative_change(before: torch.nn.Module, after: torch.nn.Module, groups: Sequence[str]) -> list[float]:
    """‖after − before‖ / ‖before‖ over the parameters whose names start with each prefix in ``groups``
    (both modules of the same architecture); ValueError for a group with no parameter."""
    b, a = dict(before.named_parameters()), dict(after.named_parameters())
    out = []
    for prefix in groups:
        names = [n for n in b if n.startswith(prefix)]
        if not names:
            raise ValueError(f"No parameter is named {prefix}…")
        diff = sum(float(((a[n].detach().double() - b[n].detach().double()) ** 2).sum()) for n in names)
        norm = sum(float((b[n].detach().double() ** 2).sum()) for n in names)
        out.append((diff / norm) ** 0.5 if norm else float("nan"))
    return out


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA between ``x`` (N, D1) and ``y`` (N, D2), rows the same examples:
    ‖Yᶜᵀ Xᶜ‖²_F / (‖Xᶜᵀ Xᶜ‖_F ‖Yᶜᵀ Yᶜ‖_F), with the columns centred (ᶜ); in [0, 1]."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError("CKA compares two (N, D) matrices of the same N ≥ 2 examples.")
    x = x - x.mean(0)
    y = y - y.mean(0)
    cross = np.linalg.norm(y.T @ x) ** 2
    denom = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    return float(cross / denom) if denom else float("nan")


def _batches(tokenizer, texts: Sequence[str], max_len: int):
    for start in range(0, len(texts), BATCH):
        yield tokenize(tokenizer, list(texts[start:start + BATCH]), truncation=True, max_length=max_len, padding=True,
                        return_tensors="pt")


@torch.inference_mode()
def sentence_vectors(encoder: torch.nn.Module, tokenizer, texts: Sequence[str], max_len: int,
                     budget: WorkBudget | None = None) -> list[np.ndarray]:
    """Every hidden state's mean over each sentence's real pieces: a list (embeddings, layer 1, …) of (N, D)."""
    budget = budget or unbounded()
    per_layer: list[list[np.ndarray]] = []
    was_training = encoder.training
    encoder.eval()
    for enc in _batches(tokenizer, texts, max_len):
        budget.check_time(len(enc["input_ids"]))
        out = encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_hidden_states=True)
        mask = enc["attention_mask"].unsqueeze(-1).float()
        for i, h in enumerate(out.hidden_states):
            if len(per_layer) <= i:
                per_layer.append([])
            per_layer[i].append(((h * mask).sum(1) / mask.sum(1)).float().numpy())
    encoder.train(was_training)
    return [np.concatenate(chunks) for chunks in per_layer]


def mask_positions(input_ids: torch.Tensor, special: torch.Tensor, seed: int = MASK_SEED,
                   fraction: float = MASK_FRACTION) -> torch.Tensor:
    """(B, S) bool: a seeded ``fraction`` of each row's ordinary pieces (at least one), never a special one."""
    gen = torch.Generator().manual_seed(seed)
    draw = torch.rand(input_ids.shape, generator=gen)
    draw[special] = 2.0  # never picked
    picked = draw < fraction
    first = draw.argmin(1)  # each row's lowest draw: an ordinary piece whenever the row has one
    rows = torch.arange(len(input_ids))
    picked[rows, first] = picked[rows, first] | ~special[rows, first]
    return picked


@torch.inference_mode()
def masked_lm_loss(mlm: torch.nn.Module, tokenizer, texts: Sequence[str], max_len: int, seed: int = MASK_SEED,
                   budget: WorkBudget | None = None) -> tuple[float, int]:
    """(mean cross-entropy at the masked pieces, how many) for a masked LM on ``texts``: the same pieces
    masked for every model (seeded per batch)."""
    budget = budget or unbounded()
    total, count = 0.0, 0
    was_training = mlm.training
    mlm.eval()
    for b, enc in enumerate(_batches(tokenizer, texts, max_len)):
        budget.check_time(len(enc["input_ids"]))
        ids = enc["input_ids"]
        special = torch.tensor([tokenizer.get_special_tokens_mask(row, already_has_special_tokens=True)
                                for row in ids.tolist()], dtype=torch.bool) | (enc["attention_mask"] == 0)
        picked = mask_positions(ids, special, seed + b)
        masked = ids.masked_fill(picked, tokenizer.mask_token_id)
        logits = mlm(input_ids=masked, attention_mask=enc["attention_mask"]).logits.float()
        total += float(torch.nn.functional.cross_entropy(logits[picked], ids[picked], reduction="sum"))
        count += int(picked.sum())
    mlm.train(was_training)
    return total / max(1, count), count


def layer_change_gflop(config, sentences: int, max_len: int, with_mlm: bool) -> float:
    """The request's cost: the start and the fine-tuned encoder read every sentence, and, with a head, both
    masked LMs once more (their output layer over the whole vocabulary included)."""
    one = sequence_gflop(config, max_len)
    head = 2 * max_len * config.hidden_size * config.vocab_size / 1e9
    return sentences * (2 * one + (2 * (one + head) if with_mlm else 0.0))


def measure_layer_change(name: str, folder: str | Path, texts: Sequence[str], cache_dir: str | Path | None = None,
                         budget: WorkBudget | None = None, progress: Progress | None = None) -> LayerChange:
    """:class:`LayerChange` of the fine-tuning run saved in ``folder`` (named ``name``) on the first
    :data:`MAX_SENTENCES` of ``texts`` (validation sentences); the start is rebuilt from the run's saved
    settings. ValueError when the start is gone or the budget refuses the work."""
    from transformers import AutoTokenizer, BertForMaskedLM, BertForSequenceClassification

    from bertdemo.finetune.config import RANDOM, FinetuneConfig, is_random_start, run_of_init
    from bertdemo.finetune.engine import CONFIG_FILE, build_model
    from bertdemo.locks import MODEL_INIT_LOCK
    from bertdemo.models.mlm_head import start_folder

    budget = budget or unbounded()
    report = progress or (lambda f, m: None)
    folder = Path(folder)
    try:
        settings = json.loads((folder / CONFIG_FILE).read_text())
        cfg = FinetuneConfig(**{k: v for k, v in settings.items() if k in FinetuneConfig.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        raise ValueError(f"{name} has no saved fine-tuning settings: pick a fine-tuning run from the list.") from None
    if cfg.init_path and not (Path(cfg.init_path) / "config.json").is_file():
        raise ValueError(f"{name} started from {cfg.init}, which is no longer on this server: its start cannot be "
                         "rebuilt to compare with.")
    texts = [t for t in texts if t.strip()][:MAX_SENTENCES]
    if len(texts) < 2:
        raise ValueError("The layer change needs at least 2 sentences.")
    with MODEL_INIT_LOCK:
        after = BertForSequenceClassification.from_pretrained(folder, use_safetensors=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    labels = [after.config.id2label[i] for i in range(after.config.num_labels)]
    start_mlm_folder, start_name = start_folder(folder, cache_dir)
    budget.charge(layer_change_gflop(after.config, len(texts), cfg.max_seq_len, start_mlm_folder is not None),
                  f"{len(texts):,} sentences through two encoders", "Pick a smaller model.")
    report(0.05, "Rebuilding the start…")
    before = build_model(cfg, labels, cache_dir).model.eval()
    n_layers = after.config.num_hidden_layers
    groups = ["bert.embeddings."] + [f"bert.encoder.layer.{i}." for i in range(n_layers)]
    change = relative_change(before, after, groups)
    report(0.2, "The validation sentences through the start…")
    vec_before = sentence_vectors(before.bert, tokenizer, texts, cfg.max_seq_len, budget)
    report(0.4, "… and through the fine-tuned encoder…")
    vec_after = sentence_vectors(after.bert, tokenizer, texts, cfg.max_seq_len, budget)
    cka = [linear_cka(b, a) for b, a in zip(vec_before, vec_after)]
    loss_before = loss_after = None
    masked, note = 0, ""
    if start_mlm_folder is None or is_random_start(cfg.init):
        note = f"No masked-LM loss: {start_name}."
    else:
        report(0.6, "Masked-LM loss before and after…")
        with MODEL_INIT_LOCK:
            mlm_before = BertForMaskedLM.from_pretrained(start_mlm_folder).eval()
        loss_before, masked = masked_lm_loss(mlm_before, tokenizer, texts, cfg.max_seq_len, budget=budget)
        mlm_after = copy.deepcopy(mlm_before)  # the same head; the encoder's weights from the fine-tuned run
        encoder = {k: v for k, v in after.state_dict().items() if k.startswith(("bert.embeddings.", "bert.encoder."))}
        mlm_after.load_state_dict(encoder, strict=False)
        loss_after, _ = masked_lm_loss(mlm_after, tokenizer, texts, cfg.max_seq_len, budget=budget)
    report(1.0, "Done")
    start = {"embedded": "the embedded pretrained model", RANDOM: "random weights of the same shape"}.get(cfg.init, cfg.init)
    if is_random_start(cfg.init) and run_of_init(cfg.init):  # random weights of a run's shape
        start = f"random weights of the shape of {run_of_init(cfg.init)}"
    return LayerChange(name, start, tuple(["embeddings"] + [f"layer {i + 1}" for i in range(n_layers)]),
                       tuple(change), tuple(cka), len(texts), loss_before, loss_after, masked, note)

"""Frozen features: every layer's hidden states pooled per text, computed once per (model, texts) and cached.

For a list of texts and a model, :meth:`ActivationCache.get` runs the model's encoder in batches
(texts sorted by length, so little padding is computed; ``torch.inference_mode``) and keeps, for the
embedding output and each layer's output, two vectors per text: the mean over its real tokens (the
attention mask, [CLS] and [SEP] included) and the [CLS] vector. A progress callback hears after each batch.

Key: (model name, weights stamp, SHA-256 of the texts, token cap). The name says which model; the stamp
(:func:`bertdemo.models.store.weights_stamp`) changes when its weights are changed in place, so features of
a model being fine-tuned are never served stale (a caller that builds a fresh model object for the same
weights each time passes its own ``weights_key`` instead).

Memory bound: the cache holds at most ``max_bytes`` (default :data:`DEFAULT_CACHE_BYTES`, 256 MiB) of
features within the server's memory budget (:mod:`bertdemo.memory`), evicting the least recently used entries; one entry takes ``2 × (layers + 1) × texts × hidden ×
4`` bytes (float32), e.g. 7 × 2 × 9,033 × 384 × 4 ≈ 194 MB for the embedded model on every topic example,
and a request larger than the whole bound is refused with ValueError before any work. At most
:data:`MAX_TEXTS` texts, each cut to ``max_tokens`` tokens (default :data:`MAX_TOKENS`); while computing,
one batch's hidden states (``batch × max_tokens × hidden × (layers + 1)`` floats) are alive at a time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bertdemo.locks import tokenize
from bertdemo.memory import MemoryBudget
from bertdemo.models.loading import weights_stamp

Progress = Callable[[float, str], None]
DEFAULT_CACHE_BYTES = 256 * 2**20
MAX_TEXTS = 20_000
MAX_TOKENS = 64
BATCH_SIZE = 32
POOLINGS = ("mean", "cls")


@dataclass(frozen=True)
class LayerFeatures:
    """Pooled features of ``n`` texts at every layer: ``mean[l]`` and ``cls[l]`` are (n, hidden) float32,
    layer 0 the embedding output, layer ``l`` the output of encoder layer ``l``."""

    model_name: str
    texts_hash: str
    mean: np.ndarray  # (layers + 1, n, hidden)
    cls: np.ndarray  # (layers + 1, n, hidden)

    @property
    def n_layers(self) -> int:
        """Number of encoder layers (the arrays hold one more: the embeddings)."""
        return self.mean.shape[0] - 1

    @property
    def nbytes(self) -> int:
        return int(self.mean.nbytes + self.cls.nbytes)

    def pooled(self, pooling: str) -> np.ndarray:
        """The (layers + 1, n, hidden) array of ``pooling`` ("mean" or "cls")."""
        if pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {pooling!r}: use one of {', '.join(POOLINGS)}.")
        return self.mean if pooling == "mean" else self.cls


def texts_hash(texts: Sequence[str]) -> str:
    """SHA-256 of the texts in order (lengths included, so no two lists collide by concatenation)."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _shape(model: torch.nn.Module) -> tuple[int, int]:
    cfg = model.config
    return int(cfg.num_hidden_layers), int(cfg.hidden_size)


def feature_bytes(model: torch.nn.Module, n_texts: int) -> int:
    """Bytes the pooled features of ``n_texts`` texts take for ``model`` (both poolings, float32)."""
    layers, hidden = _shape(model)
    return 2 * (layers + 1) * n_texts * hidden * 4


def compute_features(model: torch.nn.Module, tokenizer, texts: Sequence[str], model_name: str = "",
                     max_tokens: int = MAX_TOKENS, batch_size: int = BATCH_SIZE,
                     progress: Progress | None = None) -> LayerFeatures:
    """Pooled features of ``texts`` at every layer of ``model`` (a BERT-family model, with or without a
    head: its encoder is run), in batches, with ``progress(fraction, message)`` after each one."""
    texts = list(texts)
    if not texts:
        raise ValueError("No texts to compute features for.")
    if len(texts) > MAX_TEXTS:
        raise ValueError(f"{len(texts):,} texts is more than the {MAX_TEXTS:,} features are computed for at once.")
    encoder = getattr(model, "base_model", model)
    layers, hidden = _shape(model)
    max_tokens = min(int(max_tokens), int(getattr(model.config, "max_position_embeddings", max_tokens)))
    device = next(model.parameters()).device
    mean = np.empty((layers + 1, len(texts), hidden), dtype=np.float32)
    cls = np.empty_like(mean)
    lengths = [len(ids) for ids in tokenize(tokenizer, texts, truncation=True, max_length=max_tokens)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                idx = order[start:start + batch_size]
                batch = tokenize(tokenizer, [texts[i] for i in idx], padding=True, truncation=True,
                                 max_length=max_tokens, return_tensors="pt").to(device)
                out = encoder(**batch, output_hidden_states=True, return_dict=True)
                mask = batch["attention_mask"].unsqueeze(-1).to(torch.float32)
                for layer, h in enumerate(out.hidden_states):
                    h = h.float()
                    mean[layer, idx] = ((h * mask).sum(1) / mask.sum(1)).cpu().numpy()
                    cls[layer, idx] = h[:, 0].cpu().numpy()
                if progress is not None:
                    done = min(start + batch_size, len(texts))
                    progress(done / len(texts), f"features of {done:,} / {len(texts):,} texts")
    finally:
        model.train(was_training)
    return LayerFeatures(model_name, texts_hash(texts), mean, cls)


class ActivationCache:
    """Pooled features per (model name, weights stamp, texts, token cap), computed once, LRU-bounded in bytes
    (``max_bytes``) within the server's memory budget (``budget``; its own when none is given).
    Thread-safe: two requests for the same features compute them once."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, budget: MemoryBudget | None = None) -> None:
        budget = budget or MemoryBudget(max(int(max_bytes), 1))
        self._entries = budget.cache("pooled features", max_bytes=int(max_bytes))
        self.max_bytes = self._entries.max_bytes

    def get(self, model_name: str, model: torch.nn.Module, tokenizer, texts: Sequence[str],
            max_tokens: int = MAX_TOKENS, batch_size: int = BATCH_SIZE,
            progress: Progress | None = None, weights_key: object = None) -> LayerFeatures:
        """The features of ``texts`` for ``model`` (named ``model_name``), from the cache or computed now.
        ``weights_key``: what identifies the weights when a fresh model object is built for the same
        weights each time (a checkpoint's file stamp, a random model's seed); default the model's
        :func:`~bertdemo.models.store.weights_stamp`. ValueError when the features alone would exceed the
        cache's bound or :data:`MAX_TEXTS`."""
        texts = list(texts)
        need = feature_bytes(model, len(texts))
        if need > self.max_bytes:
            raise ValueError(f"Features of {len(texts):,} texts take {need / 2**20:,.0f} MiB, more than the "
                             f"{self.max_bytes / 2**20:,.0f} MiB the feature cache holds: use fewer texts.")
        stamp = weights_stamp(model) if weights_key is None else weights_key
        key = (model_name, stamp, texts_hash(texts), int(max_tokens))
        return self._entries.get_or_build(
            key, lambda: compute_features(model, tokenizer, texts, model_name, max_tokens, batch_size, progress),
            lambda f: f.nbytes)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes of features held now (never more than ``max_bytes``)."""
        return self._entries.nbytes

"""Pooled features of every layer, the activation cache that keeps them, and the linear head trained on them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertModel

from bertdemo.finetune import features as feats
from bertdemo.finetune.linear_head import train_linear_head, train_linear_heads
from bertdemo.finetune.scores import confusion_matrix, scores
from tests.helpers import tiny_bert_config

TEXTS = ["The cat sat on the mat.", "Paris is the capital of France.", "Go.",
         "A much longer sentence that needs padding in a batch with the short ones above it."]


@pytest.fixture()
def tiny_encoder():
    torch.manual_seed(0)
    return BertModel(tiny_bert_config()).eval()


def test_features_are_each_layers_mean_over_real_tokens_and_cls(tiny_encoder, tokenizer):
    f = feats.compute_features(tiny_encoder, tokenizer, TEXTS, "tiny", batch_size=3)
    assert f.mean.shape == f.cls.shape == (3, 4, 32) and f.n_layers == 2
    for i, text in enumerate(TEXTS):  # alone, no padding: the batched, padded answer is the same
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            hidden = tiny_encoder(**enc, output_hidden_states=True).hidden_states
        for layer, h in enumerate(hidden):
            np.testing.assert_allclose(f.mean[layer, i], h[0].mean(0).numpy(), atol=1e-5)
            np.testing.assert_allclose(f.cls[layer, i], h[0, 0].numpy(), atol=1e-5)
    assert f.pooled("cls") is f.cls
    with pytest.raises(ValueError, match="Unknown pooling"):
        f.pooled("max")


def test_cache_computes_once_reports_progress_and_notices_new_weights(tiny_encoder, tokenizer):
    cache = feats.ActivationCache()
    heard: list[float] = []
    first = cache.get("tiny", tiny_encoder, tokenizer, TEXTS, batch_size=2, progress=lambda f, m: heard.append(f))
    assert heard == [0.5, 1.0]
    again = cache.get("tiny", tiny_encoder, tokenizer, TEXTS, progress=lambda f, m: heard.append(f))
    assert again is first and heard == [0.5, 1.0] and len(cache) == 1
    assert cache.get("tiny", tiny_encoder, tokenizer, TEXTS[:2]) is not first  # other texts: other entry
    with torch.no_grad():
        tiny_encoder.encoder.layer[1].output.dense.weight.mul_(3.0)  # weights changed in place
    changed = cache.get("tiny", tiny_encoder, tokenizer, TEXTS)
    assert changed is not first
    np.testing.assert_allclose(changed.mean[1], first.mean[1], atol=1e-6)  # below the change: the same
    assert not np.allclose(changed.mean[2], first.mean[2])


def test_cache_stays_within_its_byte_bound(tiny_encoder, tokenizer):
    one = feats.feature_bytes(tiny_encoder, 2)
    assert one == 2 * 3 * 2 * 32 * 4
    cache = feats.ActivationCache(max_bytes=2 * one)
    for i in range(4):
        cache.get("tiny", tiny_encoder, tokenizer, [TEXTS[i], TEXTS[(i + 1) % 4]])
        assert cache.nbytes <= 2 * one
    assert len(cache) == 2
    with pytest.raises(ValueError, match="more than the"):
        cache.get("tiny", tiny_encoder, tokenizer, TEXTS * 2)


def test_scores_are_accuracy_and_macro_f1_over_the_classes_that_occur():
    acc, f1 = scores([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0])
    assert acc == pytest.approx(4 / 6)
    assert f1 == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)  # F1 per class: 2·TP / (2·TP + FP + FN)
    assert scores([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx((0.75, (2 / 3 + 0.8) / 2))  # class 2 never appears
    assert confusion_matrix([0, 0, 1], [0, 1, 1], 3).tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 0]]
    assert all(np.isnan(v) for v in scores([], []))


def _blobs(seed: int, n: int, d: int = 16, classes: int = 3, spread: float = 1.0):
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(99).normal(size=(classes, d)) * 3
    y = np.arange(n) % classes
    return (centers[y] + spread * rng.normal(size=(n, d))).astype(np.float32), y


def test_linear_head_learns_separable_classes_and_is_deterministic():
    x, y = _blobs(0, 300)
    xv, yv = _blobs(1, 90)
    xt, yt = _blobs(2, 90)
    result = train_linear_head(x * 100 + 7, y, xv * 100 + 7, yv, xt * 100 + 7, yt)  # standardised: scale is moot
    assert result.val_accuracy == result.test_accuracy == 1.0 and result.test_macro_f1 == 1.0
    assert result == train_linear_head(x * 100 + 7, y, xv * 100 + 7, yv, xt * 100 + 7, yt)
    noise = np.random.default_rng(3).normal(size=x.shape).astype(np.float32)
    chance = train_linear_head(noise, y, xv, yv, xt, yt)
    assert chance.test_accuracy < 0.6
    with pytest.raises(ValueError, match="training and validation rows"):
        train_linear_head(x[:0], y[:0], xv, yv)


def test_the_penalty_is_chosen_on_validation_and_reported_on_test():
    """Validation and test disagree: a strong penalty answers the training majority (0) everywhere, a weak one
    reads the features. Validation rows are like training; the test rows carry class 1's features but label 0,
    so on test the strong penalty would win: a head that chose on test would report 100 %."""
    y = np.where(np.arange(300) % 5 == 0, 1, 0)  # 60 of class 1, 240 of class 0
    centers = np.random.default_rng(99).normal(size=(2, 16)) * 3
    rng = np.random.default_rng(1)
    x = (centers[y] + rng.normal(size=(300, 16))).astype(np.float32)
    yv = np.arange(100) % 2
    xv = (centers[yv] + rng.normal(size=(100, 16))).astype(np.float32)
    xt = (centers[np.ones(50, dtype=int)] + rng.normal(size=(50, 16))).astype(np.float32)
    yt = np.zeros(50, dtype=int)
    result = train_linear_head(x, y, xv, yv, xt, yt, c_grid=(1e-6, 1.0))
    assert result.c == 1.0 and result.val_accuracy == 1.0
    assert result.test_accuracy == 0.0  # the test split did not choose
    strong = train_linear_head(x, y, xv, yv, xt, yt, c_grid=(1e-6,))
    assert strong.test_accuracy == 1.0 and strong.val_accuracy == 0.5


def test_heads_are_one_per_leading_index():
    x, y = _blobs(0, 200, spread=4.0)
    xv, yv = _blobs(1, 60, spread=4.0)
    noise = np.random.default_rng(5).normal(size=x.shape).astype(np.float32)
    together = train_linear_heads(np.stack([x, noise]), y, np.stack([xv, xv]), yv, np.stack([xv, xv]), yv)
    assert together == [train_linear_head(x, y, xv, yv, xv, yv), train_linear_head(noise, y, xv, yv, xv, yv)]
    with pytest.raises(ValueError, match="heads, rows, features"):
        train_linear_heads(x, y, xv, yv)

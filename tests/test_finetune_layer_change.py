"""What fine-tuning changed: linear CKA checked against its kernel form computed by hand and its invariances,
the relative weight change against known edits, and a tiny run's change measured against its own start —
the masked-LM loss after fine-tuning equal to the loss of the fine-tuned model loaded as a masked LM (ft:<id>)."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch
from transformers import BertForMaskedLM, BertForSequenceClassification

from bertdemo.finetune.engine import run_finetune
from bertdemo.finetune.layer_change import (
    linear_cka,
    mask_positions,
    masked_lm_loss,
    measure_layer_change,
    relative_change,
)
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.runs.control import RunControl
from tests.helpers import tiny_finetune_config, word_task


def hand_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA in its kernel form (Kornblith et al. 2019, eq. 3-4): HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) with
    K = X Xᵀ, L = Y Yᵀ and HSIC(K, L) = tr(K H L H) (the 1/(n-1)² cancels), H the centring matrix."""
    n = len(x)
    h = np.eye(n) - np.ones((n, n)) / n
    k, l_ = x @ x.T, y @ y.T
    hsic = lambda a, b: np.trace(a @ h @ b @ h)
    return hsic(k, l_) / math.sqrt(hsic(k, k) * hsic(l_, l_))


def test_linear_cka_equals_its_kernel_form_and_is_one_for_the_same_vectors_turned_and_scaled():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 5)), rng.normal(size=(20, 7))
    assert linear_cka(x, y) == pytest.approx(hand_cka(x, y), rel=1e-10)
    assert 0 < linear_cka(x, y) < 1
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)
    rotation, _ = np.linalg.qr(rng.normal(size=(5, 5)))  # an orthogonal matrix
    assert np.allclose(rotation.T @ rotation, np.eye(5))
    assert linear_cka(x, x @ rotation) == pytest.approx(1.0, abs=1e-12)
    assert linear_cka(x, 3.7 * x) == pytest.approx(1.0, abs=1e-12)
    assert linear_cka(x, y) == pytest.approx(linear_cka(2.5 * x @ rotation, y), rel=1e-10)
    assert linear_cka(x + 4.0, y) == pytest.approx(linear_cka(x, y), rel=1e-10)  # centred: a shift changes nothing
    with pytest.raises(ValueError, match="same N"):
        linear_cka(x, y[:10])


def test_the_relative_weight_change_is_zero_unchanged_and_the_scale_of_an_edit():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    same = copy.deepcopy(model)
    assert relative_change(model, same, ["0.", "1."]) == [0.0, 0.0]
    with torch.no_grad():
        for p in same[1].parameters():
            p.mul_(1.1)  # every weight of the second layer 10 % larger: ‖ΔW‖ / ‖W‖ = 0.1
    assert relative_change(model, same, ["0.", "1."]) == pytest.approx([0.0, 0.1], abs=1e-7)  # float32 weights
    with pytest.raises(ValueError, match="No parameter"):
        relative_change(model, same, ["2."])


def test_masking_picks_only_ordinary_pieces_and_at_least_one_a_row():
    ids = torch.arange(40).reshape(2, 20)
    special = torch.zeros(2, 20, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    special[1, 3:] = True  # a short row: two ordinary pieces
    picked = mask_positions(ids, special, seed=3)
    assert not (picked & special).any() and (picked.sum(1) >= 1).all()
    assert torch.equal(picked, mask_positions(ids, special, seed=3))  # seeded: the same for every model


@pytest.fixture(scope="module")
def tuned(tiny_mlm_dir, tmp_path_factory):
    """A tiny run fine-tuned from a checkpoint with a masked-LM head, saved as the app saves it."""
    runs = tmp_path_factory.mktemp("runs")
    folder = runs / ".finetune" / "20261127-070000-ft-run" / "model"
    cfg = tiny_finetune_config(tiny_mlm_dir, init="run:tiny/checkpoint", epochs=6)
    status = run_finetune(cfg, word_task(), FinetuneMetrics(), RunControl(), folder)
    assert status == "finished"
    return runs, folder


def test_a_runs_change_is_measured_against_its_own_start(tuned, tiny_mlm_dir, tokenizer):
    _runs, folder = tuned
    texts = word_task().val_texts
    change = measure_layer_change("ft:x", folder, texts)
    start = BertForMaskedLM.from_pretrained(tiny_mlm_dir).eval()
    after = BertForSequenceClassification.from_pretrained(folder).eval()
    n = start.config.num_hidden_layers
    assert change.layers == ("embeddings", *(f"layer {i + 1}" for i in range(n)))
    expected = relative_change(start, after, ["bert.embeddings."] + [f"bert.encoder.layer.{i}." for i in range(n)])
    assert change.weight_change == pytest.approx(expected) and min(change.weight_change) > 0
    assert all(0 < c <= 1 + 1e-9 for c in change.cka) and change.sentences == len(texts)
    # the loss before is the start's own masked-LM loss at the same masked pieces
    before, masked = masked_lm_loss(start, tokenizer, texts, 48)
    assert change.mlm_loss_before == pytest.approx(before, rel=1e-6) and change.masked_pieces == masked > 0
    assert change.mlm_loss_after != pytest.approx(change.mlm_loss_before)


def test_the_loss_after_is_the_fine_tuned_model_loaded_as_a_masked_lm(tuned, tokenizer):
    """ft:<id> loads as a masked LM (the fine-tuned encoder, its start's head): its loss is the one measured."""
    from bertdemo.models.loading import load_masked_lm
    from bertdemo.models.policy import AccessPolicy

    runs, folder = tuned
    loaded = load_masked_lm("ft:20261127-070000-ft-run", policy=AccessPolicy(runs_dir=runs))
    texts = word_task().val_texts
    after, _ = masked_lm_loss(loaded.model, tokenizer, texts, 48)
    assert measure_layer_change("ft:x", folder, texts).mlm_loss_after == pytest.approx(after, rel=1e-5)


def test_an_unchanged_run_has_no_weight_change_and_cka_one(tiny_mlm_dir, tmp_path):
    """A run stopped before its first step saves its start: nothing moved, every layer's vectors the same."""
    control = RunControl()
    control.stop_event.set()
    folder = tmp_path / "model"
    run_finetune(tiny_finetune_config(tiny_mlm_dir, init="run:tiny/checkpoint"), word_task(), FinetuneMetrics(),
                 control, folder)
    change = measure_layer_change("ft:still", folder, word_task().val_texts)
    assert change.weight_change == pytest.approx([0.0] * len(change.layers), abs=1e-7)
    assert change.cka == pytest.approx([1.0] * len(change.layers), abs=1e-6)
    assert change.mlm_loss_after == pytest.approx(change.mlm_loss_before, rel=1e-6)


def test_a_random_start_is_rebuilt_by_its_seed_and_has_no_masked_lm_loss(tiny_mlm_dir, tmp_path):
    control = RunControl()
    control.stop_event.set()
    folder = tmp_path / "model"
    run_finetune(tiny_finetune_config(tiny_mlm_dir, seed=5), word_task(), FinetuneMetrics(), control, folder)
    change = measure_layer_change("ft:random", folder, word_task().val_texts)
    assert change.weight_change == pytest.approx([0.0] * len(change.layers), abs=1e-7)  # the same random start
    assert change.mlm_loss_before is None and "random weights" in change.note


def test_a_run_whose_start_is_gone_is_refused_in_words(tuned, tmp_path):
    _runs, folder = tuned
    moved = tmp_path / "copy"
    moved.mkdir()
    for f in folder.iterdir():
        (moved / f.name).write_bytes(f.read_bytes())
    settings = json.loads((moved / "finetune_config.json").read_text())
    (moved / "finetune_config.json").write_text(json.dumps({**settings, "init_path": str(tmp_path / "gone")}))
    with pytest.raises(ValueError, match="no longer on this server"):
        measure_layer_change("ft:copy", moved, word_task().val_texts)

"""The registered attention function: SDPA by default, weights / Q,K,V / head ablation per context."""

from __future__ import annotations

import threading

import pytest
import torch
from transformers import BertForMaskedLM, DistilBertConfig, DistilBertForMaskedLM

from bertdemo.models import attention_modes
from bertdemo.models.attention_modes import attention_mode
from tests.helpers import manual_logits, tiny_bert_config


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The same tiny BERT weights loaded twice: reference eager attention and ours."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-bert")
    BertForMaskedLM(tiny_bert_config(num_hidden_layers=3, num_attention_heads=4)).save_pretrained(path)
    eager = BertForMaskedLM.from_pretrained(path, attn_implementation="eager").eval()
    ours = BertForMaskedLM.from_pretrained(path, attn_implementation=attention_modes.IMPLEMENTATION).eval()
    return eager, ours


@pytest.fixture(scope="module")
def batch():
    """Two sequences, the second padded: (B=2, S=9)."""
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, 2000, (2, 9), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def test_registered_and_used_by_the_store(tiny_loaded):
    assert attention_modes.implementation_for(tiny_loaded.model.config) == "bertdemo"
    assert tiny_loaded.model.config._attn_implementation == "bertdemo"
    assert attention_modes.supports_modes(tiny_loaded.model)


def test_outputs_match_eager_with_and_without_weights(pair, batch):
    eager, ours = pair
    with torch.no_grad():
        ref = eager(**batch, output_attentions=True)
        fast = ours(**batch)  # SDPA
        assert fast.attentions is None
        with attention_mode(weights=True) as rec:
            weighted = ours(**batch)
        listed = ours(**batch, output_attentions=True)  # output_attentions alone still works
    real = batch["attention_mask"].bool()
    for out in (fast, weighted, listed):
        torch.testing.assert_close(out.logits[real], ref.logits[real], atol=1e-5, rtol=1e-5)
    assert sorted(rec.weights) == [0, 1, 2]
    for layer in range(3):
        torch.testing.assert_close(rec.weights[layer], ref.attentions[layer], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(listed.attentions[layer], ref.attentions[layer], atol=1e-6, rtol=1e-5)
    assert rec.stacked_weights().shape == (3, 2, 4, 9, 9)
    assert float(rec.weights[0][1, :, :, 6:].abs().max()) == 0.0  # padding gets no attention


def test_qkv_capture(pair, batch):
    _, ours = pair
    with torch.no_grad(), attention_mode(qkv=True) as rec:
        ours(**batch)
        h = ours.bert.embeddings(input_ids=batch["input_ids"])
        q0 = ours.bert.encoder.layer[0].attention.self.query(h).view(2, 9, 4, 8).transpose(1, 2)
    assert sorted(rec.qkv) == [0, 1, 2] and not rec.weights
    torch.testing.assert_close(rec.qkv[0][0], q0)
    assert rec.qkv[2][1].shape == rec.qkv[2][2].shape == (2, 4, 9, 8)  # (B, H, S, d)


@pytest.mark.parametrize("weights", [False, True])
def test_ablation_matches_manual_forward(pair, batch, weights):
    _, ours = pair
    off = {(0, 1), (2, 0), (2, 3)}
    with torch.no_grad():
        expected = manual_logits(ours, batch["input_ids"], batch["attention_mask"], off)
        intact = manual_logits(ours, batch["input_ids"], batch["attention_mask"], set())
        with attention_mode(weights=weights, ablate=off) as rec:
            got = ours(**batch).logits
        plain = ours(**batch).logits  # the context is gone after the block
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(got[real], expected[real], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(plain[real], intact[real], atol=1e-4, rtol=1e-4)
    assert not torch.allclose(got[real], plain[real], atol=1e-3)
    if weights:
        assert float(rec.weights[2][:, 3].abs().max()) == 0.0
        torch.testing.assert_close(rec.weights[2][:, 1].sum(-1), torch.ones(2, 9))


def test_threads_each_get_their_own_mode(pair, batch):
    _, ours = pair
    modes = {"a": {(0, 0), (1, 2)}, "b": {(2, 1)}, "none": set()}
    with torch.no_grad():
        expected = {k: manual_logits(ours, batch["input_ids"], batch["attention_mask"], v) for k, v in modes.items()}
    barrier = threading.Barrier(len(modes))
    errors: list[str] = []

    def worker(name: str) -> None:
        for _ in range(8):
            barrier.wait()
            with torch.no_grad(), attention_mode(weights=name == "a", ablate=modes[name]) as rec:
                got = ours(**batch).logits
            if not torch.allclose(got[0], expected[name][0], atol=1e-4):
                errors.append(f"{name}: logits of another mode")
            if (name == "a") != bool(rec.weights):
                errors.append(f"{name}: weights recorded {sorted(rec.weights)}")

    threads = [threading.Thread(target=worker, args=(name,)) for name in modes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors


def test_distilbert_gets_layer_indices(tmp_path):
    torch.manual_seed(0)
    cfg = DistilBertConfig(vocab_size=200, dim=32, n_layers=2, n_heads=2, hidden_dim=64)
    assert attention_modes.implementation_for(cfg) == "bertdemo"
    DistilBertForMaskedLM(cfg).save_pretrained(tmp_path)
    model = DistilBertForMaskedLM.from_pretrained(tmp_path, attn_implementation="bertdemo").eval()
    ids = torch.tensor([[1, 5, 9, 14, 2]])
    with torch.no_grad(), pytest.raises(ValueError, match="index_layers"), attention_mode(ablate={(1, 0)}):
        model(input_ids=ids)
    assert attention_modes.index_layers(model) == 2
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with attention_mode(weights=True, ablate={(1, 0)}) as rec:
            off = model(input_ids=ids).logits
    assert sorted(rec.weights) == [0, 1] and float(rec.weights[1][:, 0].abs().max()) == 0.0
    assert not torch.allclose(plain, off)

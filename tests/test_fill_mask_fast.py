"""Fast mode (dynamic int8 Linear layers): the same answers as full precision, probabilities within 0.1."""

import dataclasses

import pytest
import torch
from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

from bertdemo.explore import fill_mask
from bertdemo.models import embedded, int8
from bertdemo.models.partial_forward import logits_at
from bertdemo.models.store import load_masked_lm

PROB_TOLERANCE = 0.1  # largest absolute change of any vocabulary entry's probability (measured: 0.047)
SENTENCES = [
    "The capital of France is [MASK].",
    "Thank you very [MASK].",
    "He opened the [MASK] and walked into the room.",
    "I drank a cup of [MASK] this morning.",
    "The [MASK] barked at the [MASK].",
    "She [MASK] to school every day.",
]


@pytest.fixture(scope="module")
def shipped():
    return load_masked_lm(embedded.EMBEDDED_MLM_NAME, "cpu")


def _mask_probs(loaded, text):
    """The whole-vocabulary softmax at each mask, computed as the app computes it: (N, V)."""
    enc = loaded.tokenizer(text, return_tensors="pt")
    positions = (enc["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero().flatten()
    with torch.inference_mode():
        return logits_at(loaded.model, dict(enc), torch.zeros_like(positions), positions).softmax(-1)


@pytest.mark.parametrize("text", SENTENCES)
def test_fast_mode_agrees_with_full_precision(shipped, text):
    full = fill_mask.predict(shipped, text, top_k=5)
    fast = fill_mask.predict(shipped, text, top_k=5, fast=True)
    assert [m.candidates[0].token for m in fast.masks] == [m.candidates[0].token for m in full.masks]
    difference = (_mask_probs(int8.fast_variant(shipped), text) - _mask_probs(shipped, text)).abs().max()
    assert 0 < float(difference) < PROB_TOLERANCE
    assert "int8" in fast.method and "int8" not in full.method


def test_one_int8_copy_per_model_sharing_the_embeddings(shipped):
    fast = int8.fast_variant(shipped)
    assert int8.fast_variant(shipped).model is fast.model
    assert fast.model is not shipped.model and fast.name == shipped.name
    linears = [m for m in fast.model.modules() if isinstance(m, Int8Linear)]
    # per layer q, k, v, fused q/k/v, attention output, intermediate, output; head transform, decoder
    assert len(linears) == 6 * 7 + 2
    assert all(isinstance(m.bertdemo_qkv, Int8Linear) and m.bertdemo_qkv.out_features == 3 * 384
               for m in (layer.attention.self for layer in fast.model.bert.encoder.layer))
    assert not any(isinstance(m, torch.nn.Linear) for m in fast.model.modules())
    assert fast.model.bert.embeddings.word_embeddings.weight is shipped.model.bert.embeddings.word_embeddings.weight
    assert isinstance(shipped.model.cls.predictions.decoder, torch.nn.Linear)  # the original is untouched


def test_fast_mode_refuses_a_model_off_the_cpu(shipped):
    on_gpu = dataclasses.replace(shipped, device=torch.device("cuda"))
    with pytest.raises(ValueError, match="Fast mode \\(int8\\) runs on the CPU"):
        int8.fast_variant(on_gpu)


def test_the_copy_lives_and_dies_with_its_loaded_model(tiny_mlm_dir):
    import gc
    import weakref

    loaded = load_masked_lm(str(tiny_mlm_dir), "cpu")
    fast = int8.fast_variant(loaded).model
    assert int8.fast_variant(loaded).model is fast  # made once per loaded model
    gone = weakref.ref(fast)
    del fast, loaded
    gc.collect()
    assert gone() is None  # an evicted model does not leave its int8 copy behind

"""Fill-Mask's own encoder forward: the last layer at the masks only, equal to the model's full forward;
the fast copy's fused query/key/value projection, equal to the three separate ones."""

from __future__ import annotations

import pytest
import torch
from transformers import RobertaConfig, RobertaForMaskedLM

from bertdemo.explore import fill_mask
from bertdemo.models import attention_modes, int8
from bertdemo.models.store import load_masked_lm

# two sequences of different lengths (the shorter one padded), masks in both, sentence B in the first
PAIRS = [("the cat sat on the [MASK] .", "then it [MASK] away ."), ("a [MASK] b", None)]


def _batch(loaded):
    """``PAIRS`` padded into one batch; (enc, rows, positions) of every mask."""
    tokenizer = loaded.tokenizer
    enc = tokenizer([a for a, _ in PAIRS], [b or "" for _, b in PAIRS], padding=True, return_tensors="pt")
    rows, positions = (enc["input_ids"] == tokenizer.mask_token_id).nonzero(as_tuple=True)
    return dict(enc), rows, positions


def _full(model, enc, rows, positions):
    with torch.inference_mode():
        return model.base_model(**enc).last_hidden_state[rows, positions]  # (N, H), every position computed


def _ours(model, enc, rows, positions):
    with torch.inference_mode():
        return fill_mask.hidden_at(model, enc, rows, positions)


@pytest.fixture(scope="module")
def tiny_roberta(tmp_path_factory, tokenizer):
    torch.manual_seed(1)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=66, pad_token_id=tokenizer.pad_token_id)
    path = tmp_path_factory.mktemp("tiny-roberta")
    RobertaForMaskedLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return load_masked_lm(str(path), "cpu")


def test_last_layer_at_the_masks_equals_the_full_forward(tiny_loaded):
    enc, rows, positions = _batch(tiny_loaded)
    assert enc["attention_mask"].min() == 0 and rows.tolist() == [0, 0, 1]  # padding and three masks in the batch
    assert fill_mask.masks_only_supported(tiny_loaded.model)
    ours = _ours(tiny_loaded.model, enc, rows, positions)
    assert ours.shape == (3, 32)
    assert torch.allclose(ours, _full(tiny_loaded.model, enc, rows, positions), atol=1e-5, rtol=1e-5)


def test_the_last_layer_works_only_at_the_masks(tiny_loaded):
    enc, rows, positions = _batch(tiny_loaded)
    last = tiny_loaded.model.base_model.encoder.layer[-1]
    seen = {}

    def record(name):
        def hook(_module, args):
            seen[name] = tuple(args[0].shape)
        return hook

    hooks = [module.register_forward_pre_hook(record(name))
             for name, module in (("query", last.attention.self.query), ("key", last.attention.self.key),
                                  ("feed-forward", last.intermediate.dense))]
    try:
        _ours(tiny_loaded.model, enc, rows, positions)
    finally:
        for hook in hooks:
            hook.remove()
    width = enc["input_ids"].shape[1]
    assert seen == {"query": (3, 32), "key": (2, width, 32), "feed-forward": (3, 32)}


def test_head_ablation_at_the_masks_equals_the_full_forward(tiny_loaded):
    model = tiny_loaded.model
    enc, rows, positions = _batch(tiny_loaded)
    plain = _ours(model, enc, rows, positions)
    with attention_modes.attention_mode(ablate={(1, 0), (0, 1)}):
        assert fill_mask.masks_only_supported(model)
        ours = _ours(model, enc, rows, positions)
        full = _full(model, enc, rows, positions)
    assert torch.allclose(ours, full, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(ours, plain, atol=1e-3)  # the switched-off heads did change the answer


def test_recording_modes_run_the_models_own_forward(tiny_loaded):
    enc, rows, positions = _batch(tiny_loaded)
    with attention_modes.attention_mode(weights=True) as recording:
        assert not fill_mask.masks_only_supported(tiny_loaded.model)
        ours = _ours(tiny_loaded.model, enc, rows, positions)
    assert sorted(recording.weights) == [0, 1]  # every layer's full (B, H, S, S) weights were recorded
    assert recording.weights[1].shape == (2, 2, enc["input_ids"].shape[1], enc["input_ids"].shape[1])
    assert torch.allclose(ours, _full(tiny_loaded.model, enc, rows, positions), atol=1e-6)


def test_roberta_last_layer_at_the_masks_equals_the_full_forward(tiny_roberta):
    enc, rows, positions = _batch(tiny_roberta)
    enc.pop("token_type_ids")
    assert fill_mask.masks_only_supported(tiny_roberta.model)
    ours = _ours(tiny_roberta.model, enc, rows, positions)
    assert torch.allclose(ours, _full(tiny_roberta.model, enc, rows, positions), atol=1e-5, rtol=1e-5)


def test_fused_int8_query_key_value_equal_the_separate_ones(tiny_loaded):
    fast = int8.int8_copy(tiny_loaded.model)
    attention = fast.base_model.encoder.layer[0].attention.self
    h = torch.randn(2, 7, 32)
    with torch.inference_mode():
        q, k, v = attention.bertdemo_qkv(h).chunk(3, dim=-1)
        assert torch.equal(q, attention.query(h))
        assert torch.equal(k, attention.key(h))
        assert torch.equal(v, attention.value(h))


def test_fast_mode_at_the_masks_stays_close_to_the_int8_full_forward(tiny_loaded):
    # the last layer's activations are quantized over the masks' rows only: a little different, never far
    fast = int8.int8_copy(tiny_loaded.model)
    enc, rows, positions = _batch(tiny_loaded)
    ours, full = _ours(fast, enc, rows, positions), _full(fast, enc, rows, positions)
    assert torch.allclose(ours, full, atol=0.1)
    assert torch.allclose(ours, _full(tiny_loaded.model, enc, rows, positions), atol=0.1)

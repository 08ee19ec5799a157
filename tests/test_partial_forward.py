"""The last layer at chosen positions only (models/partial_forward.py), as Fill-Mask and pretraining
run it: equal to the model's full forward (fp32, with padding, with head ablation, RoBERTa, the int8
copy's fused query/key/value), and it really works at those positions only."""

from __future__ import annotations

import pytest
import torch
from transformers import RobertaConfig, RobertaForMaskedLM

from bertdemo.models import attention_modes, int8
from bertdemo.models.partial_forward import encode_at, hidden_at, supported
from bertdemo.models.store import load_masked_lm
from tests.helpers import masked_blocks, tiny_pretrain_bert

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
        return hidden_at(model, enc, rows, positions)


@pytest.fixture(scope="module")
def tiny_roberta(tmp_path_factory, tokenizer):
    torch.manual_seed(1)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=66, pad_token_id=tokenizer.pad_token_id)
    path = tmp_path_factory.mktemp("tiny-roberta")
    RobertaForMaskedLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return load_masked_lm(str(path), "cpu")


@pytest.mark.parametrize("case", ["padded", "ablated", "roberta", "int8"])
def test_last_layer_at_the_masks_equals_the_full_forward(case, tiny_loaded, tiny_roberta):
    loaded = tiny_roberta if case == "roberta" else tiny_loaded
    model = int8.int8_copy(loaded.model) if case == "int8" else loaded.model
    enc, rows, positions = _batch(loaded)
    if case == "roberta":
        enc.pop("token_type_ids")
    assert enc["attention_mask"].min() == 0 and rows.tolist() == [0, 0, 1]  # padding and three masks in the batch
    if case == "int8":
        assert hasattr(model.base_model.encoder.layer[0].attention.self, "bertdemo_qkv")  # the fused path runs
    ablate = {(1, 0), (0, 1)} if case == "ablated" else ()
    with attention_modes.attention_mode(ablate=ablate):
        assert supported(model)
        ours, full = _ours(model, enc, rows, positions), _full(model, enc, rows, positions)
    assert ours.shape == (3, 32)
    if case == "int8":  # the last layer's activations are quantized over the chosen rows only: close, not equal
        assert torch.allclose(ours, full, atol=0.1)
        assert torch.allclose(ours, _full(loaded.model, enc, rows, positions), atol=0.1)
    else:
        assert torch.allclose(ours, full, atol=1e-5, rtol=1e-5)
    if case == "ablated":  # the switched-off heads did change the answer
        assert not torch.allclose(ours, _ours(model, enc, rows, positions), atol=1e-3)


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_pretraining_blocks_at_their_positions_equal_the_full_encoder(layers: int) -> None:
    model = tiny_pretrain_bert(layers).eval()
    input_ids, _, positions = masked_blocks()
    token_type_ids = (torch.arange(20) >= 9).long().expand(3, 20)
    with torch.no_grad():
        full = model.bert(input_ids=input_ids, token_type_ids=token_type_ids).last_hidden_state  # (B, T, H)
        sparse = encode_at(model.bert, input_ids, positions, token_type_ids)  # (B, k, H)
    assert sparse.shape == (3, 5, 32)
    torch.testing.assert_close(sparse, full.gather(1, positions.unsqueeze(-1).expand(-1, -1, 32)),
                               rtol=1e-5, atol=1e-5)


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
    # (B, k) queries: row 0 has two masks, row 1 one (plus one spare slot), never the whole width
    assert seen == {"query": (2, 2, 32), "key": (2, width, 32), "feed-forward": (2, 2, 32)}


def test_recording_modes_run_the_models_own_forward(tiny_loaded):
    enc, rows, positions = _batch(tiny_loaded)
    with attention_modes.attention_mode(weights=True) as recording:
        assert not supported(tiny_loaded.model)
        ours = _ours(tiny_loaded.model, enc, rows, positions)
    assert sorted(recording.weights) == [0, 1]  # every layer's full (B, H, S, S) weights were recorded
    assert recording.weights[1].shape == (2, 2, enc["input_ids"].shape[1], enc["input_ids"].shape[1])
    assert torch.allclose(ours, _full(tiny_loaded.model, enc, rows, positions), atol=1e-6)


def test_fused_int8_query_key_value_equal_the_separate_ones(tiny_loaded):
    fast = int8.int8_copy(tiny_loaded.model)
    attention = fast.base_model.encoder.layer[0].attention.self
    h = torch.randn(2, 7, 32)
    with torch.inference_mode():
        q, k, v = attention.bertdemo_qkv(h).chunk(3, dim=-1)
        assert torch.equal(q, attention.query(h))
        assert torch.equal(k, attention.key(h))
        assert torch.equal(v, attention.value(h))


def test_dropout_still_applies_in_the_last_layer_at_the_positions() -> None:
    model = tiny_pretrain_bert(1, dropout=0.5).train()
    model.bert.embeddings.eval()  # the only layer is the partial last one: its dropout alone is left
    input_ids, _, positions = masked_blocks()
    torch.manual_seed(0)
    a = encode_at(model.bert, input_ids, positions)
    torch.manual_seed(1)
    b = encode_at(model.bert, input_ids, positions)
    assert not torch.allclose(a, b)
    model.eval()
    torch.testing.assert_close(encode_at(model.bert, input_ids, positions), encode_at(model.bert, input_ids, positions))

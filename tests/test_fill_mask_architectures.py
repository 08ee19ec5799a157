"""Fill-Mask on the RoBERTa and DistilBERT paths (tiny random models): the probabilities the app shows
are the softmax of the model's own logits at the mask."""

from __future__ import annotations

import pytest
import torch
from transformers import DistilBertConfig, DistilBertForMaskedLM, RobertaConfig, RobertaForMaskedLM

from bertdemo.explore.fill_mask import predict
from bertdemo.models.store import load_masked_lm


@pytest.mark.parametrize("kind", ["roberta", "distilbert"])
def test_fill_mask_matches_the_models_own_logits(kind, tokenizer, tmp_path):
    torch.manual_seed(0)
    if kind == "roberta":
        config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=66, pad_token_id=tokenizer.pad_token_id)
        model = RobertaForMaskedLM(config)
    else:
        config = DistilBertConfig(vocab_size=len(tokenizer), dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                  max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id)
        model = DistilBertForMaskedLM(config)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = load_masked_lm(str(tmp_path), "cpu")
    assert loaded.has_mlm_head and loaded.model.config.model_type == kind
    result = predict(loaded, "the cat sat on the [MASK] .", top_k=5)
    enc = tokenizer("the cat sat on the [MASK] .", return_tensors="pt")
    position = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
    with torch.inference_mode():
        enc.pop("token_type_ids") if kind != "roberta" else None
        probs = loaded.model(**enc).logits[0, position].softmax(-1)
    for candidate in result.masks[0].candidates:
        assert candidate.prob == pytest.approx(float(probs[candidate.id]), abs=1e-5)
    assert len(result.masks[0].candidates) == 5

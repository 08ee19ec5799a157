"""The order probe: one forward per word order gives both the guesses and the [MASK]'s final hidden
state, and that state is the model's own (full forward) one."""

from __future__ import annotations

import dataclasses

import torch

from bertdemo.explore.order_probe import order_probe, shuffle_words


def _state(loaded, text):
    enc = loaded.tokenizer(text, return_tensors="pt")
    position = (enc["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero().flatten()[0]
    with torch.inference_mode():
        return loaded.model.base_model(**enc).last_hidden_state[0, position]  # (H,)


def test_one_forward_per_order_and_the_models_own_mask_state(tiny_loaded):
    forwards = []
    hook = tiny_loaded.model.base_model.embeddings.register_forward_hook(lambda *_: forwards.append(1))
    try:
        probe = order_probe(tiny_loaded, "the cat sat on the [mask] .", seed=3, top_k=4)
    finally:
        hook.remove()
    assert len(forwards) == 2  # the sentence, then its shuffled copy
    assert probe.shuffled == shuffle_words(probe.text, 3) and probe.shuffled != probe.text
    want = (_state(tiny_loaded, probe.text) - _state(tiny_loaded, probe.shuffled)).abs().max().item()
    assert abs(probe.max_state_difference - want) < 1e-5 and not probe.order_blind
    assert len(probe.original.masks[0].candidates) == 4


def test_without_position_embeddings_the_probe_reads_order_blind(tiny_mlm_dir):
    from bertdemo.models.store import load_masked_lm

    loaded = load_masked_lm(str(tiny_mlm_dir), "cpu")
    model = loaded.model
    blind = type(model)(model.config).eval()
    blind.load_state_dict(model.state_dict())
    with torch.no_grad():
        blind.bert.embeddings.position_embeddings.weight.zero_()
    probe = order_probe(dataclasses.replace(loaded, model=blind), "the cat sat on the [MASK] .", seed=3)
    assert probe.order_blind, probe.max_state_difference

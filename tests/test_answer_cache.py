"""Answers remembered with a model: one forward per question, and never an answer from other weights.

A view's result is kept in its model's bounded LRU under (model name, weights stamp, the question).
Changing the weights in place, or a checkpoint saved again under the same name, gives a new answer,
equal to the model's own forward with its new weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertForMaskedLM

from bertdemo.explore import ablation, attention, inside, inside_layer, inside_output
from bertdemo.models.loading import ANSWER_CACHE_SIZE, load_masked_lm, weights_stamp
from bertdemo.models.store import ModelStore
from tests.helpers import tiny_bert_config

TEXT = "the cat sat on the [MASK] near the door"


class ForwardCounter:
    """Counts calls of a module's forward (a hook), e.g. the encoder's."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.calls = 0
        self._handle = module.register_forward_hook(self._hook)

    def _hook(self, *_) -> None:
        self.calls += 1

    def close(self) -> None:
        self._handle.remove()


@pytest.fixture
def own_loaded(tiny_mlm_dir):
    """A copy of the tiny model of this test's own (its weights may be changed)."""
    return load_masked_lm(str(tiny_mlm_dir), "cpu")


def _own_attentions(loaded, text: str) -> np.ndarray:
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        out = loaded.model.bert(**enc, output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).numpy()


def test_the_same_question_is_answered_once(own_loaded):
    first = attention.compute(own_loaded, TEXT)
    assert attention.compute(own_loaded, TEXT) is first
    other = attention.compute(own_loaded, TEXT.replace("cat", "dog"))
    assert other is not first and other.tokens[2] == "dog"
    np.testing.assert_allclose(first.attentions, _own_attentions(own_loaded, TEXT), atol=1e-6)


def test_weights_changed_in_place_never_reuse_an_answer(own_loaded):
    before = attention.compute(own_loaded, TEXT)
    lens_before = inside_output.logit_lens(own_loaded, TEXT)
    stamp = weights_stamp(own_loaded.model)
    with torch.no_grad():
        own_loaded.model.bert.encoder.layer[0].attention.self.query.weight.mul_(3.0)
    assert weights_stamp(own_loaded.model) != stamp
    after = attention.compute(own_loaded, TEXT)
    assert after is not before
    assert not np.allclose(after.attentions[0], before.attentions[0])
    np.testing.assert_allclose(after.attentions, _own_attentions(own_loaded, TEXT), atol=1e-6)
    lens_after = inside_output.logit_lens(own_loaded, TEXT)
    assert lens_after.max_abs_diff_logits < 1e-4  # checked against the new weights' own logits
    assert lens_after.layers[-1].top != lens_before.layers[-1].top or \
        lens_after.layers[-1].cosine_to_final != lens_before.layers[-1].cosine_to_final


def test_a_checkpoint_saved_again_answers_with_its_new_weights(tmp_path, tokenizer):
    folder = tmp_path / "checkpoint"
    torch.manual_seed(1)
    BertForMaskedLM(tiny_bert_config()).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    store = ModelStore(device="cpu")
    first = attention.compute(store.get(str(folder)), TEXT)
    torch.manual_seed(2)
    BertForMaskedLM(tiny_bert_config()).save_pretrained(folder)  # the run saves again, same name
    reloaded = store.get(str(folder))
    second = attention.compute(reloaded, TEXT)
    assert second is not first and first.model_name == second.model_name == str(folder)
    assert not np.allclose(first.attentions, second.attentions)
    np.testing.assert_allclose(second.attentions, _own_attentions(reloaded, TEXT), atol=1e-6)


def test_the_inside_views_of_one_sentence_share_one_forward(own_loaded):
    # the masked-LM's own forward, once: its encoder, then its head at the [MASK] rows; the encoder runs
    # once more for the order test's shuffled copy of the sentence
    encoder, head = ForwardCounter(own_loaded.model.bert), ForwardCounter(own_loaded.model.cls.predictions)
    try:
        inside.embeddings(own_loaded, TEXT)
        inside_layer.layer_step(own_loaded, TEXT, 1, 0, 2)
        inside_layer.layer_step(own_loaded, TEXT, 1, 1, 3)  # another head and token: the same layer's arithmetic
        lens = inside_output.logit_lens(own_loaded, TEXT, 1, 3)
        assert (encoder.calls, head.calls) == (2, 1)
        inside.embeddings(own_loaded, TEXT)
        assert (encoder.calls, head.calls) == (2, 1)
    finally:
        encoder.close()
        head.close()
    assert lens.max_abs_diff_logits < 1e-4
    step = inside_layer.layer_step(own_loaded, TEXT, 1, 1, 3)
    assert step.max_diff_attention < 1e-5 and step.max_diff_output < 1e-4


def test_head_ablation_runs_two_forwards(own_loaded):
    counter = ForwardCounter(own_loaded.model.bert.embeddings)  # once per pass through the model
    try:
        result = ablation.ablate(own_loaded, TEXT, None, "0:0, 1:1", 3)
    finally:
        counter.close()
    assert counter.calls == 2 and result.heads == [(0, 0), (1, 1)]


def test_the_answer_cache_is_bounded_and_keeps_the_most_recent(own_loaded):
    built = []

    def answer(value):
        built.append(value)
        return value

    keys = [f"q{i}" for i in range(ANSWER_CACHE_SIZE)]
    for key in keys + ["q0", "new", "q0", "q1"]:
        own_loaded.remember(("bounded", key), lambda key=key: answer(key))
    assert built == keys + ["new", "q1"]  # "q0" stayed (used again), "q1" was evicted by "new"
    assert len(own_loaded.cache("answers")) == ANSWER_CACHE_SIZE


def test_a_question_that_fails_is_not_remembered(own_loaded):
    with pytest.raises(ValueError, match="No mask"):
        inside_output.logit_lens(own_loaded, "no mask here")
    assert not any(key[2:3] == ("no mask here",) for key in own_loaded.cache("answers").keys())  # noqa: SIM118 - a ByteLRU

"""Time before work: a Fill-Mask request's extra passes (PLL, whole words) are planned and refused up front
when too costly, stop at their deadline, and only a few heavy requests compute at once."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertModel

from bertdemo.explore import fill_mask, pll
from bertdemo.models.batching import Slots
from bertdemo.request_budget import WorkBudget, WorkStopped, sequence_gflop


def test_the_cost_of_a_pass_is_the_models_own_linear_layers_plus_attention():
    config = BertConfig()  # bert-base
    layers = BertModel(config, add_pooling_layer=False).encoder.layer
    weights = sum(m.weight.numel() for m in layers.modules() if isinstance(m, torch.nn.Linear))
    attention = 4 * 12 * 128 * 128 * 768
    assert sequence_gflop(config, 128) == pytest.approx((2 * 128 * weights + attention) / 1e9)
    assert 21 < sequence_gflop(config, 128) < 25  # "about 22 GFLOP for 128 tokens"


def test_a_costly_request_is_refused_before_any_extra_pass(tiny_loaded):
    forwards = []
    hook = tiny_loaded.model.bert.embeddings.register_forward_hook(lambda *a: forwards.append(1))
    try:
        with pytest.raises(ValueError, match=r"extra passes \(about .* GFLOP\); this server computes at most 0"):
            fill_mask.predict(tiny_loaded, "the [MASK] sat on the [MASK] .", top_k=3, whole_words=True,
                              targets="tokenization, unbelievably", budget=WorkBudget(max_gflop=0.0))
        assert forwards == []  # refused before the model ran at all
        ok = fill_mask.predict(tiny_loaded, "the [MASK] sat .", top_k=3, targets="tokenization")  # within budget
    finally:
        hook.remove()
    assert ok.masks[0].targets[0].pieces == ["token", "##ization"] and len(forwards) == 2  # the first pass + one batch of the 2 PLL sequences


def test_the_audits_slowest_request_is_refused_on_the_embedded_models_shape():
    config = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    passes = 5 * pll.WHOLE_WORD_PASSES + 5 * 20 * 4  # 5 masks, whole words, 20 four-piece targets
    with pytest.raises(ValueError, match="Use fewer masks"):
        WorkBudget().check_plan(passes, passes * sequence_gflop(config, 410), "embedded")


def test_extra_passes_stop_at_their_deadline(tiny_loaded):
    now = [0.0]
    budget = WorkBudget(seconds=30.0, started=0.0, clock=lambda: now[0])
    budget.check_time()
    now[0] = 31.0
    with pytest.raises(ValueError, match="took longer than 30 s and was stopped"):
        fill_mask.predict(tiny_loaded, "the [MASK] sat .", top_k=3, whole_words=True, budget=budget)


def test_heavy_requests_beyond_the_slots_are_told_to_try_again():
    slots = Slots(1)
    with (slots.take("whole words"),
          pytest.raises(ValueError, match=r"busy with other long requests \(whole words\)"),
          slots.take("whole words")):
        pass
    with slots.take("whole words"):  # freed again
        pass


def test_work_stops_within_one_batch_of_the_caller_saying_stop(tiny_loaded):
    forwards = []
    hook = tiny_loaded.model.bert.embeddings.register_forward_hook(lambda *a: forwards.append(1))
    reported = []
    budget = WorkBudget(should_stop=lambda: len(forwards) >= 3,  # the client leaves during the third pass
                            on_progress=lambda done, planned: reported.append((done, planned)))
    try:
        with pytest.raises(WorkStopped, match="client went away"):
            fill_mask.predict(tiny_loaded, "the [MASK] sat on the [MASK] .", top_k=3, whole_words=True,
                              targets="tokenization, unbelievably", budget=budget)
    finally:
        hook.remove()
    assert len(forwards) == 3  # not one pass more after the signal
    pieces = sum(len(tiny_loaded.tokenizer.tokenize(w)) for w in ("tokenization", "unbelievably"))  # 2 + 5
    assert budget.batches == 2 and budget.planned_passes == 2 * pll.WHOLE_WORD_PASSES + 2 * pieces  # of 164
    # the whole-word beam's first two batches: one sequence each (1 mask, then the first of 2 masks)
    assert reported == [(0, budget.planned_passes), (1, budget.planned_passes)] and budget.passes == 2


def test_one_budget_prices_both_models_of_a_request_together():
    budget = WorkBudget(max_gflop=10.0)
    budget.check_plan(100, 6.0, "first")
    with pytest.raises(ValueError, match=r"about 6 GFLOP\) after the 6 the first model takes; .* at most 10"):
        budget.check_plan(100, 6.0, "second")
    budget.check_plan(10, 4.0, "second")  # what is left still fits
    assert budget.planned_passes == 110

"""Every refusal of a run's settings says the value it refuses (an API caller who sent batch_size 0 sees the 0)."""

from __future__ import annotations

import pytest

from bertdemo.pretrain.config import TrainConfig

BASE = dict(preset="custom", num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64)

# one setting out of range at a time, with the text its message must hold
REFUSED = [
    ({"init_from": "/tmp/no-such-model-folder"}, "'no-such-model-folder'"),
    ({"train_layers": 7}, "got 7"),
    ({"num_hidden_layers": 0}, "got 0, 32, 2 and 64"),
    ({"hidden_size": 33}, "hidden size 33"),
    ({"dropout": 1.5}, "got 1.5"),
    ({"seq_len": 8}, "got 8"),
    ({"heldout_fraction": 0.7}, "got 0.7"),
    ({"max_corpus_tokens": 999}, "got 999"),
    ({"batch_size": 0}, "got 0"),
    ({"steps": 0}, "got 0"),
    ({"mlm_probability": 1.2}, "got 1.2"),
    ({"mask_replace_prob": 0.9, "random_replace_prob": 0.3}, "got 0.9 + 0.3"),
    ({"static_masks": -2}, "got -2"),
    ({"lr": 2.0}, "got 2.0"),
    ({"warmup_steps": -3}, "warmup_steps must not be negative, got -3"),
    ({"weight_decay": -0.5}, "weight_decay must not be negative, got -0.5"),
    ({"grad_clip": -1.0}, "grad_clip must not be negative, got -1.0"),
    ({"precision": "fp8"}, "got 'fp8'"),
    ({"log_every": 0}, "log_every must be at least 1, got 0"),
    ({"eval_every": 0}, "eval_every must be at least 1, got 0"),
    ({"eval_batches": 0}, "eval_batches must be at least 1, got 0"),
    ({"checkpoint_every": -1}, "got -1"),
    ({"num_threads": -2}, "got -2"),
    ({"locality_bias": 99.0}, "got 99.0"),
    ({"locality_fade": 1.5}, "got 1.5"),
    ({"adam_beta2": 1.0}, "got 1.0"),
    ({"time_budget_s": -5.0}, "got -5.0"),
]


@pytest.mark.parametrize("bad, shown", REFUSED, ids=[",".join(bad) for bad, _ in REFUSED])
def test_the_message_names_the_refused_value(bad, shown):
    with pytest.raises(ValueError) as refused:
        TrainConfig.from_flat(**{**BASE, **bad}).validate()
    assert shown in str(refused.value)

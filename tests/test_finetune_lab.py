"""The fine-tuning lab's answers are keyed by the weights they were computed from, not by the model's name."""

from __future__ import annotations

import torch
from transformers import BertForMaskedLM

from bertdemo.finetune.features import ActivationCache
from bertdemo.finetune.lab import FinetuneLab
from bertdemo.finetune.layer_probes import probe_layers
from bertdemo.models.store import ModelStore, folder_stamp, weights_key
from tests.helpers import tiny_bert_config


def _save(folder, seed: int, tokenizer) -> None:
    torch.manual_seed(seed)
    BertForMaskedLM(tiny_bert_config()).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def test_layer_probes_answer_again_when_a_checkpoint_is_saved_again_under_its_name(tmp_path, tokenizer):
    folder = tmp_path / "checkpoint"
    _save(folder, 0, tokenizer)
    store = ModelStore(default=str(folder), device="cpu")
    lab = FinetuneLab(tmp_path / "cache")
    loaded = store.get(str(folder))
    first = lab.layer_probes(loaded, "length")
    assert lab.layer_probes(store.get(str(folder)), "length") is first  # the same weights: the remembered answer
    stamp = folder_stamp(str(folder))
    _save(folder, 1, tokenizer)  # other weights, same name
    assert folder_stamp(str(folder)) != stamp
    reloaded = store.get(str(folder))
    assert reloaded.name == loaded.name and weights_key(reloaded) != weights_key(loaded)
    second = lab.layer_probes(reloaded, "length")
    assert second is not first
    fresh = probe_layers(reloaded.name, reloaded.model, reloaded.tokenizer, ActivationCache(), tasks=("length",))[0]
    assert second == fresh  # computed from the new weights, features included


def test_the_weights_key_of_a_local_folder_outlives_the_model_object(tmp_path, tokenizer):
    """A cache that outlives a model must not key it by object ids, which a reload may reuse."""
    folder = tmp_path / "model"
    _save(folder, 0, tokenizer)
    one = ModelStore(default=str(folder), device="cpu").get(str(folder))
    other = ModelStore(default=str(folder), device="cpu").get(str(folder))
    assert one.model is not other.model and weights_key(one) == weights_key(other)
    assert weights_key(one) == (str(folder), "folder", *folder_stamp(str(folder)))
    _save(folder, 1, tokenizer)
    assert weights_key(one) != weights_key(ModelStore(default=str(folder), device="cpu").get(str(folder)))

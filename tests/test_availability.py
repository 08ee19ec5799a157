"""Which model choices can load now, and naming the model that really answered."""

from types import SimpleNamespace

import pytest

from bertdemo.models import availability, embedded
from bertdemo.models.hub import HubProbe


@pytest.fixture
def offline() -> HubProbe:
    return HubProbe(offline=True)


def test_choices_that_cannot_load_are_marked(offline, tiny_mlm_dir):
    choices = [("bert-base-uncased", "bert-base-uncased"), ("bert-base-cased", "bert-base-cased"),
               ("embedded", embedded.EMBEDDED_MLM_NAME), ("folder", str(tiny_mlm_dir)),
               ("a fine-tuned run", "ft:20261201-120000-abc"), ("a pretraining run", "run:20261201-120000-def")]
    labels = [label for label, _ in availability.label_choices(choices, "bert-base-uncased", offline)]
    assert labels == [  # this server's runs load whatever the hub does (D8: "ft:" runs were marked unavailable)
        f"bert-base-uncased ({availability.STAND_IN})",
        f"bert-base-cased ({availability.UNAVAILABLE})",
        "embedded",
        "folder",
        "a fine-tuned run",
        "a pretraining run",
    ]
    assert not availability.can_load_now("bert-base-cased", offline)
    assert availability.can_load_now(embedded.EMBEDDED_MLM_NAME, offline) and availability.can_load_now(str(tiny_mlm_dir), offline)


def test_a_cached_hub_model_counts_as_loadable(offline, monkeypatch):
    monkeypatch.setattr(availability, "in_local_cache", lambda repo: repo == "bert-base-cased")
    assert availability.can_load_now("bert-base-cased", offline) and not availability.can_load_now("roberta-base", offline)


def test_the_model_that_answered_is_named():
    stand_in = SimpleNamespace(name=embedded.EMBEDDED_MLM_NAME, source="embedded")
    assert availability.answered_by("bert-base-uncased", stand_in) == (
        "embedded/bert-explorer-mlm standing in for bert-base-uncased (model hub unreachable)"
    )
    itself = SimpleNamespace(name=embedded.EMBEDDED_MLM_NAME, source="embedded")
    assert availability.answered_by(embedded.EMBEDDED_MLM_NAME, itself) == embedded.EMBEDDED_MLM_NAME
    cached = SimpleNamespace(name="bert-base-cased", source="hub cache")
    assert "local cache" in availability.answered_by("bert-base-cased", cached)


def test_the_store_stand_in_is_named(offline, tokenizer):
    from bertdemo.models.policy import AccessPolicy
    from bertdemo.models.store import ModelStore

    store = ModelStore(default="bert-base-uncased", device="cpu", policy=AccessPolicy(hub=offline))
    loaded = store.get("bert-base-uncased")
    assert availability.answered_by("bert-base-uncased", loaded).startswith(
        f"{loaded.name} standing in for bert-base-uncased"
    )
    assert "standing in for bert-base-uncased" in availability.tokenizer_answered_by(
        "bert-base-uncased", store.get_tokenizer("bert-base-uncased"))
    assert availability.tokenizer_answered_by(embedded.EMBEDDED_ENCODER_NAME, tokenizer) == embedded.EMBEDDED_ENCODER_NAME


def test_a_stand_in_answer_says_the_model_asked_for_would_answer_differently(offline):
    from bertdemo.models.policy import AccessPolicy
    from bertdemo.models.store import ModelStore

    store = ModelStore(default="bert-base-uncased", device="cpu", policy=AccessPolicy(hub=offline))
    loaded = store.get("bert-base-uncased")
    caveat = availability.stand_in_caveat("bert-base-uncased", loaded)
    assert caveat.startswith("bert-base-uncased itself would answer differently: embedded/bert-explorer-mlm is a "
                             "smaller model (6 layers, H = 384)")
    assert availability.stand_in_caveat(embedded.EMBEDDED_MLM_NAME, loaded) == ""  # asked for, answered

"""The fine-tuning lab's loops obey the request's time budget: classifying with a fine-tuned model, computing the
topic task's landmarks and probing a run's checkpoints each stop with the budget's own message once its deadline
has passed (an injected clock: no wall time is measured), and compute nothing more."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import BertForMaskedLM, BertForSequenceClassification

from bertdemo.finetune import layer_probes as lp
from bertdemo.finetune.features import ActivationCache
from bertdemo.finetune.lab import BASELINES_FILE, FinetuneLab
from bertdemo.models.store import ModelStore
from bertdemo.request_budget import WorkBudget
from tests.helpers import FakeClock, tiny_bert_config, tiny_model_dir

SMALL = {"train": 36, "validation": 12, "test": 12}
PAST_DEADLINE = "took longer than 30 s and was stopped"


def _budget(clock: FakeClock) -> WorkBudget:
    """30 s from the clock's now (a test moves the clock past it)."""
    return WorkBudget(seconds=30.0, started=clock.now, clock=clock)


def _expired() -> WorkBudget:
    clock = FakeClock()
    budget = _budget(clock)
    clock.now += 31
    return budget


@pytest.fixture()
def classifier_dir(tmp_path, tokenizer):
    labels = {"id2label": {0: "people", 1: "places"}, "label2id": {"people": 0, "places": 1}}
    return tiny_model_dir(BertForSequenceClassification, tmp_path / "model", tokenizer, num_labels=2, **labels)


def test_classify_stops_past_the_deadline_and_answers_within_it(tmp_path, classifier_dir):
    lab = FinetuneLab(tmp_path / "cache")
    with pytest.raises(ValueError, match=PAST_DEADLINE):
        lab.classify(str(classifier_dir), "Paris is a city.", budget=_expired())
    assert len(lab._classifiers) == 0  # stopped before the model was loaded
    labels, probs = lab.classify(str(classifier_dir), "Paris is a city.", budget=_budget(FakeClock()))
    assert labels == ["people", "places"] and sum(probs) == pytest.approx(1.0)


def test_the_landmarks_stop_past_the_deadline_and_nothing_is_saved(tmp_path, tiny_mlm_dir):
    lab = FinetuneLab(tmp_path / "cache")
    embedded = ModelStore(default=str(tiny_mlm_dir), device="cpu").get(str(tiny_mlm_dir))
    with pytest.raises(ValueError, match=PAST_DEADLINE):
        lab.compute_baselines(embedded, budget=_expired())
    assert not (tmp_path / "cache" / BASELINES_FILE).exists() and lab.baselines() == {}


def _checkpoints(tmp_path, tokenizer, n: int) -> list:
    folders = []
    for step in range(1, n + 1):
        torch.manual_seed(step)
        folder = tmp_path / f"step-{step}"
        BertForMaskedLM(tiny_bert_config()).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "trainer_state.json").write_text(json.dumps({"step": step}))
        folders.append(folder)
    return folders


def test_checkpoint_probes_stop_between_batches_once_the_deadline_passes(tmp_path, tokenizer):
    folders = _checkpoints(tmp_path, tokenizer, 2)
    clock = FakeClock()
    heard: list[str] = []

    def progress(fraction: float, message: str) -> None:  # the deadline passes during the first batch
        heard.append(message)
        clock.now += 31

    with pytest.raises(ValueError, match=PAST_DEADLINE):
        lp.probe_checkpoints(folders, ActivationCache(), sizes=SMALL, progress=progress, budget=_budget(clock))
    assert len(heard) == 1 and heard[0].startswith("step-1: ")  # one batch ran; the second checkpoint never did
    with pytest.raises(ValueError, match=PAST_DEADLINE):  # through the lab, as the page calls it
        FinetuneLab(tmp_path / "cache").checkpoint_probes([str(f) for f in folders], budget=_expired())

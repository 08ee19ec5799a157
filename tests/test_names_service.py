"""Find the names as a task of the fine-tuning run kind (the slot, the listing, ft:<id>), a finished run tagging
a sentence through the lab, and the per-word layer probe against the model's own forward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertdemo.corpus.names import NameSplits
from bertdemo.finetune.config import config_from_request
from bertdemo.finetune.lab import FinetuneLab
from bertdemo.finetune.token_engine import align, tag_sentence
from bertdemo.finetune.word_probes import probe_names, word_features
from bertdemo.request_budget import WorkBudget
from bertdemo.settings import ServerSettings
from tests.helpers import name_task, run_services, tiny_finetune_config


def test_the_settings_take_a_task_and_refuse_an_unknown_one():
    assert config_from_request({"task": "names"}).task == "names"
    assert config_from_request({}).task == "topic"
    with pytest.raises(ValueError, match="task 'pos' is not one of 'topic', 'names'"):
        config_from_request({"task": "pos"})


def test_a_names_run_is_listed_as_one_and_its_model_tags_through_the_lab(tiny_mlm_dir, tmp_path):
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", offline=True,
                                    device="cpu")
    _runs, _, service = run_services(settings)
    cfg = tiny_finetune_config(tiny_mlm_dir, task="names", epochs=15)  # random weights of the tiny model's shape
    run = service.start(cfg, task_loader=name_task)
    assert run.join(300), run.snapshot().message
    status = service.status()
    assert status["task"] == "names" and status["status"] == "finished", status["message"]
    assert status["names"]["landmarks"]["word_memory"]["test"]["f1"] == 1.0
    assert status["test_macro_f1"] == status["names"]["test"]["f1"]
    assert [rid for _, rid in service.choices(task="names")] == [run.run_id]
    assert service.choices(task="topic") == []
    label = service.choices()[0][0]
    assert "names F1" in label and "from random" in label

    lab = FinetuneLab(tmp_path / "cache")
    folder = service.model(f"ft:{run.run_id}")
    tagged = lab.tag(folder, "Then the car of Bob went to Rome .")
    from transformers import AutoTokenizer, BertForTokenClassification

    model = BertForTokenClassification.from_pretrained(folder).eval()
    assert tagged == tag_sentence(model, AutoTokenizer.from_pretrained(folder), "Then the car of Bob went to Rome .")
    assert [w for w, label, _ in tagged if label == "NAME"] == ["Bob", "Rome"]


def _splits(task) -> NameSplits:
    return NameSplits(task.train, task.validation, task.test)


def test_word_features_are_each_labelled_words_first_piece_in_the_models_own_forward(tiny_loaded):
    task = name_task(10)
    sentences = task.train[:3]
    feats, labels = word_features(tiny_loaded.model, tiny_loaded.tokenizer, sentences, batch_size=2)
    items = align(tiny_loaded.tokenizer, [s.words for s in sentences], [s.label_ids for s in sentences], 64)
    expected_rows, expected_labels = [], []
    with torch.inference_mode():
        for item in items:
            hidden = tiny_loaded.model.bert(input_ids=torch.tensor([item.ids]), output_hidden_states=True).hidden_states
            for pos, label in enumerate(item.piece_labels):
                if label >= 0:
                    expected_rows.append(torch.stack([h[0, pos] for h in hidden]).numpy())
                    expected_labels.append(label)
    assert feats.shape == (3, len(expected_labels), 32)  # embeddings + 2 layers
    assert np.allclose(feats, np.stack(expected_rows, axis=1), atol=1e-5)
    assert labels.tolist() == expected_labels == [lab for s in sentences for lab in s.label_ids if lab >= 0]


def test_the_names_probe_scores_every_layer_chooses_on_validation_and_charges_its_budget(tiny_loaded):
    task = name_task(40)
    budget = WorkBudget(max_gflop=1e9, seconds=600)
    probe = probe_names("tiny", tiny_loaded.model, tiny_loaded.tokenizer, _splits(task), budget=budget)
    assert len(probe.model.test_f1) == len(probe.random.test_f1) == 3
    assert probe.n_train_words == 10 * len(task.train) and probe.n_test_words == 10 * len(task.test)
    assert probe.majority_accuracy == 0.8  # 2 names in 10 labelled words
    layer, f1 = probe.model.best
    assert probe.model.val_f1[layer] == max(probe.model.val_f1) and f1 == probe.model.test_f1[layer]
    assert probe.model.test_f1[0] == 1.0  # the embeddings alone know these few names
    assert budget.planned_gflop > 0
    with pytest.raises(ValueError, match="names probe"):
        probe_names("tiny", tiny_loaded.model, tiny_loaded.tokenizer, _splits(task),
                    budget=WorkBudget(max_gflop=1e-9, seconds=600))


def test_a_names_model_is_refused_where_a_sentence_classifier_is_asked_for(tiny_mlm_dir, tmp_path):
    from transformers import AutoTokenizer, BertForTokenClassification

    folder = tmp_path / "names-model"
    BertForTokenClassification.from_pretrained(tiny_mlm_dir, num_labels=2).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_mlm_dir).save_pretrained(folder)
    lab = FinetuneLab(tmp_path / "cache")
    with pytest.raises(ValueError, match="is a BertForTokenClassification: tag words with it"):
        lab.classify(str(folder), "A sentence.")
    assert [w for w, _, _ in lab.tag(str(folder), "A sentence.")] == ["A", "sentence", "."]

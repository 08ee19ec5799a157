"""The paper's feature-based approach on a learner's own sentences (issue 54): the frozen start's [CLS] vectors with a
logistic regression on top, scored on the same folds as fine-tuning, kept when it scores higher, as a stock
``BertForSequenceClassification`` whose answers are the regression's own."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import batch_of, build_model
from bertdemo.finetune.frozen_features import ABSENT, fit_head
from bertdemo.finetune.own_data import parse_lines
from bertdemo.finetune.own_eval import FOLDS, Sentences, kept_kind, stratified_folds
from bertdemo.finetune.own_export import model_zip
from bertdemo.finetune.own_run import RESULT_FILE
from bertdemo.settings import ServerSettings
from bertdemo.viz.own_data import result_markdown
from tests.helpers import run_services, tiny_finetune_config
from tests.test_own_finetune import word_data

THREE = parse_lines("\n".join(f"{label}\tthe {word} is here {i} ." for i in range(6)
                              for label, word in (("a", "apple"), ("b", "bus"), ("c", "cat"))))


def _sentences(data, mlm_dir, cfg: FinetuneConfig | None = None) -> tuple[Sentences, object]:
    built = build_model(cfg or FinetuneConfig(init="random", init_path=str(mlm_dir), seed=2), list(data.names))
    examples = Sentences(data)
    examples.prepare(built.tokenizer, 64, built.model.config.max_position_embeddings)
    examples.read_start(built.model, built.tokenizer.pad_token_id)
    return examples, built


@pytest.mark.parametrize("data", [word_data(8), THREE], ids=["two labels", "three labels"])
def test_the_kept_classifier_is_stock_and_answers_with_the_regressions_probabilities(data, tiny_mlm_dir, tmp_path):
    examples, built = _sentences(data, tiny_mlm_dir)
    train = list(range(0, len(data), 2))
    examples.keep_frozen(train, 1.0).save_pretrained(tmp_path / "kept")
    built.tokenizer.save_pretrained(tmp_path / "kept")
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "kept").eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "kept")
    with torch.no_grad():
        stock = model(**tokenizer(data.texts, padding=True, return_tensors="pt")).logits.softmax(-1).numpy()
    # the same regression fitted by scikit-learn on the standardised [CLS] vectors, independently of the fold
    x = examples.features
    mean, std = x[train].mean(0), x[train].std(0)
    std[std == 0] = 1.0
    sk = LogisticRegression(C=1.0, max_iter=2000).fit((x[train] - mean) / std, np.asarray(data.labels)[train])
    assert stock == pytest.approx(sk.predict_proba((x - mean) / std), abs=2e-3)
    assert list(stock.argmax(-1)) == list(examples.frozen_head(train, 1.0).predict(x, len(data.names)))
    pretrained = dict(built.model.bert.encoder.named_parameters())
    for name, weight in model.bert.encoder.named_parameters():  # the encoder is the start's, untouched
        assert torch.equal(weight, pretrained[name]), name


def test_a_label_no_training_sentence_had_is_never_predicted():
    head = fit_head(np.random.default_rng(0).normal(size=(6, 4)), [0, 2, 0, 2, 0, 2], c=1.0)
    assert set(head.predict(np.random.default_rng(1).normal(size=(20, 4)), 3)) <= {0, 2}
    assert (head.logits(np.zeros((1, 4)), 3)[0, 1] == ABSENT) and fit_head(np.ones((3, 2)), [1, 1, 1], 1.0).predict(
        np.zeros((2, 2)), 2).tolist() == [1, 1]


def test_the_fold_winner_is_kept_and_a_tie_keeps_fine_tuning():
    assert kept_kind({"finetuned": [0.5, 0.75], "frozen_features": [0.75, 0.75]}) == "frozen_features"
    assert kept_kind({"finetuned": [0.75, 0.5], "frozen_features": [0.5, 0.75]}) == "finetuned"
    assert kept_kind({"finetuned": [0.5], "majority": [0.5]}) == "finetuned"  # word labels: no frozen landmark


def test_cross_validation_scores_frozen_features_on_the_folds_and_keeps_them_when_they_win(tiny_mlm_dir, tmp_path):
    """Fine-tuning that cannot move (learning rate 1e-6 for two steps: its new head stays where it started) against a regression on
    the frozen vectors of sentences whose words tell the label: the regression wins the folds and is kept."""
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", offline=True,
                                    device="cpu")
    _, _, service = run_services(settings)
    data = word_data(10)
    cfg = tiny_finetune_config(tiny_mlm_dir, batch_size=8, epochs=1, learning_rate=1e-6)
    run = service.start(cfg, own=data)
    assert run.join(300) and run.status == "finished", run.snapshot().message
    result = json.loads((run.run_folder / RESULT_FILE).read_text())
    examples, built = _sentences(data, tiny_mlm_dir, cfg)  # the run's start: the same vectors
    folds = np.asarray(stratified_folds(data.labels, FOLDS, cfg.seed))
    y = np.asarray(data.labels)
    expected = [float(np.mean(examples.frozen_head(np.flatnonzero(folds != k), 1.0).predict(
        examples.features[folds == k], 2) == y[folds == k])) for k in range(FOLDS)]
    assert result["accuracy"]["frozen_features"] == pytest.approx(expected)  # the same folds, the same vectors
    assert result["summary"]["frozen_features"]["mean"] > result["summary"]["finetuned"]["mean"]
    assert result["kept"] == "frozen_features" and "frozen_features" in result["comparisons"]
    model = AutoModelForSequenceClassification.from_pretrained(service.model(f"ft:{run.run_id}")).eval()
    with torch.no_grad():
        kept = model(**batch_of(examples.ids, built.tokenizer.pad_token_id, torch.device("cpu"))).logits.argmax(-1)
    everything = examples.frozen_head(range(len(data)), 1.0).predict(examples.features, 2)
    assert kept.tolist() == everything.tolist()  # the kept model is the regression fitted on every example
    text = result_markdown(result, run.run_id)
    assert "| frozen [CLS] + LR |" in text and "against the frozen [CLS] vectors of the start" in text
    assert "The model kept (to classify and download) is **the frozen start with a logistic regression" in text
    assert "kept the frozen start with a logistic regression" in run.snapshot().message
    with zipfile.ZipFile(model_zip(run.run_folder, tmp_path / "zips", run.run_id)) as zf:
        zf.extractall(tmp_path / "unzipped")
    unzipped = AutoModelForSequenceClassification.from_pretrained(tmp_path / "unzipped" / run.run_id)
    # its download is the kept model to the bit (float32: fp16's rounding of the encoder moved its answers)
    assert all(torch.equal(a, b) for a, b in zip(unzipped.parameters(), model.parameters(), strict=True))

"""Fine-tuning on a learner's own sentences: the folds, the comparisons, cross-validation against the landmarks
on the same folds, the split from 200 examples, the run kind (slot, quota, owner), the saved model that stock
transformers loads with its label names, and a public server keeping each visitor's data and runs to them."""

from __future__ import annotations

import json
import random
import zipfile

import numpy as np
import pytest
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from bertdemo.finetune.lab import FinetuneLab
from bertdemo.finetune.own_data import OwnData, parse_lines
from bertdemo.finetune.own_eval import FOLDS, compare, majority_predict, split_three, stratified_folds
from bertdemo.finetune.own_export import model_zip
from bertdemo.finetune.own_run import DATA_FILE, OWN_DEFAULTS, RESULT_FILE, OwnRun, is_own, own_request
from bertdemo.settings import ServerSettings
from tests.helpers import WORDS, run_services, tiny_finetune_config


def word_data(n_per_class: int, seed: int = 0) -> OwnData:
    """Two labels, each sentence naming two words of its class (the tests' learnable task), each sentence different."""
    rng = random.Random(seed)
    rows = [(name, f"the {rng.choice(WORDS[name])} and the {rng.choice(WORDS[name])} are here{i} .")
            for name in WORDS for i in range(n_per_class)]
    rng.shuffle(rows)
    return parse_lines("\n".join(f"{label}\t{text}" for label, text in rows))


def _service(tmp_path, public: bool = False):
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", public=public,
                                    admin_token="admin-secret", offline=True, device="cpu")
    return run_services(settings)


def test_stratified_folds_deal_each_label_evenly_and_follow_the_seed():
    labels = [0] * 10 + [1] * 10 + [2] * 7
    folds = stratified_folds(labels, 5, seed=3)
    for k in range(5):
        held = [labels[i] for i, f in enumerate(folds) if f == k]
        assert held.count(0) == 2 and held.count(1) == 2 and held.count(2) in (1, 2)
    assert sorted(folds.count(k) for k in range(5)) == [5, 5, 5, 6, 6]
    assert folds == stratified_folds(labels, 5, seed=3) and folds != stratified_folds(labels, 5, seed=4)


def test_a_difference_within_the_spread_of_the_fold_differences_is_said_so():
    close = compare([0.75, 0.5, 1.0, 0.5, 0.75], [0.5, 0.75, 0.75, 0.5, 0.5])
    assert close["mean_diff"] == pytest.approx(0.1) and close["std_diff"] == pytest.approx(np.std([.25, -.25, .25, 0, .25], ddof=1))
    assert close["within_spread"] is True
    clear = compare([1.0, 1.0, 0.75, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5, 0.5])
    assert clear["mean_diff"] == pytest.approx(0.45) and clear["within_spread"] is False


def test_the_split_from_200_examples_is_stratified_seeded_and_disjoint():
    labels = [0] * 120 + [1] * 80
    train, val, test = split_three(labels, seed=0)
    assert (len(train), len(val), len(test)) == (140, 30, 30)
    assert not set(train) & set(val) and not set(val) & set(test) and not set(train) & set(test)
    assert sum(labels[i] for i in test) == 12  # 40 % of the test split, as in the whole
    assert (train, val, test) == split_three(labels, seed=0)


def test_copies_of_one_text_share_a_fold_and_a_side_of_the_split():
    labels = [0] * 30 + [1] * 30
    groups = [i - i % 3 for i in range(60)]  # each text three times
    folds = stratified_folds(labels, 5, seed=0, groups=groups)
    assert all(folds[i] == folds[groups[i]] for i in range(60))
    assert sorted(folds.count(k) for k in range(5)) == [12] * 5  # 20 texts of 3 copies: four a fold
    assert folds != stratified_folds(labels, 5, seed=0)
    assert stratified_folds(labels, 5, seed=0, groups=list(range(60))) == stratified_folds(labels, 5, seed=0)
    labels, groups = [0] * 150 + [1] * 150, [i - i % 5 for i in range(300)]
    parts = split_three(labels, seed=0, groups=groups)
    side = {i: k for k, part in enumerate(parts) for i in part}
    assert sorted(side) == list(range(300)) and all(side[i] == side[groups[i]] for i in range(300))
    assert split_three(labels, seed=0, groups=list(range(300))) == split_three(labels, seed=0)


def test_a_split_with_a_rare_label_is_made_not_failed():
    labels = [0] * 196 + [1] * 4  # sklearn cannot stratify the 30 % left over by a label of one example in it
    train, val, test = split_three(labels, seed=0)
    assert sorted(train + val + test) == list(range(200)) and 1 in [labels[i] for i in train]


def test_cross_validation_holds_out_copies_with_their_text(tiny_mlm_dir, tmp_path):
    """Each text three times, its words its own: a held-out copy of a training line would hand the bag of words
    its label (100 %); held out together, the bag of words has never seen the held-out words."""
    rows = [(name, f"w{name[0]}{i}x and z{name[0]}{i}q") for name in ("fruit", "vehicle") for i in range(8)]
    data = parse_lines("\n".join(f"{label}\t{text}" for label, text in rows * 3))
    assert data.copies() == 32
    said = OwnRun(tiny_finetune_config(tiny_mlm_dir), data, tmp_path / "said").snapshot().message
    assert said == "Starting: 48 examples, 2 labels (32 copies of an earlier one, held out with it)…"
    _runs, _, service = _service(tmp_path)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, batch_size=8, epochs=1), own=data)
    assert run.join(300) and run.status == "finished", run.snapshot().message
    result = json.loads((run.run_folder / RESULT_FILE).read_text())
    folds = stratified_folds(data.labels, FOLDS, run.cfg.seed, groups=data.groups())
    assert result["accuracy"]["majority"] == pytest.approx([
        float(np.mean(majority_predict(np.asarray(data.labels)[np.asarray(folds) != k], 1)[0]
                      == np.asarray(data.labels)[np.asarray(folds) == k])) for k in range(FOLDS)])
    assert result["summary"]["bag_of_words"]["mean"] < 0.9  # it never saw a held-out text's words
    assert "32 copies of an earlier line" in result["source"]


def test_own_settings_read_one_source_and_take_this_tasks_defaults(tmp_path):
    data, settings = own_request({"lines": "a\tx1\na\tx2\na\tx3\na\tx4\nb\ty1\nb\ty2\nb\ty3\nb\ty4", "seed": 3},
                                 None, tmp_path)
    assert data.names == ["a", "b"] and settings == {**OWN_DEFAULTS, "seed": 3}
    with pytest.raises(ValueError, match="one way.*got lines and hub_dataset"):
        own_request({"lines": "a\tb", "hub_dataset": "x/y"}, None, tmp_path)
    with pytest.raises(ValueError, match="hub is not reachable"):
        own_request({"hub_dataset": "stanfordnlp/sst2"}, None, tmp_path, lambda: False)


@pytest.mark.slow  # six fine-tunes: five folds and the model kept
def test_cross_validation_scores_the_model_and_the_landmarks_on_the_same_folds_then_keeps_a_model(
        tiny_mlm_dir, tmp_path):
    _runs, _, service = _service(tmp_path)
    data = word_data(10)
    cfg = tiny_finetune_config(tiny_mlm_dir, batch_size=8, epochs=6)
    run = service.start(cfg, own=data)
    assert run.join(300), run.snapshot().message
    assert run.status == "finished", run.snapshot().message
    result = json.loads((run.run_folder / RESULT_FILE).read_text())
    assert result["mode"] == "cross-validation" and result["folds_done"] == FOLDS and result["examples"] == 20
    folds = stratified_folds(data.labels, FOLDS, cfg.seed)
    y = np.asarray(data.labels)
    expected_majority = [float(np.mean(majority_predict(y[np.asarray(folds) != k], int(np.sum(np.asarray(folds) == k)))
                                       == y[np.asarray(folds) == k])) for k in range(FOLDS)]
    assert result["accuracy"]["majority"] == pytest.approx(expected_majority)  # the landmarks' folds are the model's
    for name in ("finetuned", "majority", "bag_of_words"):
        values = result["accuracy"][name]
        assert len(values) == FOLDS
        assert result["summary"][name]["mean"] == pytest.approx(np.mean(values))
        assert result["summary"][name]["std"] == pytest.approx(np.std(values, ddof=1))
    assert set(result["out_of_fold"]) <= set(data.names) and len(result["out_of_fold"]) == 20
    assert is_own(run.run_id) and service.ids() == [run.run_id]  # a local server lists it with the others
    # the kept model: stock transformers loads it with the label names; the app classifies with it
    folder = service.model(f"ft:{run.run_id}")
    model = AutoModelForSequenceClassification.from_pretrained(folder)
    assert model.config.id2label == {0: "fruit", 1: "vehicle"} and model.config.label2id == {"fruit": 0, "vehicle": 1}
    labels, probs = FinetuneLab(tmp_path / "cache").classify(folder, "the apple and the cherry are here .")
    assert labels == ["fruit", "vehicle"] and sum(probs) == pytest.approx(1.0)
    rows = (run.run_folder / DATA_FILE).read_text().splitlines()
    assert rows[0] == "label,text,prediction" and len(rows) == 21  # each example with its held-out prediction
    assert [row.rsplit(",", 1)[1] for row in rows[1:]] == result["out_of_fold"]


def test_the_downloaded_zip_is_a_folder_stock_transformers_loads(tiny_mlm_dir, tmp_path):
    _runs, _, service = _service(tmp_path)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, batch_size=8, epochs=1), own=word_data(4))
    assert run.join(300) and run.status == "finished", run.snapshot().message
    path = model_zip(service.own_folder(run.run_id), tmp_path / "out", run.run_id)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "unzipped")
    assert f"{run.run_id}/config.json" in names and f"{run.run_id}/model.safetensors" in names
    assert not any(n.endswith(("finetune_config.json", "finetune_history.json")) for n in names)  # the app's own
    folder = tmp_path / "unzipped" / run.run_id
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.config.id2label[1] == "vehicle"
    ours = FinetuneLab(tmp_path / "cache").classify(service.model(f"ft:{run.run_id}"), "the car is here .")[1]
    theirs = model(**tokenizer("the car is here .", return_tensors="pt")).logits.softmax(-1)[0].tolist()
    assert theirs == pytest.approx(ours, abs=1e-3)  # fp16 weights (a fine-tuned model) read back as float32


def test_from_200_examples_a_seeded_split_reports_on_test(tiny_mlm_dir, tmp_path):
    _runs, _, service = _service(tmp_path)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, batch_size=16, epochs=2, eval_every=1000), own=word_data(100))
    assert run.join(300) and run.status == "finished", run.snapshot().message
    result = json.loads((run.run_folder / RESULT_FILE).read_text())
    assert result["mode"] == "split" and result["sizes"] == {"train": 140, "validation": 30, "test": 30}
    chosen = result["chosen"]  # the epochs chosen on validation (each epoch's end scored), the kept weights its
    assert chosen["on"] == "validation accuracy" and [e for e, _ in chosen["curve"]] == [1, 2]
    assert chosen["score"] == max(s for _, s in chosen["curve"]) == result["finetuned"]["validation"]
    assert f"epoch {chosen['epoch']:g} chosen on the validation split" in run.snapshot().message
    folder = service.model(f"ft:{run.run_id}")  # the saved model is the one kept on validation: its accuracy there
    data, lab = word_data(100), FinetuneLab(tmp_path / "cache")
    _, val, _ = split_three(data.labels, 0)
    right = [int(np.argmax(lab.classify(folder, data.texts[i])[1])) == data.labels[i] for i in val]
    kept = {"finetuned": chosen["score"], "frozen_features": result["frozen_features"]["validation"]}
    assert np.mean(right) == pytest.approx(kept[result["kept"]])
    assert result["frozen_features"]["C"] in (0.1, 1.0, 10.0) and 0 <= result["frozen_features"]["test"] <= 1
    assert 0 <= result["finetuned"]["test"] <= 1 and result["bag_of_words"]["C"] in (0.1, 1.0, 10.0)
    assert result["majority"]["test"] == 0.5
    shared = repr(run.snapshot())
    assert "apple" not in shared and "fruit" not in shared  # the live status every page reads carries no data


def test_a_public_server_keeps_a_visitors_data_and_runs_to_them(tiny_mlm_dir, tmp_path):
    runs, _, service = _service(tmp_path, public=True)
    data = word_data(4)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, batch_size=8, epochs=1), "secret-a", visitor="10.0.0.1",
                        own=data)
    assert run.join(300) and run.status == "finished", run.snapshot().message
    status = runs.status()
    assert status["task"] == "own" and status["labels"] == [] and status["settings"]["task"] == "own"
    assert not any(text in repr(status) for text in data.texts) and "vehicle" not in repr(status)
    assert service.ids() == [] and service.choices() == []  # never listed to others
    with pytest.raises(ValueError, match="no fine-tuned model"):
        service.model(f"ft:{run.run_id}")
    assert service.own_ids("secret-a") == [run.run_id] and service.own_ids("secret-b") == []
    with pytest.raises(ValueError, match="Pick one of your runs"):
        service.own_folder(run.run_id, "secret-b")
    assert service.own_folder(run.run_id, "secret-a") == run.run_folder
    with pytest.raises(ValueError, match="Only the browser that started"):
        service.delete(run.run_id, "secret-b")
    service.delete(run.run_id, "secret-a")
    assert not run.run_folder.exists()  # the data went with it

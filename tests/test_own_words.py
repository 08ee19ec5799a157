"""Word labels of the learner's own (CoNLL-style ``word<TAB>tag``): read and bounded, fine-tuned as a token
classifier by cross-validation against the majority-tag and per-word-memory landmarks on the same folds,
tagging new sentences, downloaded as a folder stock transformers loads with equal logits; from 200 sentences
the epoch count chosen on validation, the test split reporting."""

from __future__ import annotations

import json
import random
import zipfile

import numpy as np
import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer, BertForTokenClassification

from bertdemo.finetune.lab import FinetuneLab
from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE, WORDS_EXAMPLE, looks_like_words, parse_words
from bertdemo.finetune.own_eval import FOLDS, stratified_folds
from bertdemo.finetune.own_export import model_zip
from bertdemo.finetune.own_run import DATA_FILE, OWN_DEFAULTS, RESULT_FILE, own_request
from bertdemo.finetune.own_words import majority_tag, word_memory
from bertdemo.settings import ServerSettings
from tests.helpers import WORDS, run_services, tiny_finetune_config


def conll(n: int, seed: int = 0) -> str:
    """``n`` different sentences "the <fruit> and the <vehicle> go<i> ." tagged O / FRUIT / VEHICLE (learnable by
    heart)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fruit, vehicle = rng.choice(WORDS["fruit"]), rng.choice(WORDS["vehicle"])
        pairs = [("the", "O"), (fruit, "FRUIT"), ("and", "O"), ("the", "O"), (vehicle, "VEHICLE"), (f"go{i}", "O"),
                 (".", "O")]
        out.append("\n".join(f"{w}\t{t}" for w, t in pairs))
    return "\n\n".join(out) + "\n"


def _service(tmp_path):
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", admin_token="admin-secret",
                                    offline=True, device="cpu")
    return run_services(settings)


def test_word_labels_are_read_with_their_tags_and_told_from_sentence_labels(tmp_path):
    data = parse_words(WORDS_EXAMPLE)
    assert len(data) == 20 and data.names == ["ADJ", "ADP", "DET", "NOUN", "PRON", "PUNCT", "VERB"]
    assert data.words[0] == ["I", "book", "a", "table", "."]
    assert [data.names[t] for t in data.tags[0]] == ["PRON", "VERB", "DET", "NOUN", "PUNCT"]
    assert data.counts()["ADP"] == 5 and data.source == "20 pasted sentences (110 words)"
    assert looks_like_words(WORDS_EXAMPLE) and not looks_like_words(SENTIMENT_EXAMPLE)
    auto, settings = own_request({"lines": WORDS_EXAMPLE}, None, tmp_path)
    assert auto.words == data.words and settings == OWN_DEFAULTS
    said, _ = own_request({"lines": "".join(f"pos\tgood{i}\nneg\tbad{i}\n" for i in range(4)), "label_per": "sentence"},
                          None, tmp_path)
    assert said.texts[:2] == ["good0", "bad0"]  # two one-word columns, said to be sentence labels


@pytest.mark.parametrize("text, refusal", [
    ("a\tX\nb\tX\nc\tX\nd\tX\n\ne\tY\nf\tY\ng\tY\n", "line 6: tag 'Y' is on 3 words; each tag needs at least 4."),
    ("a\tX\nb\tX\n\nc\tY\n\nd\tZ\n", "line 1: tag 'X' is on 2 words; each tag needs at least 4 (3 tags have fewer)."),
    ("".join(f"w\tT{i}\n" for i in range(21)), "line 21: tag 'T20' is a 21st tag; at most 20 tags."),
    ("a\tX\nb\tX\n\n", "Only one tag ('X'); word labels need 2 to 20 tags."),
    ("a\tX\nb\n", "line 2: write the word, a tab, then its tag."),
    ("a\tX\n\n" * 5_001, "line 10,002: more than 5,000 sentences; at most 5,000."),
])
def test_each_word_label_refusal_names_the_line_and_the_rule(text, refusal):
    with pytest.raises(ValueError) as err:
        parse_words(text)
    assert str(err.value) == refusal


def test_the_landmarks_learn_from_the_training_part_only():
    words = [["Book", "it"], ["a", "book"], ["a", "book"], ["it", "ran"]]
    tags = [[2, 1], [0, 1], [0, 1], [1, 2]]
    assert majority_tag(tags) == 1
    assert word_memory(words, tags) == {"book": 1, "it": 1, "a": 0, "ran": 2}  # book: 2 × tag 1 beats 1 × tag 2
    assert word_memory(words[:1], tags[:1]) == {"book": 2, "it": 1}


@pytest.fixture(scope="module")
def cross_validated(tiny_mlm_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("own-words")
    _runs, _, service = _service(tmp)
    data = parse_words(conll(20))
    run = service.start(tiny_finetune_config(tiny_mlm_dir, batch_size=16, epochs=15), own=data)
    assert run.join(900), run.snapshot().message  # 90 steps of a tiny model: minutes on a crowded machine
    return service, run, data, tmp


def test_cross_validation_of_word_labels_scores_model_and_landmarks_on_the_same_folds(cross_validated):
    _service, run, data, _ = cross_validated
    assert run.status == "finished", run.snapshot().message
    result = json.loads((run.run_folder / RESULT_FILE).read_text())
    assert result["mode"] == "cross-validation" and result["labels_per"] == "word" and result["folds_done"] == FOLDS
    folds = np.asarray(stratified_folds([0] * len(data), FOLDS, run.cfg.seed))
    assert sorted(np.bincount(folds).tolist()) == [4] * 5  # each sentence held out exactly once
    for k in range(FOLDS):  # the landmarks on each fold, learned from the other folds alone
        train, held = np.flatnonzero(folds != k), np.flatnonzero(folds == k)
        common = majority_tag([data.tags[i] for i in train])
        memory = word_memory([data.words[i] for i in train], [data.tags[i] for i in train])
        true = [t for i in held for t in data.tags[i]]
        guess = [memory.get(w.lower(), common) for i in held for w in data.words[i]]
        assert result["accuracy"]["word_memory"][k] == pytest.approx(np.mean(np.asarray(true) == np.asarray(guess)))
        assert result["accuracy"]["majority"][k] == pytest.approx(np.mean(np.asarray(true) == common))
        # the fine-tuned fold's score is its held-out predictions' (each sentence predicted by the fold without it)
        oof = [result["out_of_fold"][i] for i in held]
        right = [data.names[t] == p for i, row in zip(held, oof) for t, p in zip(data.tags[i], row)]
        assert result["accuracy"]["finetuned"][k] == pytest.approx(np.mean(right))
    assert result["summary"]["finetuned"]["mean"] == pytest.approx(np.mean(result["accuracy"]["finetuned"]))
    assert result["summary"]["finetuned"]["std"] == pytest.approx(np.std(result["accuracy"]["finetuned"], ddof=1))
    assert set(result["comparisons"]) == {"majority", "word_memory"}
    assert result["summary"]["finetuned"]["mean"] > result["summary"]["majority"]["mean"]  # a learnable task
    rows = (run.run_folder / DATA_FILE).read_text().splitlines()
    assert rows[0] == "sentence,word,tag,prediction" and len(rows) == 1 + 7 * 20


def test_the_kept_word_tagger_tags_and_downloads_as_a_stock_token_classifier(cross_validated):
    service, run, _data, tmp = cross_validated
    folder = service.model(f"ft:{run.run_id}")
    tagged = FinetuneLab(tmp / "cache").tag(folder, "the apple and the bus go .")
    assert [w for w, _, _ in tagged] == ["the", "apple", "and", "the", "bus", "go", "."]
    assert [t for _, t, _ in tagged][1] == "FRUIT" and [t for _, t, _ in tagged][4] == "VEHICLE"
    path = model_zip(service.own_folder(run.run_id), tmp / "out", run.run_id)
    with zipfile.ZipFile(path) as zf:
        zf.extractall(tmp / "unzipped")
    stock = AutoModelForTokenClassification.from_pretrained(tmp / "unzipped" / run.run_id).eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp / "unzipped" / run.run_id)
    assert stock.config.id2label == {0: "FRUIT", 1: "O", 2: "VEHICLE"}
    ours = AutoModelForTokenClassification.from_pretrained(folder).eval()
    enc = tokenizer("the apple and the bus go .", return_tensors="pt")
    with torch.no_grad():
        theirs_logits, ours_logits = stock(**enc).logits, ours(**enc).logits
    assert torch.allclose(theirs_logits, ours_logits, atol=1e-3)  # the zip's weights in fp16, read back as float32
    first = [enc.word_ids().index(i) for i in range(7)]  # each word's first piece, where the tagger reads
    probs = theirs_logits[0, first].softmax(-1)
    assert [p for _, _, p in tagged] == pytest.approx(probs.max(-1).values.tolist(), abs=1e-3)
    assert [t for _, t, _ in tagged] == [stock.config.id2label[int(k)] for k in probs.argmax(-1)]


def test_from_200_sentences_the_epochs_are_chosen_on_validation_and_test_reports(tiny_mlm_dir, tmp_path):
    _runs, _, service = _service(tmp_path)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, batch_size=32, epochs=3), own=parse_words(conll(200)))
    assert run.join(300) and run.status == "finished", run.snapshot().message
    result = json.loads((run.run_folder / RESULT_FILE).read_text())
    assert result["mode"] == "split" and result["sizes"] == {"train": 140, "validation": 30, "test": 30}
    chosen = result["chosen"]
    assert chosen["on"] == "validation macro-F1" and [e for e, _ in chosen["curve"]] == [1, 2, 3]
    assert chosen["score"] == max(s for _, s in chosen["curve"]) and chosen["epoch"] in (1, 2, 3)
    assert result["finetuned"]["validation"] == pytest.approx(chosen["score"])  # the kept weights are the chosen
    assert 0 <= result["finetuned"]["test"] <= 1 and set(result) >= {"majority", "word_memory"}
    assert f"epoch {chosen['epoch']:g} chosen" in run.snapshot().message


def test_a_word_with_no_wordpiece_is_named_not_called_too_long(tokenizer):
    """U+200B, NUL, U+FEFF: BERT's tokenizer reads nothing of them, so such a word has no first piece; that is not
    a sentence over the model's length."""
    from bertdemo.finetune.own_data import OwnWords
    from bertdemo.finetune.own_words import Words
    from bertdemo.finetune.token_engine import tag_sentence
    from tests.helpers import tiny_bert_config

    data = OwnWords([["Paris", "is", "big"], ["Rome", "\u200b", "ok"]], [[0, 1, 1], [0, 1, 1]], ["LOC", "O"], "")
    words = Words(data)
    with pytest.raises(ValueError) as err:
        words.prepare(tokenizer, 64, 64)
    assert str(err.value) == ("sentence 2, word 2 ('U+200B') has no WordPiece: the model reads nothing of it (only "
                              "invisible or control characters); remove its line.")
    model = BertForTokenClassification(tiny_bert_config(num_labels=2)).eval()
    with pytest.raises(ValueError) as err:
        tag_sentence(model, tokenizer, "Ada \u200b \x00 \ufeff", max_len=64)
    assert str(err.value) == ("Word 2 ('U+200B') has no WordPiece: the model reads nothing of it (only invisible or "
                              "control characters); remove it.")


def test_word_label_batches_are_bounded_by_pieces_with_the_same_loss_and_gradients(tokenizer, monkeypatch):
    """Sentences of word labels are never cut (up to 200 words): a batch of 16 such sentences took the server from
    1.5 to 3.1 GB. A batch over the piece budget is computed in parts, each weighted by its labelled pieces: the
    loss and the gradients of the whole batch, no forward over the budget (training or predicting)."""
    from bertdemo.finetune import own_words
    from bertdemo.finetune.own_data import OwnWords
    from tests.helpers import tiny_bert_config

    monkeypatch.setattr(own_words, "MAX_BATCH_PIECES", 60, raising=False)
    rng = random.Random(0)
    words = [[rng.choice(WORDS["fruit"] + ["the", "a", "big"]) for _ in range(8 + 3 * s)] for s in range(6)]
    tags = [[int(w in WORDS["fruit"]) for w in sentence] for sentence in words]
    data = own_words.Words(OwnWords(words, tags, ["O", "FRUIT"], ""))
    data.prepare(tokenizer, 64, 64)
    torch.manual_seed(0)
    model = BertForTokenClassification(tiny_bert_config(num_labels=2, hidden_dropout_prob=0.0,
                                                        attention_probs_dropout_prob=0.0))
    seen: list[int] = []  # pieces of each forward, padding included
    model.bert.embeddings.register_forward_hook(lambda m, args, out: seen.append(out.shape[0] * out.shape[1]))
    rows = list(range(6))
    loss = data.loss_of(model, rows, tokenizer.pad_token_id)(rows)
    loss.backward()
    parts = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    assert len(seen) > 1 and max(seen) <= 60
    model.zero_grad()
    from bertdemo.finetune.token_engine import _batch, _piece_labels

    items = [data.items[i] for i in rows]
    whole = model(**_batch(items, tokenizer.pad_token_id, torch.device("cpu")),
                  labels=_piece_labels(items, torch.device("cpu"))).loss
    whole.backward()
    assert float(loss.detach()) == pytest.approx(float(whole.detach()), rel=1e-5)
    for name, p in model.named_parameters():
        if p.grad is not None:
            assert torch.allclose(parts[name], p.grad, atol=1e-6), name
    seen.clear()
    predicted = data.predict(model.eval(), rows, tokenizer.pad_token_id)
    assert max(seen) <= 60 and [len(p) for p in predicted] == [len(w) for w in words]

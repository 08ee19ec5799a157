"""Fine-tuning a label per word on a tiny model and a handmade names task: the labels sit on each word's first
piece, the scores and the tagger are the model's own forward, the checkpoint is a stock token classifier."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer, BertForTokenClassification

from bertdemo.corpus import names
from bertdemo.finetune.engine import build_model
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.token_engine import (
    IGNORE,
    BestStep,
    WordTask,
    align,
    errors,
    landmarks,
    predict_words,
    run_token_finetune,
    tag_sentence,
    tags_of,
)
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status
from tests.helpers import name_task, tiny_finetune_config

FROM_RUN = dict(init="run:tiny/checkpoint", task="names", epochs=12, warmup_fraction=0.1, eval_every=10)


def test_each_words_label_sits_on_its_first_piece_and_the_rest_are_ignored(tokenizer):
    ws = ["Then", "Ouagadougou", "met", "Alice", "."]
    item = align(tokenizer, [ws], [[IGNORE, 1, 0, 1, IGNORE]], 48)[0]
    pieces = [tokenizer.tokenize(w) for w in ws]
    assert len(pieces[1]) > 1  # a word of several pieces
    expected, first, pos = [IGNORE], [], 1  # [CLS]
    for word_pieces, label in zip(pieces, [IGNORE, 1, 0, 1, IGNORE]):
        first.append(pos)
        expected += [label] + [IGNORE] * (len(word_pieces) - 1)
        pos += len(word_pieces)
    expected.append(IGNORE)  # [SEP]
    assert item.piece_labels == expected
    assert item.first_piece == first
    assert item.ids == tokenizer.convert_tokens_to_ids(["[CLS]", *(p for word in pieces for p in word), "[SEP]"])
    cut = align(tokenizer, [ws], [[IGNORE, 1, 0, 1, IGNORE]], 4)[0]  # [CLS] then 2 pieces then [SEP]
    assert cut.first_piece[0] == 1 and cut.first_piece[3:] == [-1, -1]


@pytest.fixture(scope="module")
def finished(tiny_mlm_dir, tmp_path_factory):
    task = name_task()
    metrics = FinetuneMetrics()
    folder = tmp_path_factory.mktemp("names") / "model"
    status = run_token_finetune(tiny_finetune_config(tiny_mlm_dir, FROM_RUN), task, metrics, RunControl(), folder)
    return task, metrics.snapshot(), folder, status


def test_a_learnable_names_task_is_learned_and_reported_with_its_landmarks(finished):
    task, snap, _, status = finished
    assert status == Status.FINISHED, snap.message
    assert snap.task == "names" and snap.labels == ["O", "NAME"]
    assert snap.val_macro_f1[0] < 0.7 and snap.val_macro_f1_all == 1.0 and snap.test_macro_f1 == 1.0
    assert len(snap.eval_steps) == len(snap.val_loss) == len(snap.val_accuracy) == len(snap.val_macro_f1)
    report = snap.names
    assert report["test"]["f1"] == 1.0 and report["test_entity"]["f1"] == 1.0
    assert report["landmarks"]["all_o"]["test"]["f1"] == 0.0
    assert report["landmarks"]["word_memory"]["test"]["f1"] == 1.0  # the same few names: memory knows them all
    assert report["errors"]["missed_total"] == report["errors"]["false_total"] == 0
    assert sum(map(sum, snap.confusion)) == report["validation"]["words"] == 10 * len(task.validation)
    assert "per-word memory" in snap.message


def test_the_checkpoint_is_a_stock_token_classifier_whose_forward_gives_the_reported_scores(finished):
    task, snap, folder, _ = finished
    model = AutoModelForTokenClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.config.id2label == {0: "O", 1: "NAME"}
    items = align(tokenizer, [s.words for s in task.test], None, 48)
    probs = predict_words(model, items, tokenizer.pad_token_id, torch.device("cpu")).probs
    assert names.word_scores([s.tags for s in task.test], tags_of(probs)) == snap.names["test"]


def test_the_taggers_probabilities_are_a_softmax_of_the_models_own_forward(finished):
    folder = finished[2]
    model = AutoModelForTokenClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    text = "Then the car of Alice went to Ouagadougou."
    ws = ["Then", "the", "car", "of", "Alice", "went", "to", "Ouagadougou", "."]
    tagged = tag_sentence(model, tokenizer, text)
    assert [w for w, _, _ in tagged] == ws
    enc = tokenizer(ws, is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        p = model(**enc).logits.softmax(-1)[0]
    firsts = [enc.word_ids().index(k) for k in range(len(ws))]
    for (word, label, prob), pos in zip(tagged, firsts):
        assert prob == pytest.approx(float(p[pos].max()), abs=1e-6)
        assert label == model.config.id2label[int(p[pos].argmax())]
    assert [label for _, label, _ in tagged[1:5]] == ["O", "O", "O", "NAME"]  # as in training
    with pytest.raises(ValueError, match="longer than the model's 8 pieces"):
        tag_sentence(model, tokenizer, text + " and then back home again", max_len=8)


def test_every_start_gets_the_same_token_head_and_random_weights_keep_the_shape(tiny_mlm_dir):
    a = build_model(tiny_finetune_config(tiny_mlm_dir, FROM_RUN, seed=1), ["O", "NAME"],
                    model_class=BertForTokenClassification).model
    b = build_model(tiny_finetune_config(tiny_mlm_dir, FROM_RUN, init="random", seed=1), ["O", "NAME"],
                    model_class=BertForTokenClassification).model
    assert torch.equal(a.classifier.weight, b.classifier.weight)
    assert [(n, p.shape) for n, p in a.named_parameters()] == [(n, p.shape) for n, p in b.named_parameters()]
    assert not torch.equal(a.bert.embeddings.word_embeddings.weight, b.bert.embeddings.word_embeddings.weight)


def test_landmarks_and_errors_on_a_handmade_split():
    o, n = names.OTHER, names.NAME
    train = [names.TaggedSentence("a", ("So", "Rome", "fell"), (None, n, o))]
    test = [names.TaggedSentence("b", ("Then", "Rome", "and", "Oslo"), (None, n, o, n))]
    task = WordTask(list(names.LABELS), train, test, test)
    marks = landmarks(task)
    assert marks["word_memory"]["test"]["f1"] == pytest.approx(2 / 3)  # Rome remembered, Oslo unseen: O
    assert marks["all_o"]["test"]["recall"] == 0.0
    probs = [np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])]
    found = errors(test, tags_of(probs), probs)
    assert [e["word"] for e in found["missed"]] == ["Oslo"] and [e["word"] for e in found["false"]] == ["and"]
    assert found["false"][0]["p_name"] == 0.7 and found["missed"][0]["index"] == 3


def test_the_names_time_budget_includes_the_final_evaluation(tiny_mlm_dir, tmp_path):
    """A 180 s budget "evaluations included" ran 222 s: the final evaluation came on top. A fake clock moves
    10 s for every forward of the model in eval mode (scoring) and 1 s for every training forward: the run stops
    training where the foreseen final evaluation still fits, and ends within its budget."""
    from tests.helpers import FakeClock

    clock = FakeClock()

    def tick(module, args, output):
        if isinstance(module, BertForTokenClassification):
            clock.now += 1.0 if module.training else 10.0

    hook = torch.nn.modules.module.register_module_forward_hook(tick)
    try:
        metrics = FinetuneMetrics()
        cfg = tiny_finetune_config(tiny_mlm_dir, FROM_RUN, epochs=40, eval_every=1000, time_budget_s=60)
        status = run_token_finetune(cfg, name_task(), metrics, RunControl(), None, clock=clock)
    finally:
        hook.remove()
    snap = metrics.snapshot()
    assert status == Status.FINISHED and snap.message.startswith("The 1-minute time budget ended the run"), snap.message
    # 10 s scoring the start, 1 s a step, 20 s for the final evaluation (validation, then test): all within 60 s
    assert snap.step < snap.total_steps and snap.elapsed_s == 10 + snap.step + 20 <= 60
    assert "over the budget" not in snap.message


def _spoilt_run(tiny_mlm_dir, folder, spoil_from: int):
    """A names run whose head is pushed, from step ``spoil_from`` on, to call every word O (F1 0 and a huge loss on
    validation from then on)."""
    seen: dict = {}

    def grab(module, args, output):
        if isinstance(module, BertForTokenClassification):
            seen["model"] = module

    def spoil(step: int) -> None:
        if step >= spoil_from:
            with torch.no_grad():
                seen["model"].classifier.bias.copy_(torch.tensor([50.0, -50.0]))

    hook = torch.nn.modules.module.register_module_forward_hook(grab)
    try:
        metrics, task = FinetuneMetrics(), name_task()
        status = run_token_finetune(tiny_finetune_config(tiny_mlm_dir, FROM_RUN), task, metrics, RunControl(),
                                    folder, on_step=spoil)
    finally:
        hook.remove()
    return task, metrics.snapshot(), status


def test_the_run_keeps_the_step_chosen_on_validation_not_its_last(tiny_mlm_dir, tmp_path):
    """After step 20 the head is pushed to call every word O: the run keeps an earlier step's weights, the one with
    the best validation-sample F1, and scores and saves those."""
    folder = tmp_path / "model"
    task, snap, status = _spoilt_run(tiny_mlm_dir, folder, 20)
    assert status == Status.FINISHED, snap.message
    curve = dict(zip(snap.eval_steps, snap.val_macro_f1))
    assert snap.eval_steps == [0, 10, 20, 30, 36] and curve[30] == curve[36] == 0.0  # spoilt from step 20 on
    chosen = snap.names["chosen"]
    assert chosen["step"] in (10, 20) and chosen["f1"] == max(curve.values()) > 0.5 and chosen["last_step"] == 36
    assert chosen["epoch"] == round(chosen["step"] / 3, 3) and chosen["on"] == "validation sample of 8"
    assert f"Kept the weights of step {chosen['step']}" in snap.message
    assert snap.test_macro_f1 > 0.5 and snap.val_macro_f1_all == chosen["f1"]  # the sample is the whole split
    model = AutoModelForTokenClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.classifier.bias.abs().max() < 10  # not the spoilt head
    probs = predict_words(model, align(tokenizer, [s.words for s in task.test], None, 48), tokenizer.pad_token_id,
                          torch.device("cpu")).probs
    assert names.word_scores([s.tags for s in task.test], tags_of(probs)) == snap.names["test"]


def test_the_start_is_never_kept_over_a_fine_tuned_step(tiny_mlm_dir, tmp_path):
    """Spoilt from the first step on, every fine-tuned step scores worse on validation than the start (a lower
    loss at the same or a better F1): the run still keeps a fine-tuned step, as the Trainer's best model is one
    of its evaluations during training; its untrained head is no choice."""
    _, snap, status = _spoilt_run(tiny_mlm_dir, tmp_path / "model", 1)
    assert status == Status.FINISHED and snap.names["chosen"]["step"] > 0
    assert snap.val_loss[0] < min(snap.val_loss[1:])  # the start would have won


def test_a_tie_on_f1_keeps_the_lower_loss_then_the_earlier_step():
    model = torch.nn.Linear(2, 2)
    best = BestStep()
    for step, f1, loss in ((0, 0.0, 0.9), (10, 0.0, 0.5), (20, 0.8, 0.4), (30, 0.8, 0.4), (40, 0.7, 0.1)):
        with torch.no_grad():
            model.bias.fill_(step)
        best.consider(step, float(step), f1, loss, model, None)
    assert best.step == 20 and best.f1 == 0.8
    best.restore(model)
    assert model.bias.tolist() == [20.0, 20.0]

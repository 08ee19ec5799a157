"""The run's held-out figures and probe ranks, checked against the model's own forward (its full logits)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, BertForMaskedLM

from bertdemo.models.embedded import tokenizer_dir
from bertdemo.pretrain.evaluation import answer_questions, probe_answers
from bertdemo.pretrain.heldout import IGNORE_INDEX, heldout_questions
from tests.helpers import tiny_bert_config


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(tokenizer_dir()))


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    return BertForMaskedLM(tiny_bert_config()).eval()


def ranks_by_sorting(logits: torch.Tensor, targets: torch.Tensor) -> list[int]:
    """1 + the place of each target in its row sorted from the highest logit down."""
    order = logits.argsort(dim=-1, descending=True)
    return [(row == t).nonzero().item() + 1 for row, t in zip(order, targets)]


def test_heldout_loss_accuracy_and_median_rank_are_the_models_own(model, tokenizer):
    rng = np.random.default_rng(1)
    blocks = rng.integers(1000, 30000, size=(40, 24))
    blocks[:, 0], blocks[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    q = heldout_questions(blocks, tokenizer.all_special_ids, tokenizer.mask_token_id)
    got = answer_questions(model, q, torch.device("cpu"))
    ids, labels = torch.from_numpy(q.input_ids), torch.from_numpy(q.labels)
    with torch.no_grad():
        logits = model(input_ids=ids).logits  # (N, T, V): the full forward
    asked = labels != IGNORE_INDEX
    ranks = ranks_by_sorting(logits[asked], labels[asked])
    assert got["loss"] == pytest.approx(F.cross_entropy(logits[asked], labels[asked]).item(), rel=1e-5)
    assert got["top1"] == pytest.approx(np.mean([r == 1 for r in ranks]))
    assert got["top5"] == pytest.approx(np.mean([r <= 5 for r in ranks]))
    assert got["median_rank"] == pytest.approx(float(np.median(ranks)))
    assert model.training is False
    assert answer_questions(model, q, torch.device("cpu"), should_stop=lambda: True) is None


def test_a_favoured_word_reaches_rank_one_and_the_probe_reports_it(tokenizer):
    """A model whose output bias favours 'in' ranks it first for the probe, as its logits say."""
    torch.manual_seed(0)
    model = BertForMaskedLM(tiny_bert_config())
    text = "He was born [MASK] London."
    enc = tokenizer(text, return_tensors="pt")
    where = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero().item()
    target = tokenizer.convert_tokens_to_ids("in")
    with torch.no_grad():
        model.cls.predictions.decoder.bias[target] += 20.0
    model.train()
    answers = probe_answers(model, tokenizer, [(text, "in"), (text, "London"), (text, ""), (text, "unbornness")],
                            torch.device("cpu"))
    assert model.training  # the probe restored train mode
    model.eval()
    with torch.no_grad():
        logits = model(**enc).logits[0, where]
    # a gap at a word start: no ## piece is offered there (as in Fill-Mask), nor counted in the rank
    whole = torch.tensor([not t.startswith("##") for t in tokenizer.convert_ids_to_tokens(range(len(tokenizer)))])
    probs = logits.softmax(-1) * whole
    top = probs.topk(5)
    assert [t for t, _ in answers[0].top5] == tokenizer.convert_ids_to_tokens(top.indices.tolist())
    assert [p for _, p in answers[0].top5] == pytest.approx(top.values.tolist(), abs=1e-5)
    words_only = logits.masked_fill(~whole, float("-inf"))[None]
    assert answers[0].rank == 1 == ranks_by_sorting(words_only, torch.tensor([target]))[0]
    london = tokenizer.convert_tokens_to_ids("london")  # an uncased vocabulary: the word as the tokenizer writes it
    assert answers[1].rank == ranks_by_sorting(words_only, torch.tensor([london]))[0] > 1
    assert answers[2].rank is None and answers[3].rank is None  # no word, or not one vocabulary entry
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        probe_answers(model, tokenizer, [("No gap here.", "in")], torch.device("cpu"))


def test_runs_with_different_recipes_answer_the_same_heldout_questions(tmp_path):
    """Landmarks are scored on the run's questions: equal landmarks, the same questions, whatever the recipe."""
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training
    from tests.helpers import tiny_run_config, wiki_corpus_file

    corpus = wiki_corpus_file(tmp_path, 60)
    snaps = []
    for i, recipe in enumerate(({"seed": 1}, {"seed": 2, "mlm_probability": 0.4, "mask_replace_prob": 1.0,
                                              "random_replace_prob": 0.0, "batch_size": 4})):
        metrics = MetricsBuffer()
        cfg = tiny_run_config(corpus, tmp_path, steps=2, eval_every=2, **recipe)
        assert run_training(cfg, metrics=metrics, run_folder=tmp_path / f"ck{i}") == "finished"
        snaps.append(metrics.snapshot())
    assert snaps[0].landmarks == snaps[1].landmarks and set(snaps[0].landmarks) == {"uniform", "unigram", "left", "both"}
    for snap in snaps:
        assert snap.eval_steps == [0, 2] and len(snap.top5_acc) == len(snap.median_rank) == 2
        assert [len(t["ranks"]) for t in snap.probe_tracks] == [2] * 7 and snap.probe_tracks[-1]["expected"] == "paris"


def test_a_probe_offers_what_fill_mask_offers_there(tokenizer):
    """A whole-word gap got '##s' as a guess, which Fill-Mask filters: one rule for both (no ## piece at a word
    start, only ## pieces glued to letters), and the rank counts the words that may stand there."""
    from bertdemo.explore import fill_mask
    from bertdemo.models.store import LoadedModel
    from bertdemo.pretrain.evaluation import predict_masks

    torch.manual_seed(0)
    model = BertForMaskedLM(tiny_bert_config()).eval()
    pieces = tokenizer.convert_tokens_to_ids(["##s", "##ed"])
    with torch.no_grad():
        model.cls.predictions.decoder.bias[pieces] += 20.0  # the model's favourite guesses are ## pieces
    text = "The United [MASK] of America."
    answer = probe_answers(model, tokenizer, [(text, "states")], torch.device("cpu"))[0]
    assert not any(t.startswith("##") for t, _ in answer.top5)
    with torch.no_grad():
        logits = model(**tokenizer(text, return_tensors="pt")).logits[0, 3]
    whole = torch.tensor([not t.startswith("##") for t in tokenizer.convert_ids_to_tokens(range(len(tokenizer)))])
    target = tokenizer.convert_tokens_to_ids("states")
    assert answer.rank == int((logits[whole] > logits[target]).sum()) + 1
    start, glued = predict_masks(model, tokenizer, "The United [MASK] of un[MASK].", torch.device("cpu"))
    assert not any(t.startswith("##") for t, _ in start) and all(t.startswith("##") for t, _ in glued)
    loaded = LoadedModel(name="tiny", source="local", path="", tokenizer=tokenizer, model=model, device=torch.device("cpu"),
                         has_mlm_head=True)
    view = fill_mask.predict(loaded, "The United [MASK] of un[MASK].", top_k=5)
    assert [[(c.token, round(c.prob, 5)) for c in m.candidates] for m in view.masks] == [start, glued]

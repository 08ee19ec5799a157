"""What the heads became: a tiny BERT whose six heads are built to attend to the previous word, the next
word, the same word, [CLS], [SEP] and everywhere alike gets exactly those labels; its left-to-right twin
(the same weights, the causal mask) can never look at the next word."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertLMHeadModel

from bertdemo.explore import head_roles as hr

THETA = 2 * math.pi / 24  # position angle step: no two positions of a sentence alias
ROTATION, CLS_BIAS, SEP_BIAS, SEP_MARK = 300.0, 200.0, 300.0, 0.05
EXPECTED = ["previous word", "next word", "same word", "[CLS]", "[SEP]", "broad"]


def _rot(angle: float) -> torch.Tensor:
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, -s], [s, c]])


def built_heads(tokenizer, causal: bool = False):
    """One layer, six heads of two dimensions, weights set so that each head's target is known."""
    cfg = BertConfig(vocab_size=len(tokenizer), hidden_size=12, num_hidden_layers=1, num_attention_heads=6,
                     intermediate_size=4, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, is_decoder=causal, attn_implementation="eager")
    model = (BertLMHeadModel if causal else BertForMaskedLM)(cfg).eval()
    emb, sa = model.bert.embeddings, model.bert.encoder.layer[0].attention.self
    with torch.no_grad():
        for p in (emb.word_embeddings.weight, emb.token_type_embeddings.weight, emb.position_embeddings.weight,
                  sa.query.weight, sa.query.bias, sa.key.weight, sa.key.bias):
            p.zero_()
        emb.LayerNorm.weight.fill_(1.0)
        emb.LayerNorm.bias.zero_()
        pos = torch.arange(64, dtype=torch.float32) * THETA
        emb.position_embeddings.weight[:, :4] = torch.stack([pos.cos(), pos.sin(), -pos.cos(), -pos.sin()], 1)
        emb.word_embeddings.weight[tokenizer.sep_token_id, 6:8] = torch.tensor([SEP_MARK, -SEP_MARK])
        for head, angle in ((0, -THETA), (1, THETA), (2, 0.0)):  # q_i . k_j ~ cos(theta (i + shift - j))
            sa.query.weight[2 * head : 2 * head + 2, 0:2] = ROTATION * _rot(angle)
            sa.key.weight[2 * head : 2 * head + 2, 0:2] = torch.eye(2)
        sa.query.bias[6] = CLS_BIAS  # head 3: a constant query against cos(theta j): position 0, [CLS]
        sa.key.weight[6:8, 0:2] = torch.eye(2)
        sa.query.bias[8] = SEP_BIAS  # head 4: a constant query against the [SEP] mark
        sa.key.weight[8, 6] = 1.0
        # head 5: no query, no key: every visible position alike
    return model


def test_the_built_heads_get_exactly_their_labels(tokenizer):
    roles = hr.head_roles(built_heads(tokenizer), tokenizer, "built")
    assert [r.role for r in roles.roles] == EXPECTED
    assert roles.counts() == {"previous word": 1, "next word": 1, "same word": 1, "[CLS]": 1, "[SEP]": 1,
                              "broad": 1, "mixed": 0}
    for r in roles.roles[:5]:  # the share that earns each label is nearly all of the head's attention
        assert r.share == r.shares[r.role] and r.share > 0.9
    assert roles.role_of(0, 5).share == pytest.approx(1.0, abs=1e-6)  # uniform: the entropy at its maximum
    assert roles.role_of(0, 5).shares["[CLS]"] < 0.15
    assert roles.words == sum(len(tokenizer(s)["input_ids"]) - 2 for s in hr.HEAD_SENTENCES)


def test_shares_are_the_models_own_attention(tokenizer):
    """The previous-word share is the mean, over the words, of the weight the model's own forward puts there."""
    model = built_heads(tokenizer)
    sentences = hr.HEAD_SENTENCES[:3]
    roles = hr.head_roles(model, tokenizer, "built", sentences)
    total, words = 0.0, 0
    for s in sentences:
        enc = tokenizer(s, return_tensors="pt")
        with torch.no_grad():
            att = model.bert(**enc, output_attentions=True).attentions[0][0, 0]  # head 0: (S, S)
        n = att.shape[0]
        total += sum(float(att[i, i - 1]) for i in range(1, n - 1))
        words += n - 2
    assert roles.role_of(0, 0).shares["previous word"] == pytest.approx(total / words, abs=1e-6)


def test_a_left_to_right_twin_never_looks_at_the_next_word(tokenizer):
    roles = hr.head_roles(built_heads(tokenizer, causal=True), tokenizer, "built ltr")
    assert roles.causal
    assert all(r.shares["next word"] == 0.0 and r.shares["[SEP]"] == 0.0 for r in roles.roles)
    # the next-word head, blind to the right, falls back on the nearest position it can see: the word itself
    assert [r.role for r in roles.roles] == ["previous word", "same word", "same word", "[CLS]", "broad", "broad"]


def test_a_mixed_head_and_the_label_rule():
    assert hr._label({t: 0.2 for t in hr.TARGETS}, 0.5) == ("mixed", 0.5)
    assert hr._label({**{t: 0.1 for t in hr.TARGETS}, "[SEP]": 0.5}, 0.9) == ("[SEP]", 0.5)
    assert hr._label({t: 0.1 for t in hr.TARGETS}, 0.75) == ("broad", 0.75)


def test_checkpoints_over_steps(tokenizer):
    random_start = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=12, num_hidden_layers=1,
                                              num_attention_heads=6, intermediate_size=4, max_position_embeddings=64,
                                              attn_implementation="eager")).eval()
    run = hr.roles_over_checkpoints("run-x", [(200, built_heads(tokenizer), tokenizer), (0, random_start, tokenizer)])
    assert run.steps == [0, 200]
    assert run.measured[0].counts()["previous word"] == 0
    assert run.first_step_with("previous word") == 200
    assert hr.checkpoints_to_measure(list(range(0, 1000, 10)), 5) == [0, 250, 500, 740, 990]
    assert hr.checkpoints_to_measure([30, 10, 20]) == [10, 20, 30]


def test_the_grid_and_its_text_twin_name_every_label(tokenizer):
    from bertdemo.viz import twins as viz

    roles = hr.head_roles(built_heads(tokenizer), tokenizer, "built <model>")
    spec = viz.head_roles_spec(roles)
    marks = list(viz.ROLE_MARKS)
    assert [marks[i] for i in spec["data"][0]["z"][0]] == EXPECTED
    assert "&lt;model&gt;" in spec["layout"]["title"]["text"]
    text = viz.head_roles_markdown(roles)
    assert "| L1 | ← prev " in text and "broad 100%" in text and "&#60;model&#62;" in text
    assert "Heads by label: previous word: 1, next word: 1, same word: 1, [CLS]: 1, [SEP]: 1, broad: 1." in text

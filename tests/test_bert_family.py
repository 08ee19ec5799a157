"""The BERT family table: exact published counts, and the formula per component against built models."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertForPreTraining

from bertdemo.locks import MODEL_INIT_LOCK
from bertdemo.models import bert_family
from bertdemo.pretrain.config import param_count_of_config


def test_bert_base_and_large_have_their_published_counts():
    assert bert_family.member("bert-base").masked_lm == 109_514_298
    assert bert_family.member("bert-large").masked_lm == 335_174_458
    assert [m.name for m in bert_family.family()] == [
        "bert-tiny", "bert-mini", "bert-small", "bert-medium", "bert-base", "bert-large"]


@pytest.mark.parametrize("name", list(bert_family.FAMILY))
def test_the_formula_agrees_with_transformers_config_count(name):
    layers, hidden, heads, ffn = bert_family.FAMILY[name]
    config = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads, intermediate_size=ffn)
    member = bert_family.member(name)
    assert member.masked_lm == param_count_of_config(config)
    assert member.pretraining == param_count_of_config(config, nsp=True)


def test_each_component_matches_a_built_bert_tiny():
    layers, hidden, heads, ffn = bert_family.FAMILY["bert-tiny"]
    config = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads, intermediate_size=ffn)
    with MODEL_INIT_LOCK:
        mlm, pretraining = BertForMaskedLM(config), BertForPreTraining(config)
    parts = {c.name: c.count for c in bert_family.member("bert-tiny").components}
    named = dict(mlm.named_parameters())  # the tied decoder weight appears once, as the word embeddings

    def total(*fragments: str) -> int:
        return sum(p.numel() for n, p in named.items() if all(f in n for f in fragments))

    assert parts["word embeddings"] == total("word_embeddings")
    assert parts["position embeddings"] == total("position_embeddings")
    assert parts["segment embeddings"] == total("token_type_embeddings")
    assert parts["attention Q, K, V, O (all layers)"] == (
        total("attention.self") + total("attention.output.dense"))
    assert parts["feed-forward (all layers)"] == total("intermediate.dense") + total("layer.", "output.dense") - total(
        "attention.output.dense")
    assert parts["MLM decoder"] == total("predictions.bias") == 30522
    unique = sum(p.numel() for p in {id(p): p for p in mlm.parameters()}.values())
    assert sum(parts.values()) == unique == 4_416_698
    assert bert_family.member("bert-tiny").pretraining == sum(
        p.numel() for p in {id(p): p for p in pretraining.parameters()}.values())


def test_the_table_shows_every_size_and_component():
    table = bert_family.family_markdown()
    assert "**109,514,298**" in table and "**335,174,458**" in table
    assert table.count("\n") == 2 + len(bert_family.member("bert-base").components) + 2
    with pytest.raises(ValueError, match="Unknown BERT size"):
        bert_family.member("bert-huge")


def test_counting_on_the_meta_device_allocates_nothing():
    with torch.device("meta"):
        model = BertForMaskedLM(BertConfig())
    assert model.num_parameters() == 109_514_298
    assert all(p.device.type == "meta" for p in model.parameters())

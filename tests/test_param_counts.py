"""Parameter counts pinned to exact numbers: the formula, the built model, and BERT's published sizes."""

from __future__ import annotations

from transformers import BertConfig, BertForMaskedLM

from bertdemo.locks import MODEL_INIT_LOCK
from bertdemo.pretrain.config import TrainConfig, bert_config, param_count
from bertdemo.pretrain.model import build_model

BERT_BASE_MLM = 109_514_298  # BertForMaskedLM(BertConfig()): 30522 vocab, 12 x 768, 512 positions; decoder tied
BERT_TINY_MLM = 4_416_698  # the bert-tiny preset (2 layers x 128, 2 heads, FFN 512) over the 30522 vocab


def _unique_parameters(model) -> int:
    """Parameters counted once each, independently of bertdemo (a tied decoder is one tensor)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def test_bert_base_masked_lm_has_109_514_298_parameters():
    assert param_count(BertConfig()) == BERT_BASE_MLM
    with MODEL_INIT_LOCK:
        model = BertForMaskedLM(BertConfig())
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert _unique_parameters(model) == BERT_BASE_MLM
    assert param_count(model) == BERT_BASE_MLM


def test_bert_tiny_preset_has_4_416_698_parameters(tokenizer):
    cfg = TrainConfig()  # the default preset is bert-tiny
    assert bert_config(cfg).num_hidden_layers == 2 and bert_config(cfg).hidden_size == 128
    assert param_count(cfg) == BERT_TINY_MLM
    assert _unique_parameters(build_model(cfg, tokenizer)) == BERT_TINY_MLM

"""A fine-tune started from a learner's own pretraining run gets its control: random weights of *that run's* shape
(``random:run:<id>/checkpoint``), the same seed, data order and budget — not the embedded model's 6-layer shape,
against which a bert-tiny run's gain could not be read (issue 54)."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from bertdemo.finetune.config import FinetuneConfig, is_random_start, random_like, run_of_init
from bertdemo.finetune.engine import build_model
from bertdemo.models import embedded
from bertdemo.models.mlm_head import start_folder

RUN = "run:20260101-000000-own/checkpoint"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A learner's pretraining checkpoint: 3 layers, hidden 48 (no shape the app ships)."""
    torch.manual_seed(1)
    folder = tmp_path_factory.mktemp("own-run")
    BertForMaskedLM(BertConfig(vocab_size=30522, hidden_size=48, num_hidden_layers=3, num_attention_heads=2,
                               intermediate_size=96)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir())).save_pretrained(folder)
    return folder


def test_the_control_of_a_run_is_random_weights_of_its_shape_with_the_same_head(run_folder):
    control = build_model(FinetuneConfig(init=random_like(RUN), init_path=str(run_folder), seed=3), ["a", "b"])
    start = build_model(FinetuneConfig(init=RUN, init_path=str(run_folder), seed=3), ["a", "b"])
    shape = lambda m: (m.config.num_hidden_layers, m.config.hidden_size, m.config.intermediate_size)
    assert shape(control.model) == shape(start.model) == (3, 48, 96)  # the run's shape, not the embedded model's
    assert control.label == f"random weights (pretraining run {RUN}'s shape: 3 layers, hidden 48)"
    pretrained = BertForMaskedLM.from_pretrained(run_folder).bert.embeddings.word_embeddings.weight
    assert torch.equal(start.model.bert.embeddings.word_embeddings.weight, pretrained)
    assert not torch.allclose(control.model.bert.embeddings.word_embeddings.weight, pretrained)
    for name in ("classifier.weight", "bert.pooler.dense.weight"):  # the head every start of this seed gets
        assert torch.equal(dict(control.model.named_parameters())[name], dict(start.model.named_parameters())[name])


def test_the_control_is_named_and_refused_like_a_run(tmp_path):
    assert run_of_init(random_like(RUN)) == run_of_init(RUN) == RUN and run_of_init("random") == ""
    assert is_random_start("random") and is_random_start(random_like(RUN)) and not is_random_start(RUN)
    with pytest.raises(ValueError, match="is not one of"):
        FinetuneConfig(init="random:/etc/passwd").validate()  # only a run of this server's may give its shape
    (tmp_path / "finetune_config.json").write_text(f'{{"init": "{random_like(RUN)}", "init_path": "{tmp_path}"}}')
    assert start_folder(tmp_path)[0] is None  # a random start has no trained masked-LM head to lend

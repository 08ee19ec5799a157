"""A fine-tune started from a learner's own pretraining run gets its control: random weights of *that run's* shape
(``random:run:<id>/checkpoint``), the same seed, data order and budget — not the embedded model's 6-layer shape,
against which a bert-tiny run's gain could not be read (issue 54)."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from bertdemo.finetune.config import FinetuneConfig, is_random_start, random_like, run_of_init
from bertdemo.finetune.engine import build_model
from bertdemo.finetune.reference import load_reference
from bertdemo.models import embedded
from bertdemo.models.mlm_head import start_folder
from bertdemo.settings import ServerSettings
from bertdemo.viz.finetune import pair_verdict, status_markdown
from bertdemo.viz.text import html_code
from tests.helpers import run_services, wait_until
from tests.test_finetune_engine import word_task

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


def _pretraining_run(runs_dir: Path, model_dir: Path) -> str:
    """A pretraining run of the server's own (its one checkpoint: ``model_dir``), as a fine-tune's start."""
    run_id = "20260101-000000-tiny"
    step = runs_dir / run_id / "steps" / "step-1"
    shutil.copytree(model_dir, step)
    (step / "trainer_state.json").write_text('{"step": 1}')
    (runs_dir / run_id / "LATEST").write_text("step-1\n")
    return f"run:{run_id}/checkpoint"


def test_a_run_and_its_control_are_read_as_a_pair_with_the_gap_in_words(tmp_path, tiny_mlm_dir):
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", offline=True,
                                    device="cpu")
    _, _, finetune = run_services(settings)
    start = _pretraining_run(tmp_path / "runs", tiny_mlm_dir)

    def ended(init: str, seed: int):
        cfg = FinetuneConfig(init=init, learning_rate=3e-3, batch_size=8, epochs=2, time_budget_s=0, eval_every=1000,
                             eval_examples=50, num_threads=1, seed=seed)
        run = finetune.start(cfg, task_loader=lambda: word_task(40))
        wait_until(lambda: not run.active, timeout=180, message=lambda: run.snapshot().message)
        return run.snapshot()

    own = ended(start, 4)
    alone = status_markdown(own, partner=finetune.partner(own), reference=load_reference())
    assert "is read against its control, random weights of this run's shape, with the same seed (4)" in alone
    assert "stored reference)" not in alone
    control = ended(random_like(start), 4)
    assert finetune.partner(control).run_id == own.run_id and finetune.partner(own).run_id == control.run_id
    live = dataclasses.replace(control, test_accuracy=math.nan, status="running")  # as it trains: drawn beside its pair
    assert finetune.partner(live).run_id == own.run_id and pair_verdict(live, own) == ""  # no gap before its end
    text = status_markdown(control, partner=finetune.partner(control), reference=load_reference())
    gap = (own.test_accuracy - control.test_accuracy) * 100
    assert f"**{own.test_accuracy:.1%}**" in text and f"of its shape ({html_code(control.run_id)}" in text
    assert f"{control.test_accuracy:.1%}: **{gap:+.1f} points**" in text and "seed 4" in text
    assert "between seeds (3 seeds)" in text  # how far one seed is trusted, from the stored reference
    assert "stored reference)" not in text  # the embedded shape's stored runs are no control of this run's shape
    other_seed = ended(random_like(start), 5)
    assert finetune.partner(other_seed) is None  # a control with another seed is no pair
    assert "against the same start from the run itself" in pair_verdict(other_seed, None)

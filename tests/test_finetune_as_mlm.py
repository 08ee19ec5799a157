"""A fine-tuned run is a model like any other: ``ft:<id>`` loads through the app's store as a masked LM — the
fine-tuned encoder with the masked-LM head of the model it started from — is among every tab's models, and a
name that is none gets one plain sentence."""

from __future__ import annotations

import pytest
import torch
from transformers import BertForMaskedLM, BertForSequenceClassification

from bertdemo.context import AppContext
from bertdemo.finetune.engine import run_finetune
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.runs.control import RunControl
from tests.helpers import tiny_finetune_config, word_task

RUN_ID = "20261127-070000-ft-run"


@pytest.fixture(scope="module")
def app(tiny_mlm_dir, tmp_path_factory):
    """A server whose runs folder holds one fine-tuning run from a checkpoint and one from random weights."""
    ctx = AppContext.for_tests(tmp_path_factory.mktemp("server"))
    root = ctx.settings.runs_dir / ".finetune"
    for run_id, init in ((RUN_ID, "run:tiny/checkpoint"), ("20261127-070100-ft-random", "random")):
        cfg = tiny_finetune_config(tiny_mlm_dir, init=init, epochs=4)
        assert run_finetune(cfg, word_task(), FinetuneMetrics(), RunControl(), root / run_id / "model") == "finished"
    return ctx


def test_a_fine_tuned_run_loads_as_its_encoder_with_its_starts_head(app, tiny_mlm_dir):
    loaded = app.models.get(f"ft:{RUN_ID}")
    assert loaded.has_mlm_head and "masked-LM head of its start, run:tiny/checkpoint" in loaded.note
    start = BertForMaskedLM.from_pretrained(tiny_mlm_dir).state_dict()
    tuned = BertForSequenceClassification.from_pretrained(app.finetune_runs.model(f"ft:{RUN_ID}")).state_dict()
    own = loaded.model.state_dict()
    heads = [k for k in own if k.startswith("cls.") and not k.endswith("decoder.weight")]
    assert heads and all(torch.equal(own[k], start[k]) for k in heads if k in start)  # the head as it was
    encoder = [k for k in own if k.startswith("bert.encoder.")]
    assert encoder and all(torch.equal(own[k], tuned[k]) for k in encoder)  # the encoder as fine-tuned
    assert not torch.equal(own["bert.encoder.layer.0.attention.self.query.weight"],
                           start["bert.encoder.layer.0.attention.self.query.weight"])
    # its [MASK] answer is the composition's own forward
    enc = loaded.tokenizer("the apple and the [MASK] are here .", return_tensors="pt")
    with torch.inference_mode():
        hidden = loaded.model.bert(**enc).last_hidden_state
        assert torch.allclose(loaded.model(**enc).logits, loaded.model.cls(hidden), atol=1e-6)


def test_a_random_start_loads_without_a_head_and_says_why(app):
    loaded = app.models.get("ft:20261127-070100-ft-random")
    assert not loaded.has_mlm_head and "random weights" in loaded.note


def test_fine_tuned_runs_are_among_every_tabs_models_and_an_unknown_one_is_one_sentence(app):
    from bertdemo.finetune.service import FinetuneService

    choices = {v: k for k, v in app.finetune_runs.model_choices()}
    assert set(choices) == {f"ft:{RUN_ID}", "ft:20261127-070100-ft-random"}
    assert "(test)" in choices[f"ft:{RUN_ID}"] and "from run:tiny/checkpoint" in choices[f"ft:{RUN_ID}"]
    assert isinstance(app.finetune_runs, FinetuneService)
    with pytest.raises(ValueError) as err:
        app.models.get("ft:nope")
    assert str(err.value) == "There is no fine-tuning run 'nope' on this server (deleted?): pick one from the list."
    with pytest.raises(ValueError, match="no fine-tuning run"):
        app.models.get("ft:../../etc")


def test_an_ordinary_folder_without_a_head_keeps_its_own_note(tmp_path, tokenizer):
    """Only a fine-tuning run's folder borrows a head: another folder's missing head is reported as before."""
    from transformers import BertModel

    from bertdemo.models.loading import load_masked_lm
    from tests.helpers import tiny_bert_config

    BertModel(tiny_bert_config()).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = load_masked_lm(str(tmp_path))
    assert not loaded.has_mlm_head and loaded.note == ""

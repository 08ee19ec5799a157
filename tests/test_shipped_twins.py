"""The shipped twins: a masked LM and a left-to-right LM of one shape, trained by the project's engine with one
recipe; plain model folders that stock transformers opens, pickable wherever a model is, loaded by load_twin."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, BertForMaskedLM, BertLMHeadModel

from bertdemo.explore import attention, fill_mask
from bertdemo.models import twins
from bertdemo.models.catalog import model_choices
from bertdemo.models.loading import load_twin
from bertdemo.models.store import ModelStore


@pytest.fixture(scope="module")
def pair():
    assert all(twins.has_twin(kind) for kind in twins.TWIN_KINDS), "the twins' tracked assets are missing"
    return {kind: load_twin(kind) for kind in twins.TWIN_KINDS}


def test_the_twins_are_one_shape_two_objectives_and_load_in_stock_transformers(pair) -> None:
    mlm, ltr = pair["mlm"].model, pair["ltr"].model
    assert type(mlm) is BertForMaskedLM and type(ltr) is BertLMHeadModel and ltr.config.is_decoder
    assert {k: v.shape for k, v in mlm.state_dict().items()} == {k: v.shape for k, v in ltr.state_dict().items()}
    stock = AutoModelForCausalLM.from_pretrained(str(twins.twin_dir("ltr")), dtype=torch.float32).eval()
    assert type(stock) is BertLMHeadModel
    assert type(AutoModelForMaskedLM.from_pretrained(str(twins.twin_dir("mlm")))) is BertForMaskedLM
    ids = pair["ltr"].tokenizer("the dog barked at the mailman", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        assert torch.allclose(stock(ids).logits, ltr(ids).logits, atol=1e-4)
    build = json.loads((twins.TWINS_DIR / "build.json").read_text())
    assert build["twins"]["mlm"]["step"] == build["twins"]["ltr"]["step"]  # the same number of steps
    for kind in twins.TWIN_KINDS:  # small: a few MB each
        assert (twins.twin_dir(kind) / "model.safetensors").stat().st_size < 12e6


def test_the_twins_are_pickable_by_name_and_the_page_names_which_answered(pair) -> None:
    values = [value for _, value in model_choices("bert-base-uncased")]
    assert twins.TWIN_NAMES["mlm"] in values and twins.TWIN_NAMES["ltr"] in values
    store = ModelStore(default="bert-base-uncased", device="cpu")
    loaded = store.get(twins.TWIN_NAMES["ltr"])
    assert type(loaded.model) is BertLMHeadModel and loaded.name == "embedded/twin-ltr"
    result = fill_mask.predict(loaded, "The [MASK] barked at the mailman.")
    assert result.model_name == "embedded/twin-ltr" and result.note
    att = attention.compute(loaded, "the dog barked at the mailman")
    upper = torch.ones(att.attentions.shape[-2:]).triu(1).bool().numpy()
    assert (att.attentions[..., upper] == 0).all()
    with pytest.raises(ValueError, match="'mlm' or 'ltr'"):
        twins.twin_dir("gpt")


def test_the_learn_step_why_the_b_shows_both_twins_and_its_code_reproduces_them(pair, monkeypatch) -> None:
    import contextlib
    import io
    from pathlib import Path

    from bertdemo.learn import path as learn_path

    a = learn_path.answer(pair["mlm"], "why-b", "The dog barked at the mailman all night.")
    assert a.numbers["hidden_word"] == "night" and "[MASK]" in a.numbers["masked_text"]
    # the shipped pair (300 steps: 6.77 and 6.32 nats) is above the word-before guesser (5.62): the step says so
    assert "neither twin beats the word-before guesser (5.62 nats on those words)" in a.answer
    for kind in twins.TWIN_KINDS:
        want = fill_mask.predict(pair[kind], a.numbers["masked_text"], top_k=3, targets=["night"]).masks[0]
        assert a.numbers[f"{kind}_top"] == [c.token for c in want.candidates]
        assert a.numbers[f"{kind}_rank"] == want.targets[0].rank
    monkeypatch.chdir(Path(twins.TWINS_DIR).parents[2])  # the snippet names the folders from the repo root
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(a.code, "<snippet>", "exec"), {})  # noqa: S102 - our own generated code
    printed = out.getvalue().splitlines()
    assert printed == [f"{kind} {a.numbers[f'{kind}_top']} {a.numbers[f'{kind}_rank']}" for kind in twins.TWIN_KINDS]

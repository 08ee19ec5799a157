""""Show the code": every snippet runs (stock transformers, on a tiny model saved to a folder) and prints
the numbers the view shows."""

from __future__ import annotations

import ast
import contextlib
import io

import numpy as np
import pytest
import torch

from bertdemo.explore import attention, code_snippets, fill_mask, inside, inside_layer, inside_output, masking_lab
from bertdemo.explore import model_outputs, nsp, tokens
from bertdemo.models import embedded

TEXT = "The cat sat on the mat because it was tired."
MASKED = "The cat sat on the [MASK] because it was tired."


def run(source: str) -> tuple[list[str], dict]:
    """Execute a snippet as a notebook cell would: (its printed lines, its variables)."""
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<snippet>", "exec"), namespace)  # noqa: S102 - our own generated code
    return out.getvalue().splitlines(), namespace


def test_tokenizer_snippet(tiny_mlm_dir, tiny_loaded):
    lines, _ = run(code_snippets.tokenizer_code(str(tiny_mlm_dir), TEXT, "It was late."))
    table = tokens.tokenize(tiny_loaded.tokenizer, TEXT, "It was late.")
    assert ast.literal_eval(lines[0]) == [r.token for r in table.rows]
    assert ast.literal_eval(lines[1]) == [r.id for r in table.rows]
    assert ast.literal_eval(lines[2]) == [r.segment for r in table.rows]


def test_fill_mask_snippet(tiny_mlm_dir, tiny_loaded):
    lines, _ = run(code_snippets.fill_mask_code(str(tiny_mlm_dir), MASKED, 5))
    view = fill_mask.predict(tiny_loaded, MASKED, top_k=5)
    shown = [(c.token, round(c.prob, 4)) for c in view.masks[0].candidates]
    assert ast.literal_eval(lines[0]) == shown


def test_attention_snippet(tiny_mlm_dir, tiny_loaded):
    lines, ns = run(code_snippets.attention_code(str(tiny_mlm_dir), TEXT, "It was late.", layer=1, head=1))
    view = attention.compute(tiny_loaded, TEXT, "It was late.")
    assert ast.literal_eval(lines[0]) == view.tokens
    np.testing.assert_allclose(ns["weights"].numpy(), view.attentions[1, 1], atol=1e-6)
    assert "[[" in lines[1]  # the matrix is printed


def test_embeddings_snippet(tiny_mlm_dir, tiny_loaded):
    lines, ns = run(code_snippets.embeddings_code(str(tiny_mlm_dir), TEXT))
    view = inside.embeddings(tiny_loaded, TEXT)
    np.testing.assert_allclose(ns["normed"][0].numpy(), view.normed, atol=1e-6)
    assert float(lines[-1].split(":")[-1]) < 1e-5


def test_layer_step_snippet(tiny_mlm_dir, tiny_loaded):
    _, ns = run(code_snippets.layer_step_code(str(tiny_mlm_dir), TEXT, layer=1, head=0, query=3))
    view = inside_layer.layer_step(tiny_loaded, TEXT, 1, 0, 3)
    np.testing.assert_allclose(ns["scores"].softmax(-1).numpy(), view.probs, atol=1e-6)


@pytest.mark.parametrize("text, words", [(MASKED, ["mat"]), (TEXT, ["cat", "tired"])])
def test_mlm_loss_snippet(tiny_mlm_dir, tiny_loaded, text, words):
    lines, _ = run(code_snippets.mlm_loss_code(str(tiny_mlm_dir), text, words))
    view = inside_output.mlm_loss(tiny_loaded, text, words)
    mean, model_loss = lines[-1].replace("mean:", "").split("model loss:")
    assert float(mean) == round(view.mean_loss, 4) and float(model_loss) == round(view.model_loss, 4)


def test_inside_snippet_runs_its_three_parts(tiny_mlm_dir):
    lines, ns = run(code_snippets.inside_code(str(tiny_mlm_dir), TEXT, "cat", 0, 1, 2))
    assert {"normed", "scores", "log_p"} <= set(ns) and lines[-1].startswith("mean:")


def test_model_outputs_snippet(tiny_mlm_dir, tiny_loaded):
    lines, _ = run(code_snippets.model_outputs_code(str(tiny_mlm_dir), MASKED))
    view = model_outputs.model_outputs(tiny_loaded, MASKED)
    assert lines[0] == f"logits {view.logits}"
    assert lines[1] == f"hidden_states {len(view.hidden_states)} x {view.hidden_states[0]}"
    assert lines[2] == f"attentions {len(view.attentions)} x {view.attentions[0]}"
    assert lines[3] == f"top word at the first [MASK]: {view.top_token}"
    assert lines[4] == f"last_hidden_state {view.last_hidden_state}  pooler_output {view.pooler_output}"


def test_masking_snippet_measures_the_views_split():
    source = code_snippets.masking_code(TEXT, draws=4000).replace("'bert-base-uncased'", repr(str(embedded.tokenizer_dir())))
    lines, _ = run(source)
    printed = lines[0].split()
    measured = {printed[i]: float(printed[i + 1]) for i in range(0, len(printed), 2)}
    view = {r.name: r.measured for r in masking_lab.measure_rates(TEXT, masking_lab.MaskSettings(), 4000).rates}
    # transformers draws its own random numbers (a coin per token): the same rates within sampling error
    assert measured["chosen"] == pytest.approx(0.15, abs=0.02)
    for name in ("[MASK]", "random", "kept"):
        assert measured[name] == pytest.approx(view[name], abs=0.04)


def test_nsp_snippet(tmp_path):
    from transformers import BertForPreTraining

    from bertdemo.models.store import load_masked_lm
    from tests.helpers import tiny_bert_config

    torch.manual_seed(0)
    BertForPreTraining(tiny_bert_config()).save_pretrained(tmp_path)
    masking_lab.engine_tokenizer().save_pretrained(tmp_path)
    lines, _ = run(code_snippets.nsp_code(str(tmp_path), "She opened the fridge.", "It was empty."))
    view = nsp.predict_is_next(load_masked_lm(str(tmp_path)), "She opened the fridge.", "It was empty.")
    assert lines[-1] == f"P(IsNext) = {round(view.p_is_next, 4)}"


@pytest.mark.parametrize("size, printed", [("bert-base", "109,514,298"), ("bert-large", "335,174,458")])
def test_family_snippet(size, printed):
    lines, _ = run(code_snippets.family_code(size))
    assert lines == [printed]


def test_pretrain_snippet_builds_the_preset():
    source = code_snippets.pretrain_code_for("bert-tiny", 0, 0, 0, 0).replace(
        "'bert-base-uncased'", repr(str(embedded.tokenizer_dir())))
    lines, ns = run(source)
    assert lines[0].startswith("4,416,698 parameters, loss ")
    assert 0 < ns["loss"].item() < 20


def test_inputs_are_python_literals():
    """A learner's text with quotes and backslashes stays one string literal."""
    text = 'He said "it\'s \\ fine"\nand left.'
    source = code_snippets.tokenizer_code("bert-base-uncased", text)
    assert ast.parse(source) and repr(text) in source

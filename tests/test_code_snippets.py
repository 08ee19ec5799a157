""""Show the code": every snippet runs (stock transformers, on a tiny model saved to a folder) and prints
the numbers the view shows."""

from __future__ import annotations

import ast
import io

import numpy as np
import pytest
import torch

from bertdemo.explore import (
    attention,
    fill_mask,
    inside,
    inside_layer,
    inside_output,
    masking_lab,
    model_outputs,
    nsp,
    tokens,
)
from bertdemo.models import embedded
from bertdemo.snippets import views as code_snippets
from tests.helpers import explains_the_pooler_report, run_snippet as run

TEXT = "The cat sat on the mat because it was tired."
MASKED = "The cat sat on the [MASK] because it was tired."


def test_tokenizer_snippet(tiny_mlm_dir, tiny_loaded):
    lines, _ = run(code_snippets.tokenizer_code(str(tiny_mlm_dir), TEXT, "It was late."))
    table = tokens.tokenize(tiny_loaded.tokenizer, TEXT, "It was late.")
    assert ast.literal_eval(lines[0]) == [r.token for r in table.rows]
    assert ast.literal_eval(lines[1]) == [r.id for r in table.rows]
    assert ast.literal_eval(lines[2]) == [r.segment for r in table.rows]


@pytest.mark.parametrize("text, pair", [
    (MASKED, ""),
    ("She was un[MASK] about the result.", ""),  # glued to letters: only ## pieces
    ("The [MASK] sat on the [MASK] because it was [mask].", ""),  # several masks, one typed in lower case
    ("A cat[MASK][MASK] on the mat.", ""),  # glued to letters, then glued to that mask
    ("The cat sat on the [MASK]. [SEP] It was un[MASK].", ""),  # a typed [SEP]: a pair
    ("The cat sat on the [MASK].", "It was un[MASK]."),  # the sentence-B box
])
def test_fill_mask_snippet_prints_what_the_view_shows(tiny_mlm_dir, tiny_loaded, text, pair):
    lines, _ = run(code_snippets.fill_mask_code(str(tiny_mlm_dir), text, 5, pair))
    view = fill_mask.predict(tiny_loaded, text, text_pair=pair or None, top_k=5)
    assert len(lines) == len(view.masks)
    for printed, mask in zip(lines, view.masks):
        assert ast.literal_eval(printed) == [(c.token, round(c.prob, 4)) for c in mask.candidates]


def test_a_mask_glued_to_letters_gets_pieces_in_the_snippet(tiny_mlm_dir):
    lines, _ = run(code_snippets.fill_mask_code(str(tiny_mlm_dir), "She was un[MASK] about the [MASK].", 5))
    glued, free = (ast.literal_eval(line) for line in lines)
    assert all(token.startswith("##") for token, _ in glued)
    assert not any(token.startswith("##") for token, _ in free)


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


@pytest.mark.parametrize("fixed_count, seed", [(True, 0), (True, 2), (False, 5)])
def test_masking_snippet_prints_the_views_rates(fixed_count, seed):
    """The engine's own draws (fixed count by default: 18.2 % chosen of 11 tokens, not the collator's 15 %)."""
    text = "I sat on the river bank and watched the water."
    source = code_snippets.masking_code(text, 0.15, 0.8, 0.1, 2000, seed, fixed_count,
                                        tokenizer=str(embedded.tokenizer_dir()))
    lines, _ = run(source)
    printed = lines[0].split()
    measured = {printed[i]: float(printed[i + 1]) for i in range(0, len(printed), 2)}
    settings = masking_lab.MaskSettings(seed=seed, fixed_count=fixed_count)
    view = {r.name: round(r.measured, 3) for r in masking_lab.measure_rates(text, settings, 2000).rates}
    assert measured == view
    if fixed_count:
        assert measured["chosen"] == 0.182  # round(0.15 × 11) = 2 of 11


def test_epochs_snippet_counts_the_views_distinct_masks():
    text = "I sat on the river bank and watched the water."
    lines, _ = run(code_snippets.epochs_code(text, 40, 10, 0, tokenizer=str(embedded.tokenizer_dir())))
    view = masking_lab.compare_epochs(text, masking_lab.MaskSettings(), 40, 10)
    assert lines[0] == f"static: {view.distinct_static} distinct masks; dynamic: {view.distinct_dynamic}"
    assert lines[1] == "each static mask seen 4.0 times"


def test_order_snippet_prints_the_views_cosines(tiny_mlm_dir, tiny_loaded):
    lines, _ = run(code_snippets.order_code(str(tiny_mlm_dir), TEXT))
    order = inside.embeddings(tiny_loaded, TEXT).order
    assert ast.literal_eval(lines[0]) == order.shuffled_tokens
    mean = lambda values: round(sum(values) / len(values), 3)
    assert lines[1] == f"with positions mean cosine {mean(order.cosine_with_positions)}"
    assert lines[2] == f"positions zeroed mean cosine {mean(order.cosine_without_positions)}" == (
        "positions zeroed mean cosine 1.0")


def test_schedule_snippet_prints_the_phases():
    lines, _ = run(code_snippets.schedule_code([(0, 128), (900_000, 512)], 1_000_000))
    assert lines == ["128-token blocks: steps 0 to 899,999", "512-token blocks: steps 900,000 to 999,999",
                     "attention scores per head and layer, 512 vs 128: 16.0 x",
                     "block length at each phase start: [128, 512]"]


SEP_TEXT = "The cat sat on the mat. [SEP] It was [MASK]."


def test_a_typed_sep_starts_sentence_b_in_the_snippets_as_in_the_views(tiny_mlm_dir, tiny_loaded):
    table = tokens.tokenize(tiny_loaded.tokenizer, SEP_TEXT)
    lines, _ = run(code_snippets.tokenizer_code(str(tiny_mlm_dir), SEP_TEXT))
    assert ast.literal_eval(lines[2]) == [r.segment for r in table.rows] and 1 in ast.literal_eval(lines[2])
    _, ns = run(code_snippets.embeddings_code(str(tiny_mlm_dir), SEP_TEXT))
    view = inside.embeddings(tiny_loaded, SEP_TEXT, with_order_test=False)
    assert ns["inputs"]["token_type_ids"][0].tolist() == view.token_type_ids
    np.testing.assert_allclose(ns["normed"][0].numpy(), view.normed, atol=1e-6)
    lines, _ = run(code_snippets.mlm_loss_code(str(tiny_mlm_dir), SEP_TEXT, ["tired"]))
    loss = inside_output.mlm_loss(tiny_loaded, SEP_TEXT, ["tired"])
    assert lines[-1] == f"mean: {round(loss.mean_loss, 4)}  model loss: {round(loss.model_loss, 4)}"


HOSTILE = "x\rimport os; print('PWNED')\n#\u2028print('PWNED')\r\n"


def _only_in_strings(source: str, needle: str) -> None:
    """``needle`` appears in ``source`` inside string literals only: no statement, no comment carries it."""
    import tokenize

    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    assert needle not in ast.unparse(tree)
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    assert not any(needle in c or "\r" in c for c in comments)


@pytest.mark.parametrize("make", [
    lambda: code_snippets.tokenizer_code(HOSTILE, HOSTILE, HOSTILE),
    lambda: code_snippets.fill_mask_code(HOSTILE, HOSTILE, 5, HOSTILE),
    lambda: code_snippets.attention_code(HOSTILE, HOSTILE, HOSTILE),
    lambda: code_snippets.inside_code(HOSTILE, HOSTILE + " [SEP] b", HOSTILE),
    lambda: code_snippets.model_outputs_code(HOSTILE, HOSTILE),
    lambda: code_snippets.order_code(HOSTILE, HOSTILE),
    lambda: code_snippets.masking_code(HOSTILE, tokenizer=HOSTILE),
    lambda: code_snippets.epochs_code(HOSTILE, tokenizer=HOSTILE),
    lambda: code_snippets.nsp_code(HOSTILE, HOSTILE, HOSTILE),
])
def test_a_hostile_model_name_or_text_stays_a_literal(make):
    """A carriage return or newline in a model name never ends a comment or a string: nothing runs."""
    _only_in_strings(make(), "PWNED")


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
    source = code_snippets.pretrain_code_for("bert-tiny", 0, 0, 0, 0, tokenizer=str(embedded.tokenizer_dir()))
    lines, ns = run(source)
    assert lines[0].startswith("4,416,698 parameters, loss ")
    assert 0 < ns["loss"].item() < 20


def test_inputs_are_python_literals():
    """A learner's text with quotes and backslashes stays one string literal."""
    text = 'He said "it\'s \\ fine"\nand left.'
    source = code_snippets.tokenizer_code("bert-base-uncased", text)
    assert ast.parse(source) and repr(text) in source


def test_snippets_loading_the_bare_encoder_explain_the_pooler_report():
    """transformers prints a "newly initialized pooler" report for them, which alarmed a learner unexplained."""
    for source in (code_snippets.attention_code("m", TEXT), code_snippets.model_outputs_code("m", MASKED)):
        note = source.index("'newly initialized'")
        assert note < source.index(".from_pretrained(MODEL", source.index("AutoModel" if "AutoModel.from" in source else "BertModel.from"))


def test_the_word_in_context_snippets_explain_the_pooler_report():
    """Word in context's and Learn step 13's code loaded AutoModel and printed transformers' LOAD REPORT
    ("pooler.dense.weight | MISSING … Consider training on your downstream task") with no word about it."""
    from bertdemo.snippets import words as word_code

    for source in (word_code.word_in_context_code("m", "bank", "the river bank\nthe bank raised its rates"),
                   word_code.neighbours_code("m", "The river bank.")):
        assert explains_the_pooler_report(source)

"""The learning path: every step answered on a tiny model, its numbers checked against the model's own forward."""

from __future__ import annotations

import pytest
import torch

from bertdemo.explore.encoding import without_brackets
from bertdemo.explore.fill_mask import predict
from bertdemo.learn import path as learn_path, steps as learn_steps
from tests.helpers import explains_the_pooler_report

TEXT = "The cat sat on the mat because it was tired."
MASKED = "The cat sat on the mat because it was [MASK]."


@pytest.fixture(scope="module")
def forward(tiny_loaded):
    """The tiny model's own forward on the masked sentence, with every output."""
    enc = tiny_loaded.tokenizer(MASKED, return_tensors="pt")
    labels = torch.full_like(enc["input_ids"], -100)
    mask = enc["input_ids"][0] == tiny_loaded.tokenizer.mask_token_id
    labels[0, mask] = tiny_loaded.tokenizer.convert_tokens_to_ids("tired")
    with torch.no_grad():
        out = tiny_loaded.model(**enc, labels=labels, output_hidden_states=True, output_attentions=True)
    return enc, out


def test_the_steps_in_notebook_order():
    assert len(learn_steps.STEPS) == 22 == len(learn_path.ANSWERS)
    stages = [s.stage for s in learn_steps.STEPS]
    order = ["tokens → embeddings", "embeddings", "attention", "output and loss", "masking and NSP", "pretraining",
             "what the vectors hold", "what pretraining buys", "what it learned about people"]
    assert sorted(set(stages), key=stages.index) == order
    assert learn_steps.neighbour("embeddings", -1) == "embeddings" and learn_steps.neighbour("people", 1) == "people"
    assert learn_steps.neighbour("names", 1) == "why-b" and learn_steps.neighbour("why-b", 1) == "people"
    assert learn_steps.neighbour("order", 1) == "attention"


def test_hide_word(tiny_loaded):
    assert learn_path.hide_word(tiny_loaded.tokenizer, TEXT) == (MASKED, "tired")
    with pytest.raises(ValueError, match="without \\[MASK\\]"):
        learn_path.hide_word(tiny_loaded.tokenizer, MASKED)
    with pytest.raises(ValueError, match="three letters"):
        learn_path.hide_word(tiny_loaded.tokenizer, "A b, c.")


def test_a_word_in_square_brackets_is_the_one_hidden(tiny_loaded):
    """The learner chooses the hidden word: "The [cat] sat ..." hides *cat*; without brackets the last word is."""
    tok = tiny_loaded.tokenizer
    chosen = "The [cat] sat on the mat because it was tired."
    assert learn_path.hide_word(tok, chosen) == ("The [MASK] sat on the mat because it was tired.", "cat")
    assert learn_path.hide_word_before_context(tok, "The [mat] was tired.") == ("The [MASK] was tired.", "mat")
    assert without_brackets(chosen) == TEXT and without_brackets("[CLS] a [SEP]") == "[CLS] a [SEP]"
    with pytest.raises(ValueError, match="square brackets: The \\[dog\\] barked"):
        learn_path.hide_word(tok, MASKED)  # a typed [MASK] says how to choose the word instead
    with pytest.raises(ValueError, match="only one word in square brackets, the one to hide; this sentence has 2: \\[cat\\], \\[mat\\]\\."):
        learn_path.hide_word(tok, "The [cat] sat on the [mat].")
    pieces = tok.tokenize("unaffable")
    assert len(pieces) > 1  # the tiny vocabulary splits it
    with pytest.raises(ValueError, match=f"holds \"unaffable\" as {len(pieces)} pieces"):
        learn_path.hide_word(tok, "An [unaffable] cat.")


def test_the_steps_read_the_chosen_word_and_the_others_the_plain_sentence(tiny_loaded):
    chosen = "The cat sat on the [mat] because it was tired."
    masked = "The cat sat on the [MASK] because it was tired."
    loss = learn_path.answer(tiny_loaded, "loss", chosen)
    enc = tiny_loaded.tokenizer(masked, return_tensors="pt")
    labels = torch.full_like(enc["input_ids"], -100)
    labels[enc["input_ids"] == tiny_loaded.tokenizer.mask_token_id] = tiny_loaded.tokenizer.convert_tokens_to_ids("mat")
    with torch.no_grad():
        own = float(tiny_loaded.model(**enc, labels=labels).loss)
    assert (loss.numbers["word"], loss.numbers["masked_text"]) == ("mat", masked)
    assert loss.numbers["model_loss"] == pytest.approx(own, abs=1e-5)
    assert (loss.tab, loss.tab_text, loss.tab_words) == ("inside", masked, "mat")  # Keep exploring: the same blank
    tokens = learn_path.answer(tiny_loaded, "embeddings", chosen)
    assert tokens.numbers["tokens"] == tiny_loaded.tokenizer.tokenize(TEXT, add_special_tokens=True)  # no brackets
    assert (tokens.tab_text, tokens.tab_words) == (masked, "mat")
    assert learn_path.answer(tiny_loaded, "attention", chosen).tab_text == TEXT


def test_the_steps_that_read_the_chosen_word_are_the_steps_that_hide_one():
    """Only the steps that hide a word get the sentence with its brackets; the others read it plain."""
    import inspect

    hiding = {key for key, fn in learn_path.ANSWERS.items() if "hide_word" in inspect.getsource(fn)}
    assert hiding == learn_path.HIDES_A_WORD


def test_embeddings_and_order(tiny_loaded, forward):
    a = learn_path.answer(tiny_loaded, "embeddings", TEXT)
    assert a.numbers["tokens"] == tiny_loaded.tokenizer.tokenize(TEXT, add_special_tokens=True)
    assert a.numbers["max_abs_diff"] < 1e-5 and (a.tab, a.tab_text, a.tab_words) == ("inside", MASKED, "tired")
    o = learn_path.answer(tiny_loaded, "order", TEXT).numbers
    assert o["mean_cosine_without_positions"] == pytest.approx(1.0, abs=1e-5)
    assert o["mean_cosine_with_positions"] < 0.999


def test_attention_row_is_the_models_own(tiny_loaded):
    a = learn_path.answer(tiny_loaded, "attention", TEXT)
    enc = tiny_loaded.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        row = tiny_loaded.model(**enc, output_attentions=True).attentions[0][0, 0, 1]
    assert a.numbers["probs"] == pytest.approx(row.tolist(), abs=1e-6)
    assert a.numbers["top_prob"] == pytest.approx(float(row.max()), abs=1e-6)
    assert a.tab == "attention" and a.tab_text == TEXT and a.tab_words == ""


def test_outputs_shapes_are_the_forwards(tiny_loaded, forward):
    enc, out = forward
    n = a_len = enc["input_ids"].shape[1]
    a = learn_path.answer(tiny_loaded, "outputs", TEXT).numbers
    assert a["logits"] == tuple(out.logits.shape) == (1, n, 30522)
    assert a["hidden_states"] == [tuple(h.shape) for h in out.hidden_states] == [(1, a_len, 32)] * 3
    assert a["attentions"] == [tuple(x.shape) for x in out.attentions] == [(1, 2, n, n)] * 2
    assert a["last_hidden_state"] == (1, n, 32) and a["pooler_output"] == (1, 32)
    pos = int((enc["input_ids"][0] == tiny_loaded.tokenizer.mask_token_id).nonzero())
    assert a["top_token"] == tiny_loaded.tokenizer.convert_ids_to_tokens(int(out.logits[0, pos].argmax()))
    assert a["pooler_in_checkpoint"] is False  # saved as a masked-LM: no pooler


def test_loss_is_the_models_own(tiny_loaded, forward):
    _, out = forward
    a = learn_path.answer(tiny_loaded, "loss", TEXT).numbers
    assert a["model_loss"] == pytest.approx(float(out.loss), abs=1e-5)
    assert a["mean_loss"] == pytest.approx(float(out.loss), abs=1e-5) and a["word"] == "tired"


def test_masking_steps(tiny_loaded):
    rates = learn_path.answer(tiny_loaded, "rates", TEXT).numbers
    assert rates["[MASK]"] == pytest.approx(0.8, abs=0.05) and rates["random"] == pytest.approx(0.1, abs=0.04)
    masks = learn_path.answer(tiny_loaded, "masks", TEXT)
    assert masks.numbers["distinct_static"] == 10 and masks.numbers["times_each_mask_seen"] == 4
    assert "two for-loops" in masks.answer
    pair = learn_path.answer(tiny_loaded, "nsp", TEXT)
    assert pair.numbers["nsp_available"] is False and "NSP run" in pair.answer
    assert pair.numbers["sentence_a"].endswith(".") and pair.numbers["sentence_b"].endswith(".")


def test_the_nsp_step_and_the_default_pairs_show_an_isnext_pair(tiny_loaded):
    """By default a learner never saw an IsNext pair (seed 0: four NotNext; the step's pair NotNext too)."""
    from bertdemo.explore import nsp

    pair = learn_path.answer(tiny_loaded, "nsp", TEXT)
    assert pair.numbers["label"] == "IsNext" and "a **NotNext** pair" in pair.answer
    default = nsp.build_pairs("", 64, 4, learn_path.NSP_SEED)  # the Masking tab's defaults
    assert sorted(p.label_name for p in default.pairs) == ["IsNext", "IsNext", "NotNext", "NotNext"]


def test_pretraining_steps(tiny_loaded):
    family = learn_path.answer(tiny_loaded, "family", TEXT).numbers
    assert family["bert-base"] == 109_514_298 and family["bert-large"] == 335_174_458
    unique = sum(p.numel() for p in {id(p): p for p in tiny_loaded.model.parameters()}.values())
    assert family["model"] == family["model_by_formula"] == unique
    probe = learn_path.answer(tiny_loaded, "no-positions", TEXT).numbers
    assert probe["top"] == predict(tiny_loaded, MASKED).masks[0].candidates[0].token
    assert probe["order_blind"] is False
    length = learn_path.answer(tiny_loaded, "length", TEXT).numbers
    assert length["phases"] == [(0, 128), (900_000, 512)] and length["attention_cost_ratio"] == 16
    tiny = learn_path.answer(tiny_loaded, "tiny", TEXT)
    assert tiny.numbers["parameters"] == 4_416_698 and tiny.numbers["heads"] == 2
    assert "not reachable" in tiny.answer and "embedded Wikipedia" in tiny.answer


def test_the_steps_loading_the_bare_encoder_explain_the_pooler_report(tiny_loaded, tiny_mlm_dir):
    """Steps 13 and 18 load AutoModel: transformers prints "pooler.dense.weight | MISSING … newly initialized"
    for a masked-LM checkpoint, which the code did not explain (steps 4 and 15 do)."""
    for key in ("static-dynamic", "layers"):
        source = learn_path.answer(tiny_loaded, key, TEXT, model_ref=str(tiny_mlm_dir)).code
        assert "AutoModel.from_pretrained(MODEL" in source and explains_the_pooler_report(source), key


def test_bad_requests_are_refused(tiny_loaded):
    with pytest.raises(ValueError, match="Unknown step"):
        learn_path.answer(tiny_loaded, "nope", TEXT)
    with pytest.raises(ValueError, match="Type a sentence"):
        learn_path.answer(tiny_loaded, "embeddings", "  ")


def _printed(source: str) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<snippet>", "exec"), {})  # noqa: S102 - our own generated code
    return out.getvalue().splitlines()


def test_each_step_shows_its_own_code(tiny_loaded, tiny_mlm_dir):
    """Steps 2, 7 and 11 showed another step's code: each prints its own step's numbers."""
    from bertdemo.models import embedded

    codes = {key: learn_path.answer(tiny_loaded, key, TEXT, model_ref=str(tiny_mlm_dir),
                                    tokenizer_ref=str(embedded.tokenizer_dir())) for key in learn_steps.STEP_KEYS}
    assert len({a.code for a in codes.values()}) == len(learn_steps.STEP_KEYS) == 22  # no two steps share their code
    for key in ("rates", "masks", "no-positions", "tiny"):  # the engine's tokenizer loads offline
        assert repr(str(embedded.tokenizer_dir())) in codes[key].code and "'bert-base-uncased'" not in codes[key].code
    order = codes["order"]
    lines = _printed(order.code)
    assert lines[2] == f"positions zeroed mean cosine {round(order.numbers['mean_cosine_without_positions'], 3)}"
    masks = codes["masks"]
    assert _printed(masks.code)[0] == (f"static: {masks.numbers['distinct_static']} distinct masks; "
                                       f"dynamic: {masks.numbers['distinct_dynamic']}")
    length = codes["length"]
    assert _printed(length.code)[:2] == ["128-token blocks: steps 0 to 899,999", "512-token blocks: steps 900,000 to 999,999"]
    rates = codes["rates"]
    assert _printed(rates.code)[0].startswith(f"chosen {round(rates.numbers['chosen'], 3)} ")


def test_step_6_says_why_the_chosen_rate_is_not_15_percent(tiny_loaded):
    a = learn_path.answer(tiny_loaded, "rates", "I sat on the river bank and watched the water.")
    assert "18.2 % are *chosen*" in a.answer.replace("18.2%", "18.2 %")
    assert "k = round(0.15 × 11) = 2" in a.answer and "2 of 11 is 18.2%" in a.answer


def test_a_long_sentence_is_refused_in_the_learning_paths_words(tiny_loaded):
    with pytest.raises(ValueError, match="the learning path shows at most"):
        learn_path.answer(tiny_loaded, "embeddings", "word " * 300)


def test_the_cls_step_reads_the_models_own_cls_vector_and_its_code_prints_the_same(tiny_loaded, tiny_mlm_dir):
    import contextlib
    import io

    import torch

    text = "The violin is a string instrument."
    a = learn_path.answer(tiny_loaded, "cls", text, model_ref=str(tiny_mlm_dir))
    enc = tiny_loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        h = tiny_loaded.model.bert(**enc).last_hidden_state[0]
    assert a.numbers["hidden"] == 32 and a.numbers["tokens"] == enc["input_ids"].shape[1]
    assert a.numbers["cls_mean_cosine"] == pytest.approx(float(torch.cosine_similarity(h[0], h[1:-1].mean(0), dim=0)), abs=1e-6)
    assert a.numbers["pooler_parameters"] == 32 * 32 + 32 and a.numbers["classifier_parameters"] == 32 * 11 + 11
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(a.code, {})  # noqa: S102 - the page's code, run as a learner would
    shape, cosine, _logits = out.getvalue().split(") ")[0] + ")", *out.getvalue().split(") ")[1].split(" ", 1)
    assert shape == "(1, 32)" and float(cosine) == round(a.numbers["cls_mean_cosine"], 2)
    assert a.tab == "finetune"


def test_the_fine_tuning_steps_name_their_recipe_controls_and_code(tiny_loaded, tiny_mlm_dir):
    tune = learn_path.answer(tiny_loaded, "finetune", "A sentence.", model_ref=str(tiny_mlm_dir))
    assert tune.numbers["learning_rates"] == [5e-5, 3e-5, 2e-5] and tune.numbers["batch_sizes"] == [16, 32]
    assert tune.numbers["new_parameters"] == 32 * 32 + 32 + 32 * 11 + 11
    assert compile(tune.code, "finetune", "exec") and repr(str(tiny_mlm_dir)) in tune.code
    from bertdemo.finetune.reference import learning_rate_choice_text

    assert learning_rate_choice_text() in tune.answer  # the Fine-tune tab's words and figures (one source)
    why = learn_path.answer(tiny_loaded, "why-pretrain", "A sentence.", model_ref=str(tiny_mlm_dir))
    assert min(why.numbers["embedded_accuracy"]) - max(why.numbers["random_accuracy"]) >= 0.2
    assert "read the validation and test sentences, without labels, while pretraining" in why.answer  # what it saw
    assert "sentence-embedding model (all-MiniLM-L6-v2)" in why.answer
    assert "BertForSequenceClassification(model.config)" in why.code  # the control: random weights
    layers = learn_path.answer(tiny_loaded, "layers", "The cat sat on the warm mat.", model_ref=str(tiny_mlm_dir))
    assert layers.numbers["hidden_states"] == 3 and "Jawahar" in layers.answer
    assert compile(layers.code, "layers", "exec")

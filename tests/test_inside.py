"""Inside BERT: every recomputed number against the model's own forward, on tiny models and the embedded one."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertForPreTraining, DistilBertConfig, DistilBertForMaskedLM

from bertdemo.explore import bert_math, inside, inside_anatomy, inside_layer, inside_output
from bertdemo.models import embedded
from bertdemo.models.store import LoadedModel, ModelStore
from bertdemo.viz import inside as draw
from tests.helpers import tiny_bert_config

SENTENCE = "The cat sat on the [MASK] and the dog barked."
ATOL = 1e-5


@pytest.fixture(scope="module")
def emb_loaded():
    assert embedded.has_mlm_assets(), "the embedded masked-LM's tracked assets are missing: a broken checkout"
    return ModelStore(default=embedded.EMBEDDED_MLM_NAME, device="cpu").get(embedded.EMBEDDED_MLM_NAME)


@pytest.fixture(params=["tiny", "embedded"])
def loaded(request, tiny_loaded, emb_loaded):
    return tiny_loaded if request.param == "tiny" else emb_loaded


def own_forward(loaded: LoadedModel, text: str):
    """``model(...)`` on ``text`` as the views run a forward (one intra-op thread: two threads sum in another
    order, a few units in the last place apart)."""
    enc = inside.encode_for_inside(loaded, text)
    with inside.computing():
        out = loaded.model(**enc.tensors, output_hidden_states=True, output_attentions=True)
    return enc, out


def test_the_shared_trace_is_the_models_own_forward(loaded):
    """The one forward every view checks against: the encoder's states and attentions as ``model(...)`` gives
    them, and the logits at each [MASK] (the head run at those rows alone) as ``model(...).logits`` holds them."""
    text = "The [MASK] sat on the [MASK]."
    own = inside.trace(loaded, text)
    enc, out = own_forward(loaded, text)
    masks = [i for i, t in enumerate(enc.input_ids) if t == loaded.tokenizer.mask_token_id]
    logits = inside.mask_logits(loaded, text)
    assert sorted(logits) == masks == [2, 6]
    for pos in masks:
        assert logits[pos].shape == (loaded.model.config.vocab_size,)
        np.testing.assert_allclose(logits[pos].numpy(), out.logits[0, pos].numpy(), atol=ATOL)
    assert len(own.hidden_states) == len(out.hidden_states) and len(own.attentions) == len(out.attentions)
    for mine, theirs in zip(own.hidden_states + own.attentions, out.hidden_states + out.attentions):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), atol=1e-6)
    assert inside.trace(loaded, text) is own  # remembered: the views of one sentence share it
    assert inside.mask_logits(loaded, text) is logits


# --- 1. embeddings -------------------------------------------------------------------------


def test_embeddings_match_hidden_states_0(loaded):
    r = inside.embeddings(loaded, SENTENCE)
    enc, out = own_forward(loaded, SENTENCE)
    s, d = len(enc.tokens), loaded.model.config.hidden_size
    assert r.shape == (s, d) and r.tokens == enc.tokens and r.tokens[0] == "[CLS]"
    np.testing.assert_allclose(r.total, r.word + r.position + r.segment, atol=1e-6)
    np.testing.assert_allclose(r.normed, out.hidden_states[0][0].numpy(), atol=ATOL)
    emb = loaded.model.bert.embeddings
    np.testing.assert_allclose(r.word[1], emb.word_embeddings.weight[enc.input_ids[1]].detach().numpy())
    np.testing.assert_allclose(r.position[3], emb.position_embeddings.weight[3].detach().numpy())
    assert r.max_abs_diff < ATOL
    p = r.position_cosine.shape[0]
    assert p == min(inside.POSITIONS_SHOWN, r.max_positions)
    np.testing.assert_allclose(np.diag(r.position_cosine), 1.0, atol=1e-5)
    np.testing.assert_allclose(r.position_cosine, r.position_cosine.T, atol=1e-6)


def test_sentence_pair_gets_segment_1(tiny_loaded):
    r = inside.embeddings(tiny_loaded, "She opened the door. [SEP] Then she walked in.")
    assert r.tokens.count("[SEP]") == 2 and r.token_type_ids[-1] == 1 and r.token_type_ids[0] == 0
    seg = tiny_loaded.model.bert.embeddings.token_type_embeddings.weight.detach().numpy()
    np.testing.assert_allclose(r.segment[-1], seg[1])


def test_order_test_without_positions_sees_a_bag(loaded):
    order = inside.embeddings(loaded, "the quick brown fox jumps over the lazy dog").order
    assert sorted(order.tokens) == sorted(order.shuffled_tokens) and order.tokens != order.shuffled_tokens
    assert order.shuffled_tokens[0] == "[CLS]" and order.shuffled_tokens[-1] == "[SEP]"
    assert [order.tokens[i] for i in order.permutation] == order.shuffled_tokens
    assert order.input_bag_diff_without_positions < 1e-6
    assert order.max_diff_without_positions < 1e-4
    np.testing.assert_allclose(order.cosine_without_positions, 1.0, atol=1e-5)
    assert order.max_diff_with_positions > 1e-3  # with positions, order changes every state
    assert min(order.cosine_with_positions) < 0.9999


def test_run_encoder_with_positions_is_the_model(loaded):
    enc, out = own_forward(loaded, SENTENCE)
    t = enc.tensors
    with torch.inference_mode():
        emb = inside.embed_parts(loaded.model.bert, t["input_ids"], t["token_type_ids"])["normed"]
        last = inside.run_encoder(loaded.model.bert, emb, t["attention_mask"])
    torch.testing.assert_close(last, out.hidden_states[-1], atol=1e-4, rtol=1e-4)


# --- 2. one layer, one head ----------------------------------------------------------------


def test_every_layer_and_head_matches_the_model(tiny_loaded):
    _enc, out = own_forward(tiny_loaded, SENTENCE)
    cfg = tiny_loaded.model.config
    for layer in range(cfg.num_hidden_layers):
        for head in range(cfg.num_attention_heads):
            r = inside_layer.layer_step(tiny_loaded, SENTENCE, layer, head, 2)
            own = out.attentions[layer][0, head].numpy()  # (S, S)
            np.testing.assert_allclose(r.probs, own[2], atol=ATOL)
            assert r.max_diff_attention < ATOL and r.max_diff_output < 1e-4
            steps = {s.formula: s for s in r.steps}
            np.testing.assert_allclose(steps["softmax"].matrix, own, atol=ATOL)
            np.testing.assert_allclose(r.steps[0].matrix, out.hidden_states[layer][0].numpy(), atol=ATOL)
            np.testing.assert_allclose(r.steps[-1].matrix, out.hidden_states[layer + 1][0].numpy(), atol=1e-4)


def test_layer_step_arithmetic(loaded):
    r = inside_layer.layer_step(loaded, SENTENCE, 1, 1, 3)
    s, dh = len(r.tokens), r.head_dim
    assert dh * r.num_heads == r.hidden_size
    np.testing.assert_allclose(r.products.sum(-1), r.scores, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r.scaled, r.scores / math.sqrt(dh), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r.mask, 0.0)  # one sentence, no padding
    e = np.exp(r.scaled - r.scaled.max())
    np.testing.assert_allclose(r.probs, e / e.sum(), atol=1e-6)
    steps = {s.formula: s for s in r.steps}
    v = steps["V = X·W_V + b_V"].matrix
    np.testing.assert_allclose(r.context, r.probs @ v, atol=1e-5)
    assert steps["Q·Kᵀ"].shape == (r.num_heads, s, s)
    assert steps["concat(head_1 … head_H)"].shape == (s, r.hidden_size)
    np.testing.assert_allclose(steps["concat(head_1 … head_H)"].matrix[3, dh:2 * dh], r.context, atol=1e-6)
    assert r.steps[-1].shape == (s, r.hidden_size) and len(r.steps) == 15


def test_layer_steps_honour_the_padding_mask(tiny_loaded):
    """Two sentences of different lengths in one batch: padding is masked exactly as the model does."""
    tok, model = tiny_loaded.tokenizer, tiny_loaded.model
    enc = tok(["a short one", "a much longer sentence than the first one"], padding=True, return_tensors="pt")
    with torch.inference_mode():
        out = model.bert(**enc, output_hidden_states=True)
        mask = bert_math.additive_mask(enc["attention_mask"])
        steps = bert_math.layer_steps(model.bert.encoder.layer[0], out.hidden_states[0], mask)
    torch.testing.assert_close(steps["output"], out.hidden_states[1], atol=1e-4, rtol=1e-4)
    pad = enc["attention_mask"][0] == 0
    assert pad.any() and float(steps["probs"][0, :, :, pad].max()) == 0.0


def test_layer_step_rejects_out_of_range(tiny_loaded):
    with pytest.raises(ValueError, match="Layer must be 0 to 1"):
        inside_layer.layer_step(tiny_loaded, SENTENCE, 2, 0, 0)
    with pytest.raises(ValueError, match="Head must be 0 to 1"):
        inside_layer.layer_step(tiny_loaded, SENTENCE, 0, 5, 0)
    with pytest.raises(ValueError, match="query token"):
        inside_layer.layer_step(tiny_loaded, SENTENCE, 0, 0, 99)


def test_input_is_capped_with_a_clear_message(tiny_loaded):
    with pytest.raises(ValueError, match=f"at most {inside.MAX_INSIDE_TOKENS}"):
        inside.embeddings(tiny_loaded, "word " * 80)
    with pytest.raises(ValueError, match="Enter a sentence"):
        inside.embeddings(tiny_loaded, "  ")


# --- 3. logit lens ---------------------------------------------------------------------------


def test_logit_lens_last_layer_is_the_model(loaded):
    r = inside_output.logit_lens(loaded, SENTENCE, 1, 5)
    enc, out = own_forward(loaded, SENTENCE)
    n_layers = loaded.model.config.num_hidden_layers
    assert len(r.layers) == n_layers + 1 and r.position == enc.tokens.index("[MASK]")
    probs = out.logits[0, r.position].softmax(-1)
    top = probs.topk(5)
    assert [t for t, _ in r.layers[-1].top] == loaded.tokenizer.convert_ids_to_tokens(top.indices.tolist())
    np.testing.assert_allclose([p for _, p in r.layers[-1].top], top.values.numpy(), atol=1e-5)
    assert r.max_abs_diff_logits < 1e-4 and r.final_word == r.layers[-1].top[0][0]
    assert abs(r.layers[-1].cosine_to_final - 1) < 1e-5
    # the lens at layer l is the head applied to hidden_states[l]
    with torch.inference_mode():
        l1 = loaded.model.cls(out.hidden_states[1][0, r.position]).softmax(-1)
    assert abs(r.layers[1].top[0][1] - float(l1.max())) < 1e-5


def test_logit_lens_needs_a_mask(tiny_loaded):
    with pytest.raises(ValueError, match="No mask found"):
        inside_output.logit_lens(tiny_loaded, "no mask here", 1, 5)
    with pytest.raises(ValueError, match="Mask #3 does not exist"):
        inside_output.logit_lens(tiny_loaded, SENTENCE, 3, 5)


# --- 4. the loss -----------------------------------------------------------------------------


def test_mlm_loss_equals_the_models_own_loss(loaded):
    text = "The cat sat on the [MASK] and the [MASK] barked."
    r = inside_output.mlm_loss(loaded, text, "mat, dog")
    assert [m.word for m in r.masks] == ["mat", "dog"]
    enc, out = own_forward(loaded, text)
    ids = loaded.tokenizer.convert_tokens_to_ids(["mat", "dog"])
    probs = out.logits[0, [m.position for m in r.masks]].softmax(-1)
    np.testing.assert_allclose([m.prob for m in r.masks], probs[[0, 1], ids].numpy(), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose([m.neg_log_prob for m in r.masks], [-math.log(m.prob) for m in r.masks], rtol=1e-4)
    assert r.mean_loss == pytest.approx(np.mean([m.neg_log_prob for m in r.masks]), rel=1e-6)
    assert r.mean_loss == pytest.approx(r.model_loss, abs=1e-4)
    labels = torch.full_like(enc.tensors["input_ids"], -100)
    labels[0, [m.position for m in r.masks]] = torch.tensor(ids)
    with torch.inference_mode():
        assert r.model_loss == pytest.approx(float(loaded.model(**enc.tensors, labels=labels).loss), abs=1e-6)
    assert r.from_weights and r.tied and r.max_abs_diff_logits < 1e-4
    assert r.vocab_size == 30522 and round(r.uniform_loss, 3) == 10.326 == round(math.log(30522), 3)


def test_plain_sentence_with_words_to_mask(tiny_loaded):
    r = inside_output.mlm_loss(tiny_loaded, "The dog chased the cat.", "cat, dog")
    assert r.text == "The [MASK] chased the [MASK]." and [m.word for m in r.masks] == ["dog", "cat"]
    assert r.mean_loss == pytest.approx(r.model_loss, abs=1e-4)
    assert inside_output.mask_words("the cat and the cat", ["cat", "cat"], "[MASK]") == (
        "the [MASK] and the [MASK]", ["cat", "cat"])


@pytest.mark.parametrize("text, words, message", [
    ("The [MASK] sat.", "cat, dog", "1 mask(s) but 2 right word(s)"),
    ("The [MASK] sat.", "", "Give the right words"),
    ("The [MASK] sat.", "tokenization", "pieces"),
    ("The cat sat.", "dog", "not a word of the sentence"),
])
def test_mlm_loss_bad_input(tiny_loaded, text, words, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        inside_output.mlm_loss(tiny_loaded, text, words)


# --- 5. anatomy -------------------------------------------------------------------------------


def test_bert_base_breakdown_totals_109_514_298():
    model = BertForMaskedLM(BertConfig())
    r = inside_anatomy.param_breakdown(model)
    assert r.total == r.numel_total == sum(p.numel() for p in model.parameters()) == 109_514_298
    groups = r.groups()
    assert groups["embeddings"] == 30522 * 768 + 512 * 768 + 2 * 768 + 2 * 768 == 23_837_184
    assert all(groups[f"layer {i}"] == 7_087_872 for i in range(12))
    assert groups["MLM head"] == 768 * 768 + 768 + 2 * 768 + 30522 == 622_650
    assert r.tied_decoder and r.layers_identical()
    names = {(c.group, c.name): c.count for c in r.components}
    assert names[("layer 0", "attention Q (query)")] == 768 * 768 + 768
    assert names[("layer 5", "feed-forward up (D → I)")] == 768 * 3072 + 3072
    assert ("MLM head", "decoder weight (not tied)") not in names  # tied: counted once, as word embeddings
    md = draw.anatomy_markdown(r)
    assert "109,514,298" in md and "each of the 12 layers" in md


def test_breakdown_of_loaded_models(loaded):
    r = inside_anatomy.param_breakdown(loaded.model, loaded.name)
    assert r.total == sum(p.numel() for p in loaded.model.parameters())
    assert "BertForMaskedLM" in r.architecture and r.model_name == loaded.name
    assert {"embeddings", "layer 0", "MLM head"} <= set(r.groups())


def test_pretrain_checkpoint_works(tmp_path, tokenizer):
    """A Pretrain-tab checkpoint (BertForPreTraining saved) loads as a masked-LM and every view answers."""
    torch.manual_seed(1)
    BertForPreTraining(tiny_bert_config()).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = ModelStore(default=str(tmp_path), device="cpu").get(str(tmp_path))
    assert inside.embeddings(loaded, SENTENCE).max_abs_diff < ATOL
    assert inside_layer.layer_step(loaded, SENTENCE, 1, 0, 1).max_diff_output < 1e-4
    r = inside_output.mlm_loss(loaded, SENTENCE, "mat")
    assert r.mean_loss == pytest.approx(r.model_loss, abs=1e-4)
    assert inside_anatomy.param_breakdown(loaded.model).total == sum(p.numel() for p in loaded.model.parameters())


def test_other_architectures(tokenizer):
    torch.manual_seed(0)
    model = DistilBertForMaskedLM(DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=2,
                                                   hidden_dim=64, max_position_embeddings=64)).eval()
    loaded = LoadedModel("tiny-distil", "local", "", tokenizer, model, torch.device("cpu"), True)
    with pytest.raises(ValueError, match="distilbert model"):
        inside.embeddings(loaded, SENTENCE)
    with pytest.raises(ValueError, match="step-by-step views follow BERT"):
        inside_layer.layer_step(loaded, SENTENCE, 0, 0, 0)
    r = inside_output.mlm_loss(loaded, SENTENCE, "mat")  # from the model's logits
    assert not r.from_weights and r.mean_loss == pytest.approx(r.model_loss, abs=1e-4)
    b = inside_anatomy.param_breakdown(model, "tiny-distil")
    assert b.total == sum(p.numel() for p in model.parameters())


def test_no_trained_head_is_refused(tiny_loaded):
    import dataclasses

    headless = dataclasses.replace(tiny_loaded, has_mlm_head=False)
    with pytest.raises(ValueError, match="no trained masked-LM head"):
        inside_output.mlm_loss(headless, SENTENCE, "mat")
    assert inside.embeddings(headless, SENTENCE).max_abs_diff < ATOL  # the encoder views still work


# --- drawing ----------------------------------------------------------------------------------


def test_every_figure_is_what_plotly_s_validation_makes_of_it(emb_loaded):
    """The figures are built without plotly's validation (viz/style.py unchecked_figure): validated again, each
    comes out the same, so every property is one plotly knows, in the form its validation gives it."""
    from tests.helpers import assert_as_validated

    e = inside.embeddings(emb_loaded, SENTENCE)
    layer = inside_layer.layer_step(emb_loaded, SENTENCE, 2, 3, 6)
    lens = inside_output.logit_lens(emb_loaded, SENTENCE, 1, 5)
    loss = inside_output.mlm_loss(emb_loaded, SENTENCE, "mat")
    for fig in (draw.embeddings_figure(e), draw.layer_figure(layer), draw.neuron_figure(layer),
                draw.lens_figure(lens), draw.loss_figure(loss), draw.position_cosine_figure(e)):
        assert_as_validated(fig)


def test_figures_and_tables_name_the_model(emb_loaded):
    e = inside.embeddings(emb_loaded, SENTENCE)
    layer = inside_layer.layer_step(emb_loaded, SENTENCE, 2, 3, 6)
    lens = inside_output.logit_lens(emb_loaded, SENTENCE, 1, 5)
    loss = inside_output.mlm_loss(emb_loaded, SENTENCE, "mat")
    name = emb_loaded.name
    for md in (draw.embeddings_markdown(e), draw.order_markdown(e.order, name), draw.layer_markdown(layer),
               draw.lens_markdown(lens), draw.loss_markdown(loss)):
        assert name in md
    for fig in (draw.embeddings_figure(e), draw.layer_figure(layer), draw.neuron_figure(layer),
                draw.lens_figure(lens), draw.loss_figure(loss), draw.position_cosine_figure(e)):
        assert fig.to_plotly_json()["data"]
    steps = draw.layer_figure(layer)
    titles = [a.text for a in steps.layout.annotations]
    assert any("(12×" in t for t in titles) and any(f"first {draw.DIMS_SHOWN} of 1536 dims" in t for t in titles)
    # each title line fits its panel (at 1280 px "residual + LayerNorm = hidden_states[1] (9×384, first 64 of 384
    # dims)", 68 characters, ran 28 px past the figure's right edge)
    longest = max((line for t in titles for line in t.split("<br>")), key=len)
    assert len(longest) < draw.TITLE_LINE_CHARS, longest
    assert "10.33" in draw.loss_markdown(loss) and "model's own loss" in draw.loss_markdown(loss)
    assert max(len(t.z) for t in draw.embeddings_figure(e).data) == len(e.tokens)
    assert all(np.asarray(t.z).shape[1] <= draw.DIMS_SHOWN for t in draw.embeddings_figure(e).data)

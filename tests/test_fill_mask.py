"""Masked-word prediction: sparse head equals the full head, targets, PLL, whole words, and clear refusals."""

import math

import pytest
import torch

from bertdemo.explore import fill_mask, pll
from bertdemo.explore.messages import no_head_message
from bertdemo.viz.bars import filled_markdown


def _full_probs(loaded, text):
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        logits = loaded.model(**enc).logits[0]
    positions = (enc["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero().flatten()
    return logits[positions].softmax(-1)


def _continuation(loaded):
    return [i for token, i in loaded.tokenizer.get_vocab().items() if token.startswith("##")]


def _word_start_only(loaded, probs):
    """`probs` with every ``##`` continuation piece and every special token set to 0 (what a word-start mask may
    offer)."""
    probs = probs.clone()
    probs[..., _continuation(loaded)] = 0.0
    probs[..., loaded.tokenizer.all_special_ids] = 0.0
    return probs


def test_a_special_token_is_never_offered_for_a_blank(tiny_loaded):
    """A model that puts most of its probability on [SEP] (a left-to-right model's usual next word at a sentence's
    end) still fills the blank with words: [SEP], [CLS], [PAD], [MASK] and [UNK] are no words."""
    sep = tiny_loaded.tokenizer.sep_token_id
    with torch.no_grad():
        tiny_loaded.model.cls.predictions.decoder.bias[sep] += 50.0  # [SEP] now takes nearly all the mass
    try:
        result = fill_mask.predict(tiny_loaded, "Nice to [MASK] you.", top_k=5)
    finally:
        with torch.no_grad():
            tiny_loaded.model.cls.predictions.decoder.bias[sep] -= 50.0
    offered = [c.token for c in result.masks[0].candidates]
    assert len(offered) == 5 and not set(offered) & set(tiny_loaded.tokenizer.all_special_tokens)


def _direct_pll(loaded, text_with_word: str, start: int, n_pieces: int) -> float:
    """PLL computed the plain way: mask each piece (token positions start..start+n) in turn, full model."""
    enc = loaded.tokenizer(text_with_word, return_tensors="pt")
    total = 0.0
    for j in range(start, start + n_pieces):
        ids = enc["input_ids"].clone()
        target = int(ids[0, j])
        ids[0, j] = loaded.tokenizer.mask_token_id
        with torch.inference_mode():
            logits = loaded.model(input_ids=ids, attention_mask=enc["attention_mask"],
                                  token_type_ids=enc["token_type_ids"]).logits[0, j]
        total += float(logits.log_softmax(-1)[target])
    return total


def test_sparse_head_matches_full_model(tiny_loaded):
    text = "the [MASK] sat on the [MASK] ."
    result = fill_mask.predict(tiny_loaded, text, top_k=7)
    full = _word_start_only(tiny_loaded, _full_probs(tiny_loaded, text))
    assert len(result.masks) == 2
    for mask, probs in zip(result.masks, full):
        top = probs.topk(7)
        assert [c.id for c in mask.candidates] == top.indices.tolist()
        assert [c.prob for c in mask.candidates] == pytest.approx(top.values.tolist(), rel=1e-4, abs=1e-6)
        assert all(a.prob >= b.prob for a, b in zip(mask.candidates, mask.candidates[1:]))


def test_mask_spelling_and_filled_text(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "Nice to [mask] you.", top_k=3)
    assert result.text == "Nice to [MASK] you."
    assert filled_markdown(result) == f"Nice to **{result.masks[0].candidates[0].text}** you."


def test_sentence_b_is_segment_one(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "She opened the door.", "Then she [MASK] in.", top_k=2)
    enc = tiny_loaded.tokenizer("She opened the door.", "Then she [MASK] in.")
    assert enc["token_type_ids"][result.masks[0].position] == 1
    assert " / " in filled_markdown(result)


def test_targets_scored_or_refused(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "Nice to [MASK] you.", top_k=1, targets=["meet", "tokenization", "😀"])
    probs = _word_start_only(tiny_loaded, _full_probs(tiny_loaded, "Nice to [MASK] you.")[0])
    meet, multi, unknown = result.masks[0].targets
    assert meet.prob == pytest.approx(float(probs[3113]), rel=1e-4)
    assert meet.rank == int((probs > probs[3113]).sum()) + 1
    # "tokenization" = token ##ization: two pieces in place of the mask, scored by PLL
    assert multi.pieces == ["token", "##ization"] and multi.rank is None
    assert "pseudo-log-likelihood" in multi.message
    direct = _direct_pll(tiny_loaded, "Nice to tokenization you.", 3, 2)
    assert math.log(multi.prob) == pytest.approx(direct, rel=1e-4)
    assert unknown.prob is None and "not in the vocabulary" in unknown.message


def test_pll_matches_a_direct_computation_with_other_masks_and_sentence_b(tiny_loaded):
    loaded = tiny_loaded
    enc = loaded.tokenizer("the [MASK] sat on [MASK] .", "it slept .")
    base = {k: list(v) for k, v in enc.items()}
    pos = base["input_ids"].index(loaded.tokenizer.mask_token_id)
    words = [[19204, 3989], [4937], [2293, 2075, 2075]]  # token ##ization, cat, love ##ing ##ing
    got = pll.pseudo_log_likelihoods(loaded, base, pos, words)
    for ids, value in zip(words, got):
        total = 0.0
        for j in range(len(ids)):
            seq = base["input_ids"][:pos] + ids + base["input_ids"][pos + 1:]
            seq[pos + j] = loaded.tokenizer.mask_token_id
            types = base["token_type_ids"][:pos] + [0] * len(ids) + base["token_type_ids"][pos + 1:]
            with torch.inference_mode():
                logits = loaded.model(input_ids=torch.tensor([seq]), token_type_ids=torch.tensor([types])).logits
            total += float(logits[0, pos + j].log_softmax(-1)[ids[j]])
        assert value == pytest.approx(total, rel=1e-4, abs=1e-4)


def test_whole_words_are_ranked_by_pll(tiny_loaded):
    text = "Nice to [MASK] you."
    result = fill_mask.predict(tiny_loaded, text, top_k=12, whole_words=True)
    cands = result.masks[0].candidates
    assert result.method == fill_mask.WHOLE_WORD_METHOD and "pseudo-log-likelihood" in result.method
    assert 1 <= len(cands) <= 12 and {len(c.pieces) for c in cands} <= {1, 2, 3}
    assert len({c.text for c in cands}) == len(cands)  # one entry per spelling
    probs = [c.prob for c in cands]
    assert probs == sorted(probs, reverse=True)
    assert not cands[0].pieces[0].startswith("##")
    assert all(p.startswith("##") for c in cands for p in c.pieces[1:])  # pieces after the first continue it
    enc = tiny_loaded.tokenizer(text)
    base = {k: list(v) for k, v in enc.items()}
    ids = [tiny_loaded.tokenizer.convert_tokens_to_ids(c.pieces) for c in cands]
    plls = pll.pseudo_log_likelihoods(tiny_loaded, base, 3, ids)
    assert [math.log(p) for p in probs] == pytest.approx(plls, rel=1e-4)
    # the best one-piece word is the plain top-1 prediction (PLL of one piece = its probability)
    plain = fill_mask.predict(tiny_loaded, text, top_k=1).masks[0].candidates[0]
    one = [c for c in cands if len(c.pieces) == 1]
    assert one[0].id == plain.id and one[0].prob == pytest.approx(plain.prob, rel=1e-4)
    assert filled_markdown(result) == f"Nice to **{cands[0].text}** you."


def test_mask_context_decides_which_pieces_may_stand(tiny_loaded):
    """After a space, punctuation or at the start only word-initial pieces can stand; glued to
    letters only ``##`` pieces; glued to another mask, the whole vocabulary."""
    text = "[MASK] sat, ([MASK] on play[MASK] and [MASK][MASK] ."
    result = fill_mask.predict(tiny_loaded, text, top_k=50)
    full = _full_probs(tiny_loaded, text)
    kinds = [m.context for m in result.masks]
    assert kinds == [fill_mask.WORD_START, fill_mask.WORD_START, fill_mask.AFTER_LETTERS,
                     fill_mask.WORD_START, fill_mask.AFTER_MASK]
    pieces = [[c.token.startswith("##") for c in m.candidates] for m in result.masks]
    assert not any(pieces[0] + pieces[1] + pieces[3])
    assert all(pieces[2])  # play[MASK]: only continuation pieces
    continuation = _continuation(tiny_loaded)
    best_pieces = [continuation[i] for i in full[2][continuation].topk(50).indices.tolist()]
    assert [c.id for c in result.masks[2].candidates] == best_pieces
    assert [c.id for c in result.masks[4].candidates] == full[4].topk(50).indices.tolist()  # unfiltered
    for mask, probs in zip(result.masks, full):
        assert [c.prob for c in mask.candidates] == pytest.approx(probs[[c.id for c in mask.candidates]].tolist(),
                                                                  rel=1e-4, abs=1e-6)


def test_a_mask_after_a_cjk_ideograph_starts_a_word_and_one_after_kana_continues_it(tiny_loaded):
    """BERT's tokenizer makes each CJK ideograph a word of its own, so the piece after one starts a word (a learner's
    "東京は日本の首都[MASK]です。" was offered only ## pieces); kana, as in BERT, are letters of a word."""
    result = fill_mask.predict(tiny_loaded, "東京は日本の首都[MASK]です。 ひらがな[MASK]", top_k=10)
    assert [m.context for m in result.masks] == [fill_mask.WORD_START, fill_mask.AFTER_LETTERS]
    assert not any(c.token.startswith("##") for c in result.masks[0].candidates)


@pytest.mark.parametrize(
    "text,kwargs,message",
    [
        ("", {}, "Enter a sentence"),
        ("no mask here", {}, "No mask found"),
        ("a [MASK] " * 40, {}, "accepts at most 64"),
        ("x [MASK]", {"top_k": 0}, "Top-k"),
        ("x [MASK]", {"top_k": 51}, "Top-k"),
        ("x [MASK]", {"targets": [f"w{i}" for i in range(21)]}, "at most 20"),
        ("x [MASK]", {"targets": ["a" * 51]}, "at most 50 characters"),
        ("[MASK] " * 6, {"whole_words": True}, "at most 5"),
    ],
)
def test_bad_input_gets_a_clear_message(tiny_loaded, text, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fill_mask.predict(tiny_loaded, text, **kwargs)


def test_model_without_trained_head_is_refused():
    from bertdemo.models import embedded
    from bertdemo.models.store import load_masked_lm

    loaded = load_masked_lm(embedded.EMBEDDED_ENCODER_NAME, "cpu")
    assert not loaded.has_mlm_head and any("cls.predictions" in k for k in loaded.missing_head_keys)
    with pytest.raises(ValueError) as info:
        fill_mask.predict(loaded, "Nice to [MASK] you.")
    assert str(info.value) == no_head_message(loaded.name)
    assert "no trained masked-LM head" in str(info.value)


def test_no_mask_message_names_the_mask_once(tiny_loaded):
    with pytest.raises(ValueError) as info:
        fill_mask.predict(tiny_loaded, "nothing here")
    assert str(info.value).count("[MASK]") == 1


def test_predict_runs_sdpa_and_projects_only_the_masks(tiny_loaded, monkeypatch):
    import torch.nn.functional as F

    calls = []
    real_sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **k: calls.append(a[0].shape) or real_sdpa(*a, **k))
    head_inputs = []
    hook = tiny_loaded.model.cls.register_forward_hook(lambda module, args, out: head_inputs.append(tuple(args[0].shape)))
    try:
        fill_mask.predict(tiny_loaded, "the [MASK] sat on the [MASK] .", top_k=3)
    finally:
        hook.remove()
    assert len(calls) == tiny_loaded.model.config.num_hidden_layers  # one SDPA kernel call per layer
    assert head_inputs == [(2, tiny_loaded.model.config.hidden_size)]  # the vocabulary projection at the 2 masks only

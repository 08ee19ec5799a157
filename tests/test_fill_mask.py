"""Masked-word prediction: sparse head equals the full head, targets, and clear refusals."""

import pytest
import torch

from bertdemo.explore import fill_mask


def _full_probs(loaded, text):
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        logits = loaded.model(**enc).logits[0]
    positions = (enc["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero().flatten()
    return logits[positions].softmax(-1)


def _word_start_only(loaded, probs):
    """`probs` with every ``##`` continuation piece set to 0 (what a word-start mask may offer)."""
    probs = probs.clone()
    for token, i in loaded.tokenizer.get_vocab().items():
        if token.startswith("##"):
            probs[..., i] = 0.0
    return probs


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
    assert result.filled_text == f"Nice to **{result.masks[0].candidates[0].text}** you."


def test_sentence_b_is_segment_one(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "She opened the door.", "Then she [MASK] in.", top_k=2)
    enc = tiny_loaded.tokenizer("She opened the door.", "Then she [MASK] in.")
    assert enc["token_type_ids"][result.masks[0].position] == 1
    assert " / " in result.filled_text


def test_targets_scored_or_refused(tiny_loaded):
    result = fill_mask.predict(tiny_loaded, "Nice to [MASK] you.", top_k=1, targets=["meet", "tokenization", "😀"])
    probs = _word_start_only(tiny_loaded, _full_probs(tiny_loaded, "Nice to [MASK] you.")[0])
    meet, multi, unknown = result.masks[0].targets
    assert meet.prob == pytest.approx(float(probs[3113]), rel=1e-4)
    assert meet.rank == int((probs > probs[3113]).sum()) + 1
    assert multi.prob is None and "pieces" in multi.message
    assert unknown.prob is None and "not in the vocabulary" in unknown.message


def test_word_start_masks_never_offer_continuation_pieces(tiny_loaded):
    """After a space, punctuation or at the start only word-initial pieces can stand; a mask glued
    to a word or to another mask may be a ``##`` piece, and is ranked over the whole vocabulary."""
    text = "[MASK] sat, ([MASK] on play[MASK] and [MASK][MASK] ."
    result = fill_mask.predict(tiny_loaded, text, top_k=50)
    full = _full_probs(tiny_loaded, text)
    has_piece = [any(c.token.startswith("##") for c in m.candidates) for m in result.masks]
    assert has_piece == [False, False, True, False, True]
    for mask, probs in zip(result.masks, full):
        if has_piece[mask.index]:  # glued: exactly the model's own top-k
            assert [c.id for c in mask.candidates] == probs.topk(50).indices.tolist()
        assert [c.prob for c in mask.candidates] == pytest.approx(probs[[c.id for c in mask.candidates]].tolist(),
                                                                  rel=1e-4, abs=1e-6)


@pytest.mark.parametrize(
    "text,kwargs,message",
    [
        ("", {}, "Enter a sentence"),
        ("no mask here", {}, "No mask found"),
        ("a [MASK] " * 40, {}, "accepts at most 64"),
        ("x [MASK]", {"top_k": 0}, "Top-k"),
        ("x [MASK]", {"top_k": 51}, "Top-k"),
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
    with pytest.raises(ValueError, match="no trained masked-LM head"):
        fill_mask.predict(loaded, "Nice to [MASK] you.")

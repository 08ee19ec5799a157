"""Attention extraction and views: shapes, validation, hiding specials, renormalisation."""

import numpy as np
import pytest

from bertdemo.explore import attention


def test_shapes_and_rows(tiny_loaded):
    result = attention.compute(tiny_loaded, "The cat sat.", "It purred.")
    n = len(result.tokens)
    assert result.attentions.shape == (2, 2, n, n)
    assert result.tokens[0] == "[CLS]" and result.special[0] and result.special[-1]
    assert result.segments[-1] == 1
    np.testing.assert_allclose(result.attentions.sum(-1), 1.0, atol=1e-5)


def test_views(tiny_loaded):
    result = attention.compute(tiny_loaded, "The cat sat on the mat.")
    mean = attention.select_view(result, 1, None)
    np.testing.assert_allclose(mean.matrix, result.attentions[1].mean(0), atol=1e-6)
    hidden = attention.select_view(result, 0, 1, hide_special=True, renormalise=True)
    assert "[CLS]" not in hidden.tokens and len(hidden.tokens) == len(result.tokens) - 2
    assert hidden.renormalised
    np.testing.assert_allclose(hidden.matrix.sum(-1), 1.0, atol=1e-5)
    raw = attention.select_view(result, 0, 1, hide_special=True, renormalise=False)
    assert not raw.renormalised and (raw.matrix.sum(-1) < 1.0).all()
    grid = attention.all_heads(result, hide_special=True)
    assert grid.shape == (2, 2, len(hidden.tokens), len(hidden.tokens))
    with pytest.raises(ValueError, match="Layer must be"):
        attention.select_view(result, 2, 0)


def test_token_count_must_match_attention():
    with pytest.raises(ValueError, match="3 tokens"):
        attention.AttentionResult(["a", "b", "c"], [False] * 3, [0] * 3, np.zeros((1, 1, 4, 4)), "m")


@pytest.mark.parametrize("text,message", [("", "Enter a sentence"), ("word " * 200, "at most")])
def test_bad_input(tiny_loaded, text, message):
    with pytest.raises(ValueError, match=message):
        attention.compute(tiny_loaded, text)


# --- sentence B, positions, removed weight, filters, rollout, one token, CSV -------------------


def test_mask_typed_in_sentence_b_is_normalised(tiny_loaded):
    result = attention.compute(tiny_loaded, "The [mask] sat.", "It [mask] away.")
    assert result.tokens.count("[MASK]") == 2
    assert "mask" not in result.tokens and "[" not in result.tokens
    assert result.tokens[result.sentence_b_start:] == ["it", "[MASK]", "away", ".", "[SEP]"]


def test_hidden_specials_keep_positions_and_report_removed_weight(tiny_loaded):
    result = attention.compute(tiny_loaded, "The cat sat on the mat.")
    n = len(result.tokens)
    view = attention.select_view(result, 1, 0, hide_special=True, renormalise=True)
    assert view.positions == view.row_positions == list(range(1, n - 1))
    assert view.labels[0] == "1: the" and view.labels[-1] == f"{n - 2}: ."
    inner = result.attentions[1, 0][1:-1, 1:-1]
    assert view.removed == pytest.approx(float(np.mean(1 - inner.sum(-1))), abs=1e-6)
    assert 0 < view.removed < 1
    assert attention.select_view(result, 1, 0).removed == 0.0


def test_direction_filters(tiny_loaded):
    result = attention.compute(tiny_loaded, "The cat sat.", "It purred.")
    b = result.sentence_b_start
    assert result.tokens[b - 1] == "[SEP]" and result.tokens[b] == "it"
    t = len(result.tokens)
    a_to_b = attention.select_view(result, 0, 1, direction="A->B")
    assert a_to_b.row_positions == list(range(b)) and a_to_b.positions == list(range(b, t))
    np.testing.assert_allclose(a_to_b.matrix, result.attentions[0, 1][:b, b:])
    b_to_a = attention.select_view(result, 1, None, hide_special=True, renormalise=False, direction="B->A")
    assert b_to_a.row_positions == list(range(b, t - 1))
    assert "[SEP]" not in b_to_a.tokens and b_to_a.positions == list(range(1, b - 1))
    np.testing.assert_allclose(b_to_a.matrix, result.attentions[1].mean(0)[b:t - 1, 1:b - 1], atol=1e-6)
    with pytest.raises(ValueError, match="needs a sentence B"):
        attention.select_view(attention.compute(tiny_loaded, "Alone."), 0, 0, direction="A->B")
    with pytest.raises(ValueError, match="filter must be"):
        attention.select_view(result, 0, 0, direction="sideways")


def test_rollout_against_direct_numpy(tiny_loaded):
    result = attention.compute(tiny_loaded, "The cat sat on the mat.", "It purred.")
    att = result.attentions.astype(np.float64)
    t = att.shape[-1]
    mixed = []
    for layer in range(att.shape[0]):
        a = 0.5 * att[layer].mean(0) + 0.5 * np.eye(t)
        mixed.append(a / a.sum(-1, keepdims=True))
    direct = np.linalg.multi_dot(mixed[::-1]) if len(mixed) > 1 else mixed[0]  # Â_1 · Â_0
    roll = attention.rollout(result.attentions)
    assert roll.shape == (2, t, t)
    np.testing.assert_allclose(roll[0], mixed[0], atol=1e-9)
    np.testing.assert_allclose(roll[-1], direct, atol=1e-9)
    np.testing.assert_allclose(roll.sum(-1), 1.0, atol=1e-9)
    view = attention.rollout_view(result, 1, hide_special=True, renormalise=False)
    keep = ~np.array(result.special)
    np.testing.assert_allclose(view.matrix, direct[np.ix_(keep, keep)], atol=1e-6)


def test_token_across_layers(tiny_loaded):
    result = attention.compute(tiny_loaded, "The cat sat.")
    view = attention.token_across_layers(result, 2)
    assert view.matrix.shape == (2, len(result.tokens)) and view.rows_are_layers
    np.testing.assert_allclose(view.matrix[1], result.attentions[1, :, 2, :].mean(0), atol=1e-6)
    assert view.row_labels == ["layer 0", "layer 1"] and "2: cat" in view.title
    hidden = attention.token_across_layers(result, 2, hide_special=True)
    np.testing.assert_allclose(hidden.matrix.sum(-1), 1.0, atol=1e-5)
    assert hidden.positions == [1, 2, 3, 4]


def test_view_csv_round_trip(tiny_loaded):
    import csv
    import io

    result = attention.compute(tiny_loaded, "The cat sat.")
    view = attention.select_view(result, 0, None, hide_special=True)
    rows = list(csv.reader(io.StringIO(attention.view_csv(view))))
    assert rows[0] == ["from \\ to", *view.labels]
    assert [r[0] for r in rows[1:]] == view.row_labels
    np.testing.assert_allclose(np.array([[float(v) for v in r[1:]] for r in rows[1:]]), view.matrix, atol=1e-6)


def test_a_view_as_plain_values_holds_its_numbers_and_labels(tiny_loaded):
    import json

    result = attention.compute(tiny_loaded, "The cat sat.", "It purred.")
    view = attention.select_view(result, 1, 0, hide_special=True, direction="A->B")
    plain = attention.as_plain(result, view)
    assert json.loads(json.dumps(plain)) == plain  # plain JSON values
    assert (plain["rows"], plain["columns"], plain["view"]) == (view.row_labels, view.labels, "Layer 1, head 0 · A->B")
    assert (plain["layers"], plain["heads"], plain["tokens"]) == (2, 2, result.tokens)
    np.testing.assert_allclose(plain["weights"], view.matrix, atol=5e-7)  # 6 decimals
    assert plain["renormalised"] and 0 < plain["removed"] < 1 and plain["direction"] == "A->B"


# --- head ablation ------------------------------------------------------------------------------


def test_parse_heads():
    from bertdemo.explore.ablation import parse_heads

    assert parse_heads("1:0, 0:*", 2, 3) == [(0, 0), (0, 1), (0, 2), (1, 0)]
    for spec, message in [("", "Name the heads"), ("2:0", "Layer 2 does not exist"),
                          ("0:3", "Head 3 does not exist"), ("zero", "not layer:head")]:
        with pytest.raises(ValueError, match=message):
            parse_heads(spec, 2, 3)


def test_ablation_fill_mask_and_loss_match_manual_forward(tiny_loaded):
    import torch

    from bertdemo.explore import ablation, fill_mask
    from bertdemo.explore.encoding import normalise_masks
    from tests.helpers import manual_logits

    text, words = "The [MASK] sat on the [MASK].", ["cat", "mat"]
    result = ablation.ablate(tiny_loaded, text, None, "0:1, 1:*", top_k=3, answers="cat, mat")
    assert result.heads == [(0, 1), (1, 0), (1, 1)] and result.targets_given
    plain = fill_mask.predict(tiny_loaded, text, None, 3)
    assert [c.id for c in result.before.masks[0].candidates] == [c.id for c in plain.masks[0].candidates]

    tok = tiny_loaded.tokenizer
    enc = tok(normalise_masks(text, tok.mask_token), return_tensors="pt")
    masks = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten()
    ids = torch.tensor(tok.convert_tokens_to_ids(words))
    with torch.no_grad():
        for off, loss, fm in ((set(result.heads), result.loss_after, result.after), (set(), result.loss_before, result.before)):
            logp = manual_logits(tiny_loaded.model, enc["input_ids"], enc["attention_mask"], off)[0, masks].log_softmax(-1)
            assert loss == pytest.approx(float(-logp[torch.arange(2), ids].mean()), rel=1e-4)
            top = logp[0].exp().topk(3)
            assert fm.masks[0].candidates[0].prob == pytest.approx(float(top.values[0]), rel=1e-4)
    assert result.loss_change == pytest.approx(result.loss_after - result.loss_before)

    own = ablation.ablate(tiny_loaded, text, None, [(0, 0)], top_k=2)  # no words: the intact top choices
    assert not own.targets_given and own.targets == [m.candidates[0].token for m in own.before.masks]
    with pytest.raises(ValueError, match="one word per"):
        ablation.ablate(tiny_loaded, text, None, "0:0", answers="cat")


def test_ablation_runs_two_forwards_with_the_old_four_forward_numbers(tiny_loaded):
    import torch

    from bertdemo.explore import ablation, fill_mask
    from bertdemo.models import attention_modes

    text, off = "The [MASK] sat on the [MASK].", [(0, 1), (1, 0)]
    model = tiny_loaded.model
    forwards = []
    hook = model.base_model.embeddings.register_forward_hook(lambda *_: forwards.append(1))  # once per forward
    try:
        result = ablation.ablate(tiny_loaded, text, None, off, top_k=3, answers="cat, mat")
    finally:
        hook.remove()
    assert len(forwards) == 2  # one forward with every head, one with the heads off

    # the old path: predict twice, then the model's full forward twice more for the loss
    tok = tiny_loaded.tokenizer
    enc = tok(text, return_tensors="pt")
    masks = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten()
    ids = torch.tensor(tok.convert_tokens_to_ids(["cat", "mat"]))
    for heads, loss, fm in (((), result.loss_before, result.before), (off, result.loss_after, result.after)):
        with attention_modes.attention_mode(ablate=heads), torch.inference_mode():
            probs = model(**enc).logits[0, masks].softmax(-1)  # (N, V)
            old = fill_mask.predict(tiny_loaded, text, None, 3)
        assert loss == pytest.approx(float(-probs[torch.arange(2), ids].log().mean()), rel=1e-5)
        for got, want in zip(fm.masks, old.masks):
            assert [c.id for c in got.candidates] == [c.id for c in want.candidates]
            assert [c.prob for c in got.candidates] == pytest.approx([c.prob for c in want.candidates], rel=1e-6)
        assert torch.allclose(fm.probs, probs, atol=1e-6)


def test_the_line_under_the_heatmap_states_shape_and_hidden_weight(tiny_loaded):
    from bertdemo.viz.heatmaps import attention_info

    result = attention.compute(tiny_loaded, "The cat sat on the mat.")
    n = len(result.tokens)
    plain = attention_info(result, attention.select_view(result, 0, 1), hide=False)
    assert f"(1, 2, {n}, {n})" in plain and "rows sum to 1." in plain and "removed" not in plain
    raw = attention.select_view(result, 0, 1, hide_special=True, renormalise=False)
    hidden = attention_info(result, raw, hide=True)
    assert "rows sum to less than 1" in hidden and f"removed **{raw.removed:.0%}**" in hidden

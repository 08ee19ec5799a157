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

"""Masking statistics and NSP pairs of bertdemo.pretrain.masking (on-device, seeded)."""

from __future__ import annotations

import pytest
import torch

from bertdemo.pretrain.masking import IGNORE_INDEX, make_nsp_pairs, mask_tokens

CLS, SEP, PAD, UNK, MASK = 101, 102, 0, 100, 103
SPECIAL = torch.tensor([PAD, UNK, CLS, SEP, MASK])
VOCAB = 30522


def _blocks(n: int = 512, t: int = 64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, VOCAB, (n, t), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    ids[:, t // 2] = SEP  # a document boundary inside each block
    return ids


def _mask(ids, seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    return mask_tokens(ids, SPECIAL, mask_token_id=MASK, vocab_size=VOCAB, generator=g, **kw)


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("p", [0.15, 0.3])
def test_mask_rates_and_80_10_10(fixed: bool, p: float) -> None:
    ids = _blocks()
    out = _mask(ids, mlm_probability=p, fixed_count=fixed)
    special = torch.isin(ids, SPECIAL)
    chosen = out.labels != IGNORE_INDEX
    n_real = (~special).sum().item()
    assert abs(chosen.sum().item() / n_real - p) < 0.02
    assert not (chosen & special).any(), "special tokens must never be masked"
    assert torch.equal(out.input_ids[special], ids[special]), "special tokens must stay unchanged"
    assert torch.equal(out.labels[chosen], ids[chosen])
    assert (out.labels[~chosen] == IGNORE_INDEX).all()
    assert torch.equal(out.input_ids[~chosen], ids[~chosen]), "unchosen tokens are never corrupted"
    n = chosen.sum().item()
    to_mask = (out.input_ids[chosen] == MASK).float().mean().item()
    kept = (out.input_ids[chosen] == ids[chosen]).float().mean().item()
    randomized = 1 - to_mask - kept
    assert abs(to_mask - 0.8) < 0.02 and abs(kept - 0.1) < 0.02 and abs(randomized - 0.1) < 0.02, (n, to_mask, kept)
    if fixed:
        k = round(p * (ids.shape[1] - 2))
        assert (chosen.sum(1) == k).all(), "fixed-count mode predicts exactly k tokens per row"
        assert out.positions.shape == (ids.shape[0], k)
        assert torch.equal(out.labels.gather(1, out.positions), ids.gather(1, out.positions))


def test_adjustable_replace_probabilities() -> None:
    ids = _blocks()
    out = _mask(ids, mask_replace_prob=0.5, random_replace_prob=0.5)
    chosen = out.labels != IGNORE_INDEX
    assert abs((out.input_ids[chosen] == MASK).float().mean().item() - 0.5) < 0.03
    assert (out.input_ids[chosen] == ids[chosen]).float().mean().item() < 0.01  # only random collisions


def test_masking_is_deterministic_with_seed_and_fresh_otherwise() -> None:
    ids = _blocks(64)
    a, b = _mask(ids, seed=3), _mask(ids, seed=3)
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.labels, b.labels)
    g = torch.Generator().manual_seed(3)
    first = mask_tokens(ids, SPECIAL, mask_token_id=MASK, vocab_size=VOCAB, generator=g)
    second = mask_tokens(ids, SPECIAL, mask_token_id=MASK, vocab_size=VOCAB, generator=g)
    assert not torch.equal(first.labels, second.labels), "a block seen again gets a fresh mask"


def test_fixed_count_never_masks_specials_in_short_rows() -> None:
    ids = torch.full((4, 32), SEP)
    ids[:, 0] = CLS
    ids[:, 1:3] = 5000  # only two maskable tokens per row, k = 4
    out = _mask(ids, fixed_count=True)
    chosen = out.labels != IGNORE_INDEX
    assert chosen[:, 1:3].all() and chosen.sum().item() == 8


def test_nsp_pairs_structure() -> None:
    ids = _blocks(256, 40)
    g = torch.Generator().manual_seed(0)
    pairs, segments, labels = make_nsp_pairs(ids, cls_id=CLS, sep_id=SEP, generator=g)
    assert pairs.shape == ids.shape and segments.shape == ids.shape and labels.shape == (256,)
    assert abs(labels.float().mean().item() - 0.5) < 0.1
    body = ids[:, 1:-1]
    for i in range(len(ids)):
        row, seg = pairs[i], segments[i]
        assert row[0] == CLS and row[-1] == SEP
        n_a = int((seg == 0).sum()) - 2  # [CLS] A [SEP] are segment 0
        assert seg[: n_a + 2].eq(0).all() and seg[n_a + 2 :].eq(1).all()
        assert row[n_a + 1] == SEP
        assert torch.equal(row[1 : n_a + 1], body[i, :n_a])  # A starts its block
        b = row[n_a + 2 : -1]
        if labels[i] == 0:
            assert torch.equal(b, body[i, n_a : n_a + len(b)]), "IsNext: B continues A"
        else:
            assert not torch.equal(b, body[i, n_a : n_a + len(b)]), "NotNext: B comes from another block"


@pytest.mark.parametrize("chunk_rows", [7, 1024])
def test_fused_linear_cross_entropy_matches_unfused(chunk_rows: int) -> None:
    from bertdemo.pretrain.fused_ce import Workspace, linear_cross_entropy

    g = torch.Generator().manual_seed(0)
    h = torch.randn(50, 16, generator=g, requires_grad=True)
    w = torch.randn(300, 16, generator=g, requires_grad=True)
    b = torch.randn(300, generator=g, requires_grad=True)
    y = torch.randint(0, 300, (50,), generator=g)
    y[::4] = IGNORE_INDEX
    ref = torch.nn.functional.cross_entropy(torch.nn.functional.linear(h, w, b), y, ignore_index=IGNORE_INDEX)
    ref_grads = torch.autograd.grad(ref, (h, w, b))
    ws = Workspace()
    for _ in range(2):  # the reused workspace gives the same answer
        out = linear_cross_entropy(h, w, b, y, ws, chunk_rows=chunk_rows)
        grads = torch.autograd.grad(3 * out, (h, w, b))
        assert torch.allclose(out, ref, atol=1e-5)
        for got, want in zip(grads, ref_grads):
            assert torch.allclose(got, 3 * want, atol=1e-5)

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


# --- whole-word masking ------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordpiece():
    """The engine's uncased WordPiece tokenizer, its continuation lookup and 200 real blocks of 64."""
    from transformers import AutoTokenizer

    from bertdemo.models import embedded
    from bertdemo.pretrain.masking import continuation_lookup

    tok = AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))
    lookup = continuation_lookup(tok)
    text = " ".join(embedded.wiki_summaries()[:300])
    ids = torch.tensor(tok(text, add_special_tokens=False, verbose=False)["input_ids"][: 200 * 62]).view(200, 62)
    blocks = torch.cat([torch.full((200, 1), CLS), ids, torch.full((200, 1), SEP)], dim=1)
    return tok, lookup, blocks


def test_continuation_lookup(wordpiece) -> None:
    tok, lookup, _ = wordpiece
    assert lookup.dtype == torch.bool and len(lookup) == len(tok)
    ids = tok.convert_tokens_to_ids(["##ing", "##s", "play", "the", "[CLS]", "[MASK]"])
    assert lookup[ids].tolist() == [True, True, False, False, False, False]


def test_word_starts_exact() -> None:
    from bertdemo.pretrain.masking import word_starts

    is_cont = torch.zeros(10, dtype=torch.bool)
    is_cont[[7, 8]] = True  # ids 7, 8 are "##" pieces; 1 = [CLS], 2 = [SEP]
    ids = torch.tensor([[1, 7, 5, 7, 8, 6, 2, 8, 2]])  # a block may start mid-word: [CLS] ##x
    special = torch.isin(ids, torch.tensor([1, 2]))
    assert word_starts(ids, special, is_cont).int().tolist() == [[0, 1, 1, 0, 0, 1, 0, 1, 0]]


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("p", [0.15, 0.4])
def test_whole_words_masked_together(wordpiece, fixed: bool, p: float) -> None:
    from bertdemo.pretrain.masking import word_starts

    tok, lookup, ids = wordpiece
    special_ids = torch.tensor(sorted(tok.all_special_ids))
    g = torch.Generator().manual_seed(0)
    out = mask_tokens(ids, special_ids, mask_token_id=MASK, vocab_size=len(tok), generator=g, mlm_probability=p,
                      fixed_count=fixed, is_continuation=lookup)
    special = torch.isin(ids, special_ids)
    chosen = out.labels != IGNORE_INDEX
    assert not (chosen & special).any()
    assert torch.equal(out.labels[chosen], ids[chosen])
    starts = word_starts(ids, special, lookup)
    assert (~starts & ~special).any(), "the text has words split into pieces"
    # every continuation piece is chosen iff the piece before it (same word) is
    cont = ~starts & ~special
    assert torch.equal(chosen[:, 1:][cont[:, 1:]], chosen[:, :-1][cont[:, 1:]])
    rate = chosen.sum().item() / (~special).sum().item()
    k = round(p * (ids.shape[1] - 2))
    if fixed:
        assert (chosen.sum(1) <= k).all() and abs(rate - p) < 0.01, rate
        assert out.positions.shape == (len(ids), k)
        picked = torch.zeros_like(chosen).scatter_(1, out.positions, True)
        assert not (chosen & ~picked).any(), "every chosen token is among the (B, k) positions"
        assert (out.labels.gather(1, out.positions)[~chosen.gather(1, out.positions)] == IGNORE_INDEX).all()
    else:
        se = (p * (1 - p) / (~special).sum().item()) ** 0.5
        assert abs(rate - p) < 0.02 + 4 * se, rate  # words are chosen with probability p: tokens too, on average
        assert out.positions is None


def test_actions_match_the_corruption() -> None:
    from bertdemo.pretrain.masking import ACTION_KEEP, ACTION_MASK, ACTION_NONE, ACTION_RANDOM

    ids = _blocks(64)
    plain = _mask(ids, seed=5)
    out = _mask(ids, seed=5, with_actions=True)
    assert torch.equal(plain.input_ids, out.input_ids), "asking for actions draws nothing more"
    chosen = out.labels != IGNORE_INDEX
    assert torch.equal(out.actions != ACTION_NONE, chosen)
    assert (out.input_ids[out.actions == ACTION_MASK] == MASK).all()
    assert torch.equal(out.input_ids[out.actions == ACTION_KEEP], ids[out.actions == ACTION_KEEP])
    assert (out.actions == ACTION_RANDOM).sum() > 0

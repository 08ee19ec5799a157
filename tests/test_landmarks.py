"""Landmarks and the fixed held-out questions: exact values on a corpus small enough to count by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bertdemo.pretrain.heldout import IGNORE_INDEX, heldout_questions
from bertdemo.pretrain.landmarks import count_ngrams, landmark_losses

CLS, SEP, MASK = 0, 1, 2  # the specials of a 10-word vocabulary
V = 10
TRAIN = np.array([[CLS, 3, 4, 5, SEP],
                  [CLS, 3, 4, 6, SEP]])


def test_landmarks_are_the_hand_counted_witten_bell_values():
    counts = count_ngrams(TRAIN, V, [CLS, SEP, MASK])
    # words 3, 4, 5, 3, 4, 6: N = 6, 4 types; P1(w) = (c(w) + 4/10) / (6 + 4)
    p1 = {3: 0.24, 4: 0.24, 5: 0.14, 6: 0.14}
    assert counts.p_unigram()[[3, 4, 5, 6, 7]] == pytest.approx([p1[3], p1[4], p1[5], p1[6], 0.04])
    assert counts.p_unigram().sum() == pytest.approx(1.0)
    # the model reads [CLS] 3 4 [MASK] [SEP] (5 asked) and [CLS] [MASK] [MASK] 6 [SEP] (3 and 4 asked)
    input_ids = np.array([[CLS, 3, 4, MASK, SEP], [CLS, MASK, MASK, 6, SEP]])
    labels = np.full_like(input_ids, IGNORE_INDEX)
    labels[0, 3], labels[1, 1], labels[1, 2] = 5, 3, 4
    got = landmark_losses(counts, input_ids, labels, MASK)
    # 5 after 4 (4 seen twice, before 2 different words): (1 + 2 * 0.14) / (2 + 2) = 0.32;
    # 3 after [CLS] (twice, one word): (2 + 1 * 0.24) / (2 + 1); 4 after a [MASK]: no left context -> P1(4)
    left = [0.32, 2.24 / 3, 0.24]
    # 5 between 4 and [SEP] (twice, 2 words): (1 + 2 * 0.32) / 4 = 0.41; 3 before a [MASK]: the left
    # bigram; 4 before 6 (right context seen once, one word): (1 + 1 * 0.24) / (1 + 1) = 0.62
    both = [0.41, 2.24 / 3, 0.62]
    assert got["uniform"] == pytest.approx(math.log(V))
    assert got["unigram"] == pytest.approx(-np.mean(np.log([0.14, 0.24, 0.24])))
    assert got["left"] == pytest.approx(-np.mean(np.log(left)))
    assert got["both"] == pytest.approx(-np.mean(np.log(both)))
    # the guesser that uses both neighbours answers the probe "4 [MASK] [SEP]" with 5 and 6 first
    dist = counts.distribution(left=4, right=SEP)
    assert dist["both"][[5, 6]] == pytest.approx([0.41, 0.41]) and dist["both"].sum() == pytest.approx(1.0)


def test_uniform_is_ln_of_the_vocabulary_and_the_landmarks_are_ordered_on_real_text(tmp_path):
    from transformers import AutoTokenizer

    from bertdemo.models.embedded import tokenizer_dir
    from bertdemo.pretrain.data import prepare_blocks
    from tests.helpers import wiki_corpus_file

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    blocks = prepare_blocks(wiki_corpus_file(tmp_path, 300), tok, 64, tmp_path / "cache")
    questions = heldout_questions(blocks.heldout, tok.all_special_ids, tok.mask_token_id)
    got = landmark_losses(count_ngrams(blocks.train, len(tok), tok.all_special_ids), questions.input_ids,
                          questions.labels, tok.mask_token_id)
    assert got["uniform"] == pytest.approx(math.log(30522))
    assert got["uniform"] > got["unigram"] > got["left"] > got["both"]


def test_the_heldout_questions_are_fixed_mask_only_and_fifteen_percent():
    rng = np.random.default_rng(0)
    blocks = rng.integers(5, 1000, size=(6, 40))
    blocks[:, 0], blocks[:, -1], blocks[2, 17] = CLS, SEP, SEP  # a document boundary inside a block
    q = heldout_questions(blocks, [CLS, SEP, MASK], MASK)
    again = heldout_questions(blocks.copy(), [CLS, SEP, MASK], MASK)
    assert np.array_equal(q.input_ids, again.input_ids) and np.array_equal(q.labels, again.labels)
    asked = q.labels != IGNORE_INDEX
    assert asked.sum(axis=1).tolist() == [round(0.15 * 38)] * 2 + [round(0.15 * 37)] + [round(0.15 * 38)] * 3
    assert np.all(q.input_ids[asked] == MASK)  # [MASK] only: nothing kept, nothing random
    assert np.array_equal(q.input_ids[~asked], blocks[~asked]) and np.array_equal(q.labels[asked], blocks[asked])
    assert not np.isin(blocks[asked], [CLS, SEP]).any()  # specials are never asked
    other = blocks.copy()
    other[0, 1] += 1  # other held-out text: other positions
    assert not np.array_equal(heldout_questions(other, [CLS, SEP, MASK], MASK).labels != IGNORE_INDEX, asked)
    limited = heldout_questions(blocks, [CLS, SEP, MASK], MASK, max_tokens=80)
    assert limited.input_ids.shape == (2, 40) and np.array_equal(limited.labels, q.labels[:2])

"""Where WordPiece's pieces come from: the greedy split is the tokenizer's own, step by step, and a vocabulary
learnt from a small text keeps its frequent words whole."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from bertdemo.explore import wordpiece_learn
from bertdemo.models import embedded
from bertdemo.viz import wordpiece as wordpiece_view


@pytest.fixture(scope="module")
def uncased():
    return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))


def test_tokenization_is_token_then_ization_and_why(uncased):
    split = wordpiece_learn.model_split(uncased, "tokenization")
    assert split.pieces == ["token", "##ization"] == uncased.tokenize("tokenization")
    first, second = split.steps
    assert (first.start, first.piece, second.start, second.piece) == (0, "token", 5, "##ization")
    assert first.tried == ["tokenization", "tokenizatio", "tokenizati", "tokenizat", "tokeniza", "tokeniz", "tokeni"]
    vocab = uncased.get_vocab()
    assert all(t not in vocab for t in first.tried) and "token" in vocab and "##ization" in vocab
    shown = wordpiece_view.split_markdown(split, "embedded", len(uncased))
    assert "30,522" in shown and "<code>token</code> + <code>##ization</code>" in shown and "3 shorter" in shown


@pytest.mark.parametrize("word", ["Unbelievably", "café", "xyzzyq", "the", "embeddings", "Zürich"])
def test_the_greedy_split_is_the_tokenizers_own(uncased, word):
    assert wordpiece_learn.model_split(uncased, word).pieces == uncased.tokenize(word)


def test_a_word_is_one_word_of_letters():
    for bad, message in (("", "Type a word"), ("two words", "letters only"), ("a" * 41, "at most 40")):
        with pytest.raises(ValueError, match=message):
            wordpiece_learn.check_word(bad)
    split = wordpiece_learn.greedy_split({"a", "##b"}, "abc")
    assert split.unknown and split.pieces == ["[UNK]"] and split.steps[-1].tried == ["##c"]


def test_a_vocabulary_learnt_from_text_keeps_its_frequent_words_whole():
    lines = tuple(["the tokenization of tokens by a token counter"] * 50 + ["organization and realization"] * 20)
    small, large = wordpiece_learn.learn_vocabulary("tokenization", sizes=(40, 120), lines=lines)
    assert small.learnt == [] and len(small.split.pieces) == len("tokenization")  # characters only
    assert small.split.pieces[0] == "t" and all(p.startswith("##") for p in small.split.pieces[1:])
    assert large.size <= 120 and large.split.pieces == ["tokenization"]  # frequent here: learnt whole
    assert "token" in large.learnt and large.alphabet == small.alphabet


def test_the_small_text_is_the_embedded_summaries():
    (learnt,) = wordpiece_learn.learn_vocabulary("Tokenization", sizes=(300,))
    assert learnt.size == 300 and learnt.split.normalised == "tokenization"
    assert learnt.learnt[:3] == ["##he", "the", "##er"]  # the commonest pairs of the summaries' text
    assert "".join(p.removeprefix("##") for p in learnt.split.pieces) == "tokenization"
    assert "first 500 embedded Wikipedia summaries" in wordpiece_view.learning_markdown([learnt])

"""Tokenizer inspection: the table, counts, notices and vocabulary lookups."""

import pytest

from bertdemo import limits
from bertdemo.english import plural
from bertdemo.explore import tokens


def test_table_matches_what_the_model_sees(tokenizer):
    table = tokens.tokenize(tokenizer, "I love tokenization", "Second one.")
    toks = [r.token for r in table.rows]
    assert toks == ["[CLS]", "i", "love", "token", "##ization", "[SEP]", "second", "one", ".", "[SEP]"]
    assert [r.id for r in table.rows][:3] == [101, 1045, 2293]
    assert [r.segment for r in table.rows] == [0] * 6 + [1] * 4
    assert all(r.attention_mask == 1 for r in table.rows)
    piece = table.rows[4]
    assert piece.is_continuation and piece.word_index == 2 and (piece.start, piece.end) == (12, 19)
    assert table.rows[0].is_special and table.rows[0].word_index is None
    assert table.rows[6].sentence == 1 and table.rows[6].word_index == 0
    assert (table.n_tokens, table.n_words, table.n_split_words, table.n_unknown) == (10, 6, 1, 0)


def test_unknown_and_control_characters(tokenizer):
    table = tokens.tokenize(tokenizer, "ok \x07 😀 done")
    assert [r.token for r in table.rows] == ["[CLS]", "ok", "[UNK]", "done", "[SEP]"]
    assert table.n_unknown == 1 and any("[UNK]" in n for n in table.notices)


def test_long_text_is_truncated_with_a_notice(tokenizer):
    table = tokens.tokenize(tokenizer, "hello world " * 300, max_length=512)
    assert table.truncated and table.n_tokens == 602 and len(table.rows) == 512
    assert "at most 512" in table.notices[0]


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_text_is_refused(tokenizer, text):
    with pytest.raises(ValueError, match="Enter some text"):
        tokens.tokenize(tokenizer, text)


def test_oversized_paste_is_refused(tokenizer):
    with pytest.raises(ValueError, match="limit"):
        tokens.tokenize(tokenizer, "a" * (limits.MAX_CHARS + 1))


def test_vocabulary_lookups(tokenizer):
    assert tokens.lookup_token(tokenizer, "love") == 2293
    assert tokens.lookup_token(tokenizer, "##ing") == 2075
    assert tokens.lookup_id(tokenizer, 103) == "[MASK]"
    assert tokens.lookup_id(tokenizer, "0") == "[PAD]"
    with pytest.raises(ValueError, match="splits it into"):
        tokens.lookup_token(tokenizer, "tokenization")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokens.lookup_id(tokenizer, 30522)
    with pytest.raises(ValueError, match="whole number"):
        tokens.lookup_id(tokenizer, "abc")
    for empty in (None, " "):  # a cleared id box (the API's null): said in words, not Python's int() error
        with pytest.raises(ValueError, match=r"^Enter an id: a whole number from 0 to 30,521\.$"):
            tokens.lookup_id(tokenizer, empty)


def test_special_tokens_have_the_notebook_ids(tokenizer):
    ids = {tok: i for _, tok, i in tokens.special_tokens(tokenizer)}
    assert ids == {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}


def test_special_tokens_typed_in_the_text_are_special(tokenizer):
    table = tokens.tokenize(tokenizer, "I typed [MASK] and [SEP] here")
    rows = {r.token: r for r in table.rows}
    assert [r.token for r in table.rows] == ["[CLS]", "i", "typed", "[MASK]", "and", "[SEP]", "here", "[SEP]"]
    typed_mask, typed_sep = table.rows[3], table.rows[5]
    assert typed_mask.is_special and typed_sep.is_special
    assert (typed_mask.start, typed_mask.end) == (8, 14)  # still placed in the text
    assert not rows["typed"].is_special and not rows["here"].is_special
    assert table.n_words == 4  # typed specials are not words


def test_unknown_is_not_special(tokenizer):
    row = tokens.tokenize(tokenizer, "a 😀").rows[2]
    assert row.is_unknown and not row.is_special


def test_encoding_is_what_the_tokenizer_returns(tokenizer):
    table = tokens.tokenize(tokenizer, "I love tokenization", "Second one.")
    enc = tokenizer("I love tokenization", "Second one.")
    assert table.encoding() == {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}


def test_normalisation_is_reported(tokenizer):
    table = tokens.tokenize(tokenizer, "Naïve café, naive cafe. Naïve!")
    assert table.n_normalised == 3 and table.changed == [("Naïve", "naive"), ("café,", "cafe,"), ("Naïve!", "naive!")]
    plain = tokens.tokenize(tokenizer, "plain lowercase words")
    assert plain.n_normalised == 0 and plain.changed == []
    long = tokens.tokenize(tokenizer, "Café " * 30)
    assert long.n_normalised == 30 and long.changed == [("Café", "cafe")]


def test_the_notice_names_every_changed_word_however_long_the_text(tokenizer):
    """Each changed word is named, not the first 60 characters of the text (words past them were hidden)."""
    from bertdemo.viz.chips import render_stats

    text = "the quick brown fox jumps over the lazy dog and then " * 2 + "Naïve Café Déjà Über Ångström"
    stats = render_stats(tokens.tokenize(tokenizer, text))
    for typed, read in [("Naïve", "naive"), ("Café", "cafe"), ("Déjà", "deja"), ("Über", "uber"), ("Ångström", "angstrom")]:
        assert f"`{typed}` → `{read}`" in stats

def test_typed_special_tokens_are_not_reported_as_lowercased(tokenizer):
    """The notice said "It reads [MASK] → [mask]" while the chips showed [MASK] (id 103): the tokenizer matches a
    typed special token before it lowercases the text, so only the words around it change."""
    from bertdemo.viz.chips import render_stats

    table = tokens.tokenize(tokenizer, "I sat on the river [MASK] [SEP] I opened a bank account. [MASK].")
    assert [r.id for r in table.rows if r.token == "[MASK]"] == [103, 103]
    assert table.n_normalised == 2 and table.changed == [("I", "i")]  # the two "I", nothing else
    assert "[mask]" not in render_stats(table) and "[sep]" not in render_stats(table)
    glued = tokens.tokenize(tokenizer, "Café[MASK] x")
    assert glued.changed == [("Café[MASK]", "cafe[MASK]")]


def test_a_typed_sep_starts_sentence_b_as_in_every_view(tokenizer):
    """The same rule as Inside BERT and Learn: a typed [SEP] gives segment 1 after it."""
    table = tokens.tokenize(tokenizer, "I sat on the bank. [SEP] The water was cold.")
    typed = tokens.tokenize(tokenizer, "I sat on the bank.", "The water was cold.")
    assert [r.token for r in table.rows] == [r.token for r in typed.rows]
    assert [r.segment for r in table.rows] == [0] * 8 + [1] * 6
    assert table.typed_sep and not typed.typed_sep


def test_long_token_lookup_is_refused(tokenizer):
    with pytest.raises(ValueError, match="at most 100"):
        tokens.lookup_token(tokenizer, "a" * 101)


@pytest.mark.parametrize("n,text", [(0, "0 words"), (1, "1 word"), (2, "2 words"), (20002, "20,002 words")])
def test_counts_read_as_english(n, text):
    assert plural(n, "word") == text


def test_offline_cased_tokenizer_ships_small_and_cased():
    from bertdemo.models import availability

    folder = availability.CASED_TOKENIZER_DIR
    assert sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) < 2_000_000
    assert (folder / "README.md").is_file()
    cased = availability.cased_tokenizer()
    table = tokens.tokenize(cased, "Naïve BERT", "B")
    toks = [r.token for r in table.rows]
    assert toks[0] == "[CLS]" and toks.count("[SEP]") == 2 and "B" in toks  # cased: not lowercased
    assert table.changed == [] and "ï" in "".join(toks)  # accents kept
    assert [r.segment for r in table.rows][-2:] == [1, 1]

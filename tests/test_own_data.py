"""A learner's own labelled data: pasted lines, CSV / TSV files read through datasets, a hub name offline,
CoNLL word labels; every bound refused with the line and the rule; the CSV export defuses formula cells."""

from __future__ import annotations

import csv
import io

import pytest

from bertdemo.finetune import own_data
from bertdemo.finetune.own_data import (
    HUB_UNREACHABLE,
    MAX_EXAMPLES,
    MAX_LABELS,
    MAX_TEXT_CHARS,
    SENTIMENT_EXAMPLE,
    OwnData,
    data_csv,
    defuse,
    parse_conll,
    parse_lines,
    read_hub_dataset,
    read_table,
)
from bertdemo.models.hub import HubProbe


def lines(pairs) -> str:
    return "\n".join(f"{label}\t{text}" for label, text in pairs)


def two_labels(n: int = 4) -> list[tuple[str, str]]:
    return [("pos", f"good thing {i}") for i in range(n)] + [("neg", f"bad thing {i}") for i in range(n)]


def test_pasted_lines_become_sorted_labels_and_folded_texts():
    data = parse_lines("label\ttext\n\npos\tA  lovely\tfilm.\nneg\tdull\n" + lines(two_labels(3)))
    assert data.names == ["neg", "pos"]
    assert data.texts[0] == "A lovely film."  # whitespace folded, the tab after the first kept in the text
    assert data.labels[:2] == [1, 0]
    assert data.counts() == {"neg": 4, "pos": 4}
    assert data.source == "8 pasted lines"


def test_the_sentiment_example_loads_with_two_balanced_labels():
    data = parse_lines(SENTIMENT_EXAMPLE)
    assert len(data) == 20 and data.counts() == {"negative": 10, "positive": 10}


@pytest.mark.parametrize("text, refusal", [
    ("pos\tok\nno tab here\n", "line 2: no tab"),
    ("pos\tok\n\tno label\n", "line 2: the label is empty"),
    ("pos\tok\nneg\t   \n", "line 2: the text is empty"),
    ("pos\t" + "x" * (MAX_TEXT_CHARS + 1), "line 1: the text has 1,001 characters; a text has at most 1,000"),
    ("x" * 51 + "\tok", "line 1: the label has 51 characters"),
    (lines([("only", f"t{i}") for i in range(6)]), "Only one label ('only')"),
    (lines(two_labels(4) + [("rare", "a"), ("rare", "b"), ("rare", "c")]),
     "line 9: label 'rare' has 3 examples; each label needs at least 4"),
    (lines([(f"l{i}", f"t{i}-{j}") for i in range(MAX_LABELS + 1) for j in range(4)]),
     "line 81: label 'l20' is a 21st label; at most 20 labels"),
    (lines([("a" if i % 2 else "b", f"t{i}") for i in range(MAX_EXAMPLES + 1)]),
     "line 5,001: more than 5,000 examples"),
    ("", "Paste label<TAB>text lines"),
])
def test_each_refusal_names_the_line_and_the_rule(text, refusal):
    with pytest.raises(ValueError) as err:
        parse_lines(text)
    assert refusal in str(err.value)


def test_the_heaviest_legal_paste_is_read_and_one_character_more_is_refused():
    width = own_data.MAX_PASTE_CHARS // MAX_EXAMPLES - len("label00\t") - 1  # 5,000 lines filling the budget
    text = lines([(f"label{i % MAX_LABELS:02d}", f"{i:05d}" + "w" * (width - 5)) for i in range(MAX_EXAMPLES)])
    assert len(text) <= own_data.MAX_PASTE_CHARS
    data = parse_lines(text)
    assert len(data) == MAX_EXAMPLES and len(data.names) == MAX_LABELS
    with pytest.raises(ValueError, match="paste at most 1,000,000"):
        parse_lines("x" * (own_data.MAX_PASTE_CHARS + 1))


def test_a_csv_file_is_read_through_datasets_and_names_the_columns_used(tmp_path):
    path = tmp_path / "reviews.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "Review", "stars"])
        for i, (label, text) in enumerate(two_labels(4)):
            writer.writerow([i, text + ", with a comma", label])
    data = read_table(path, label_column="stars", cache_dir=tmp_path)
    assert data.names == ["neg", "pos"] and data.texts[0] == "good thing 0, with a comma"
    assert data.source == "file reviews.csv, 8 rows: column 'Review' (text) and 'stars' (label)"


def test_a_tsv_file_with_numeric_labels_keeps_them_as_names(tmp_path):
    path = tmp_path / "data.tsv"
    path.write_text("sentence\tlabel\n" + "".join(f"text {i}\t{i % 2}\n" for i in range(8)))
    data = read_table(path, cache_dir=tmp_path)
    assert data.names == ["0", "1"] and data.counts() == {"0": 4, "1": 4}


def test_a_file_refusal_names_the_row_or_the_missing_column(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text,label\n" + "".join(f"t{i},{'a' if i < 4 else 'b'}\n" for i in range(7)))
    with pytest.raises(ValueError, match=r"row 5 \(after the header\): label 'b' has 3 examples"):
        read_table(path, cache_dir=tmp_path)
    path.write_text("words,kind\nx,y\n")
    with pytest.raises(ValueError, match="No text column: name one of text"):
        read_table(path, cache_dir=tmp_path)
    big = tmp_path / "big.csv"
    big.write_bytes(b"text,label\n" + b"x,y\n" * (own_data.MAX_FILE_BYTES // 4 + 1))
    with pytest.raises(ValueError, match="at most 8 MB"):
        read_table(big, cache_dir=tmp_path)
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(ValueError, match="upload a .csv or .tsv file"):
        read_table(tmp_path / "data.xlsx", cache_dir=tmp_path)


def test_a_hub_dataset_is_refused_at_once_when_the_hub_does_not_answer():
    asked = []
    offline = HubProbe(offline=True, probe=lambda timeout: asked.append(timeout) or True)
    with pytest.raises(ValueError) as err:
        read_hub_dataset("stanfordnlp/sst2", offline.reachable)
    assert str(err.value) == HUB_UNREACHABLE and asked == []  # an offline server never even probes
    with pytest.raises(ValueError, match="owner/name"):
        read_hub_dataset("../../etc/passwd", lambda: True)


def test_conll_word_labels_are_read_by_sentence():
    text = "-DOCSTART- -X- O O\n\nParis\tB-LOC\nis\tO\n\n\nAda\tB-PER\nwrote O O O\n"
    assert parse_conll(text) == [(["Paris", "is"], ["B-LOC", "O"]), (["Ada", "wrote"], ["B-PER", "O"])]
    with pytest.raises(ValueError, match="line 3: the word has 12 characters or a space"):
        parse_conll("Paris\tB-LOC\n\nAda Lovelace\tB-PER\n")


@pytest.mark.parametrize("text, refusal", [
    ("Paris\n", "line 1: write the word, a tab, then its tag"),
    ("a\tO\nb\tO\n", "Only one tag ('O')"),
    ("".join(f"w\tT{i}\n" for i in range(21)), "line 21: tag 'T20' is a 21st tag; at most 20"),
    ("".join("w\tO\n" if i % 2 else "w\tX\n" for i in range(201)), "line 201: the sentence has more than 200 words"),
    ("w\tO\n\n" * 5000 + "w\tX\n", "line 10,002: more than 5,000 sentences"),
])
def test_each_conll_refusal_names_the_line_and_the_rule(text, refusal):
    with pytest.raises(ValueError) as err:
        parse_conll(text)
    assert refusal in str(err.value)


def test_the_csv_export_defuses_every_formula_cell():
    assert [defuse(c) for c in ("=1+1", "+3", "-2", "@SUM(A1)", "\tx", "\rx", "plain", "a\nb")] == [
        "'=1+1", "'+3", "'-2", "'@SUM(A1)", "'\tx", "' x", "plain", "a b"]
    data = OwnData(["=HYPERLINK(\"http://x\")", "fine"], [0, 1], ["@neg", "pos"], "")
    rows = list(csv.reader(io.StringIO(data_csv(data, predictions=["-pos", "pos"]))))
    assert rows == [["label", "text", "prediction"], ["'@neg", "'=HYPERLINK(\"http://x\")", "'-pos"],
                    ["pos", "fine", "pos"]]


def test_the_result_says_when_a_lead_is_within_the_spread_and_escapes_label_names():
    from bertdemo.finetune.own_eval import compare
    from bertdemo.viz.own_data import result_markdown

    acc = {"finetuned": [0.75, 0.5, 1.0, 0.5, 0.75], "majority": [0.5] * 5, "bag_of_words": [0.0, 0.25, 0.0, 0.25, 0.0]}
    summary = {k: {"mean": sum(v) / 5, "std": 0.1} for k, v in acc.items()}
    result = {"mode": "cross-validation", "folds": 5, "folds_done": 5, "examples": 20, "init": "random",
              "counts": {"<b>neg</b>": 10, "pos": 10}, "source": "20 pasted lines", "accuracy": acc,
              "summary": summary, "comparisons": {k: compare(acc["finetuned"], acc[k]) for k in ("majority", "bag_of_words")}}
    text = result_markdown(result, "r1")
    assert "+20 points against the majority class: **within the spread**" in text
    assert "+60 points against the bag of words: beyond the spread" in text
    assert "random weights of the same shape" in text and "<b>" not in text
    assert "| fine-tuned | **70%** | ±10% | 75% · 50% · 100% · 50% · 75% |" in text


# --- inputs read as a person means them (issue 52) ---------------------------------------------------------------

MORE_SENTENCES = "".join(f"\n{city}\tLOC\nok\tO\n" for city in ("Rome", "Lyon", "Nice", "Oslo"))


def _rows(n: int = 4) -> str:
    return "label,text\n" + "".join(f"{label},{label} thing number {i}\n" for label in ("pos", "neg") for i in range(n))


@pytest.mark.parametrize("encoding, bom", [("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"),
                                           ("utf-16-be", b"\xfe\xff")])
def test_excels_csv_utf8_with_a_bom_and_utf16_files_are_read_by_their_bom(tmp_path, encoding, bom):
    path = tmp_path / "excel.csv"
    path.write_bytes(bom + (_rows() + "pos,café au lait\n").encode(encoding))
    data = read_table(path, cache_dir=tmp_path)
    assert data.names == ["neg", "pos"] and data.counts() == {"neg": 4, "pos": 5}
    assert data.texts[-1] == "café au lait"
    assert data.source == "file excel.csv, 9 rows: column 'text' (text) and 'label' (label)"


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_a_file_whose_lines_end_with_cr_or_cr_lf_is_read(tmp_path, ending):
    path = tmp_path / "mac.csv"  # classic Mac (CR alone) and Windows (CR LF) line ends
    path.write_bytes((_rows() + "pos,café au lait\n").replace("\n", ending).encode("utf-8"))
    data = read_table(path, cache_dir=tmp_path)
    assert data.counts() == {"neg": 4, "pos": 5} and data.texts[-1] == "café au lait"


def test_a_file_that_is_not_utf8_is_refused_naming_the_line_and_the_rule(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes((_rows() + "pos,café au lait\n").encode("latin-1"))  # Excel's plain "CSV" on Windows
    with pytest.raises(ValueError) as err:
        read_table(path, cache_dir=tmp_path)
    assert str(err.value).startswith("line 10: byte 0xE9 is not UTF-8")
    assert "CSV UTF-8" in str(err.value) and "generating the dataset" not in str(err.value)


def test_a_semicolon_separated_csv_is_read_and_says_so(tmp_path):
    path = tmp_path / "semicolon.csv"  # Excel's CSV where the decimal mark is a comma
    path.write_text(_rows().replace(",", ";") + "pos;one, two and three\n")
    data = read_table(path, cache_dir=tmp_path)
    assert data.counts() == {"neg": 4, "pos": 5} and data.texts[-1] == "one, two and three"
    assert data.source == ("file semicolon.csv, 9 rows (separated by semicolons): column 'text' (text) and "
                           "'label' (label)")
    one = tmp_path / "one.csv"
    one.write_text("label text\npos x\n")
    with pytest.raises(ValueError, match="separated by commas"):  # the rule a one-column header breaks
        read_table(one, cache_dir=tmp_path)


def test_a_pasted_bom_never_reaches_a_label_or_a_tag():
    data = parse_lines("\ufeff" + lines(two_labels(4)))
    assert data.names == ["neg", "pos"]
    words = own_data.parse_words("\ufeffParis\tLOC\nis\tO\nbig\tO\n" + MORE_SENTENCES)
    assert words.names == ["LOC", "O"] and words.words[0][0] == "Paris"


def test_copies_of_one_text_are_counted_grouped_and_named():
    pairs = two_labels(4) + [("pos", "Good  THING 0"), ("pos", "good thing 0"), ("neg", "bad thing 3")]
    data = parse_lines(lines(pairs))
    groups = data.groups()
    assert groups[8] == groups[9] == groups[0] and groups[10] == groups[7]  # case and spacing ignored
    assert len(set(groups)) == 8 and data.copies() == 3
    assert data.source == "11 pasted lines (3 copies of an earlier line: each text's copies are held out together)"
    assert parse_lines(lines(two_labels(4))).copies() == 0


def test_a_label_needs_four_different_texts_not_four_copies():
    with pytest.raises(ValueError) as err:
        parse_lines(lines([("good", "good film")] * 20 + [("bad", "bad film")] * 20))
    assert str(err.value) == ("line 1: label 'good' has 20 examples but 1 different text; each label needs at least "
                              "4 different texts (2 labels have fewer).")


def test_copied_sentences_of_word_labels_are_grouped():
    sentence = "Paris\tLOC\nis\tO\n"
    data = own_data.parse_words(sentence + "\n" + sentence.upper() + MORE_SENTENCES)
    assert data.groups() == [0, 0, 2, 3, 4, 5] and data.copies() == 1  # case aside
    assert data.source == ("6 pasted sentences (12 words; 1 copy of an earlier sentence: each sentence's copies are "
                           "held out together)")


@pytest.mark.parametrize("word, shown", [("\u200b", "U+200B"), ("\x00", "U+0000"), ("\ufeff", "U+FEFF"),
                                         ("\u200b\u200c", "U+200B U+200C")])
def test_a_word_the_model_reads_nothing_of_is_refused_at_its_line(word, shown):
    with pytest.raises(ValueError) as err:
        own_data.parse_words(f"Paris\tLOC\n{word}\tO\nis\tO\n" + MORE_SENTENCES)
    assert str(err.value) == (f"line 2: the word '{shown}' has no character the model reads (only invisible or "
                              "control characters); write a word or remove the line.")


def test_word_labels_need_five_different_sentences_one_for_each_fold():
    sentence = "Paris\tLOC\nRome\tLOC\nis\tO\nbig\tO\n"
    with pytest.raises(ValueError) as err:
        own_data.parse_words("\n".join([sentence] * 6 + ["Lyon\tLOC\nNice\tLOC\nso\tO\nok\tO\n"]))
    assert str(err.value) == ("Only 2 different sentences (5 copies of an earlier one); word labels need at least 5 "
                              "different sentences, one for each fold of the cross-validation.")

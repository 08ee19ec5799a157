"""The everyday-English corpus of the embedded masked-LM: source parsing and cloze decontamination."""

from __future__ import annotations

import json

import pytest

from bertdemo.tools import everyday_text

WORDNET_HEADER = "  1 This software and database is being provided to you, the LICENSEE, by\n"
WORDNET_LINES = {
    "noun": ('02086723 05 n 01 kettle 0 000 | a metal pot for stewing or boiling; usually has a lid; '
             '"she put the kettle on"; "the kettle boiled"\n'),
    "verb": '01170052 34 v 01 eat 0 000 | take in solid food; "She was eating a banana"\n',
    "adj": "00001740 00 a 01 able(a) 0 000 | having the necessary means or skill\n",
    "adv": '00001740 02 r 01 merely 0 000 | and nothing more; "I was merely asking"\n',
}


@pytest.fixture
def wordnet_dir(tmp_path):
    for pos, line in WORDNET_LINES.items():
        (tmp_path / f"data.{pos}").write_text(WORDNET_HEADER + line, encoding="latin-1")
    return tmp_path


def test_wordnet_examples_and_glosses_become_sentences(wordnet_dir):
    examples, glosses = everyday_text.wordnet_docs(wordnet_dir)
    assert examples == ["She put the kettle on. The kettle boiled.", "She was eating a banana.",
                        "I was merely asking."]
    assert glosses == [
        "A kettle is a metal pot for stewing or boiling; usually has a lid.",
        "To eat is to take in solid food.",
        "Able means having the necessary means or skill.",
        "Merely means and nothing more.",
    ]


def test_missing_sources_say_how_to_install_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install wordnet-base"):
        everyday_text.wordnet_docs(tmp_path)
    with pytest.raises(FileNotFoundError, match="apt-get install fortunes"):
        everyday_text.fortune_docs(tmp_path)


def test_fortune_cookies_are_split_on_percent_lines(tmp_path):
    (tmp_path / "fortunes").write_text(
        "A journey of a thousand miles\n  begins with a single step.\n%\nshort\n%\n"
        "Honesty is the best policy, but insanity is a better defense.\n%\n", encoding="utf-8")
    assert everyday_text.fortune_docs(tmp_path, ["fortunes"]) == [
        "A journey of a thousand miles begins with a single step.",
        "Honesty is the best policy, but insanity is a better defense.",
    ]


def test_texts_containing_a_filled_cloze_sentence_are_dropped(tmp_path):
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("# everyday\nThank you very [MASK].\tmuch\nThe sun rises in the [MASK] every day.\teast,morning\n",
                     encoding="utf-8")
    windows = everyday_text.cloze_windows(cloze)
    assert "thank you very much" in windows
    assert "sun rises in the east every day" in windows
    docs = [
        "Well, thank you very much!",  # the filled sentence: dropped
        "Every morning the sun rises in the East every day, they say.",  # dropped (case, punctuation)
        "Thank you very kindly.",  # another word in the slot: kept
        "He rises in the east wing.",  # the words around the answer differ: kept
        "thankyou very much",  # not the same words: kept
    ]
    kept, dropped = everyday_text.decontaminate(docs, windows)
    assert dropped == 2
    assert kept == docs[2:]


def test_build_writes_a_shuffled_jsonl_mix(tmp_path, wordnet_dir, monkeypatch):
    fortunes = tmp_path / "fortunes_dir"
    fortunes.mkdir()
    (fortunes / "fortunes").write_text("Thank you very much, said the cat.\n%\nA friend in need is a friend indeed.\n",
                                       encoding="utf-8")
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("Thank you very [MASK].\tmuch\n", encoding="utf-8")
    monkeypatch.setattr(everyday_text, "WORDNET_DIR", wordnet_dir)
    monkeypatch.setattr(everyday_text, "FORTUNES_DIR", fortunes)
    monkeypatch.setattr(everyday_text, "FORTUNE_FILES", ("fortunes",))
    monkeypatch.setattr(everyday_text, "wiki_summaries", lambda: ["Paris is the capital of France."])
    monkeypatch.setattr(everyday_text, "chatterbot_docs", lambda: ["Hello. Hi, how are you?"])
    out = tmp_path / "mix.jsonl"
    counts = everyday_text.build(out, cloze, weights={"chatterbot": 2}, log=lambda m: None)
    assert counts == {"wiki": 1, "wordnet_examples": 3, "wordnet_glosses": 4, "fortunes": 1, "chatterbot": 1}
    texts = [json.loads(line)["text"] for line in out.read_text(encoding="utf-8").splitlines()]
    weights = {**everyday_text.DEFAULT_WEIGHTS, "chatterbot": 2}
    assert len(texts) == sum(counts[name] * weights[name] for name in counts)
    assert texts.count("Hello. Hi, how are you?") == 2
    assert not any("very much" in t for t in texts)
    assert not list(tmp_path.glob(".mix.jsonl*"))  # no temporary file left behind


def test_tatoeba_pair_files_give_each_distinct_english_sentence_once(tmp_path):
    (tmp_path / "swe.txt").write_text("Hi.\tHej.\nThe dog  barked all night.\tHunden skällde hela natten.\n"
                                      "no tab here\n\tTom.\n", encoding="utf-8")
    (tmp_path / "fin.txt").write_text("The dog barked all night.\tKoira haukkui koko yön.\n"
                                      "She dialed her mother's number.\tHän soitti äidilleen.\tCC-BY 2.0 (France)\n",
                                      encoding="utf-8")
    assert everyday_text.tatoeba_docs([tmp_path / "swe.txt", tmp_path / "fin.txt"]) == [
        "Hi.", "The dog barked all night.", "She dialed her mother's number."]
    with pytest.raises(FileNotFoundError, match="Tatoeba sentence-pair file not found"):
        everyday_text.tatoeba_docs([tmp_path / "eng.txt"])


def test_build_mixes_in_tatoeba_and_stories_only_when_their_files_are_given_and_keeps_the_cloze_out(
        tmp_path, wordnet_dir, monkeypatch):
    fortunes = tmp_path / "fortunes_dir"
    fortunes.mkdir()
    (fortunes / "fortunes").write_text("A friend in need is a friend indeed.\n", encoding="utf-8")
    monkeypatch.setattr(everyday_text, "WORDNET_DIR", wordnet_dir)
    monkeypatch.setattr(everyday_text, "FORTUNES_DIR", fortunes)
    monkeypatch.setattr(everyday_text, "FORTUNE_FILES", ("fortunes",))
    monkeypatch.setattr(everyday_text, "chatterbot_docs", list)
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("The [MASK] barked at the mailman.\tdog\n", encoding="utf-8")
    pairs = tmp_path / "ita.txt"
    pairs.write_text("The dog barked at the mailman.\tIl cane abbaiò al postino.\n"  # a filled cloze sentence
                     "The owl hooted all night.\tIl gufo ha bubolato tutta la notte.\n"
                     "She was eating a banana.\tStava mangiando una banana.\n", encoding="utf-8")  # also WordNet's
    once = {name: 1 for name in everyday_text.DEFAULT_WEIGHTS}  # as the twins' build mixes them
    without = everyday_text.build(tmp_path / "a.jsonl", cloze, weights=once, wiki=[], unique=True, log=lambda m: None)
    assert "tatoeba" not in without and "stories" not in without
    counts = everyday_text.build(tmp_path / "b.jsonl", cloze, weights=once, wiki=[], unique=True, log=lambda m: None,
                                 tatoeba=[pairs])
    texts = [json.loads(line)["text"] for line in (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()]
    assert counts["tatoeba"] == 1 and "The owl hooted all night." in texts
    assert not any("mailman" in t for t in texts)
    assert texts.count("She was eating a banana.") == 1  # a sentence two sources share, once (unique)
    tales = tmp_path / "tales.txt"
    tales.write_text("Tom had a dog. The dog barked at the mailman.\n"  # holds a filled cloze sentence: dropped
                     "Lily found a red ball in the park.\n\nThe owl hooted all night.\n", encoding="utf-8")
    counts = everyday_text.build(tmp_path / "c.jsonl", cloze, weights=once, wiki=[], unique=True, log=lambda m: None,
                                 tatoeba=[pairs], stories=[tales])
    texts = [json.loads(line)["text"] for line in (tmp_path / "c.jsonl").read_text(encoding="utf-8").splitlines()]
    assert counts["stories"] == 1 and "Lily found a red ball in the park." in texts
    assert texts.count("The owl hooted all night.") == 1 and not any("mailman" in t for t in texts)

"""The cloze evaluation command: parsing (and refusing) cloze files, scoring, the last-line format."""

import re

import pytest

from bertdemo.tools import eval_cloze


def _write(tmp_path, text: str):
    path = tmp_path / "cloze.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_parses_comments_blank_lines_and_answer_lists(tmp_path):
    path = _write(tmp_path, "# a comment\n\nNice to [MASK] you.\tmeet, See ,\nThe sun rises in the [mask].\teast\n")
    items = eval_cloze.read_cloze(path)
    assert [(i.sentence, i.answers, i.line) for i in items] == [
        ("Nice to [MASK] you.", ["meet", "see"], 3),
        ("The sun rises in the [mask].", ["east"], 4),
    ]


@pytest.mark.parametrize("text, message", [
    ("Nice to [MASK] you. meet\n", "expected 'sentence<TAB>answers'"),
    ("[MASK] to [MASK] you.\tmeet\n", "exactly one \\[MASK\\]"),
    ("Nice to meet you.\tmeet\n", "exactly one \\[MASK\\]"),
    ("Nice to [MASK] you.\t , \n", "no answers"),
    ("# only a comment\n\n", "no cloze sentences"),
])
def test_refuses_malformed_files(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        eval_cloze.read_cloze(_write(tmp_path, text))


def test_bad_file_is_an_error_exit_not_a_traceback(tmp_path, capsys):
    assert eval_cloze.main(["--file", str(_write(tmp_path, "no tab here\n"))]) == 2
    assert "error:" in capsys.readouterr().err
    assert eval_cloze.main(["--file", str(tmp_path / "missing.tsv")]) == 2


def test_prints_one_line_per_sentence_and_the_scores_last(tmp_path, tiny_mlm_dir, capsys):
    path = _write(tmp_path, "Nice to [MASK] you.\tmeet\nThe sun rises in the [MASK].\teast,morning\n")
    assert eval_cloze.main(["--file", str(path), "--model", str(tiny_mlm_dir)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("# model: ")
    assert len(lines) == 4 and all(re.match(r"\[[15-]\] ", line) for line in lines[1:3])
    assert re.fullmatch(r"top1=\d\.\d\d top5=\d\.\d\d n=2", lines[-1])


def test_evaluate_counts_hits(tiny_loaded):
    item = eval_cloze.ClozeItem("Nice to [MASK] you.", [], 1)
    from bertdemo.explore import fill_mask

    guesses = [c.text for c in fill_mask.predict(tiny_loaded, item.sentence, top_k=5).masks[0].candidates]
    item.answers = [guesses[0]]
    other = eval_cloze.ClozeItem("Nice to [MASK] you.", [guesses[4]], 2)
    never = eval_cloze.ClozeItem("Nice to [MASK] you.", ["zzzz-not-a-word"], 3)
    import io

    score = eval_cloze.score_cloze(tiny_loaded, [item, other, never], out=io.StringIO())
    assert (score.top1, score.n) == (pytest.approx(1 / 3), 3)
    assert score.top5 == pytest.approx(2 / 3)

"""The Learn step "one vector per word, one label per word": its numbers come from the model in use and the
labels the loss reads, and its code prints the same."""

from __future__ import annotations

import contextlib
import io

from bertdemo.learn import path as learn_path

TEXT = "Yesterday Marie Curie visited Ouagadougou."


def test_the_names_step_labels_first_pieces_and_its_code_prints_its_numbers(tiny_loaded, tiny_mlm_dir):
    a = learn_path.answer(tiny_loaded, "names", TEXT, model_ref=str(tiny_mlm_dir))
    pieces = tiny_loaded.tokenizer.tokenize(TEXT)
    assert a.numbers["words"] == 6 and a.numbers["pieces"] == len(pieces) + 2
    assert a.numbers["names"] == 3  # Marie, Curie, Ouagadougou (Yesterday: the first word, no label)
    assert a.numbers["labelled_pieces"] == 4  # one per labelled word: visited is O
    assert a.numbers["hidden"] == 32 and a.numbers["head_parameters"] == 32 * 2 + 2
    assert "ouagadougou" not in pieces and "| Ouagadougou | NAME |" in a.answer
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(a.code, "<snippet>", "exec"), {})  # noqa: S102 - our own generated code
    assert out.getvalue().split() == ["(1,", f"{a.numbers['pieces']},", "32)", "(1,", f"{a.numbers['pieces']},", "2)",
                                      "4"]

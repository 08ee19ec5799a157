"""What the teacher sees is what happened (issue 52, walk D5, D16, D17):

- a student's text (nickname, guess) is shown as text in the teacher's view, the student's own line and the CSV:
  no Markdown, no link, no remote image, no table row of its own, no formula;
- the class records the model's answer and the grade the server computes from the step, the sentence and the model:
  the truth and the "right" a browser keeps (its localStorage, the page's state) are never read;
- the CSV's times are read as UTC date and time, a count as "13", and a code with 0 or 1 is refused saying why.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
from markdown_it import MarkdownIt

from bertdemo.classroom.db import Database
from bertdemo.classroom.report import ClassReport, Participant, QuestionSpread, class_report, csv_text, defuse
from bertdemo.classroom.store import ClassLimits, ClassStore
from bertdemo.learn import predictions
from bertdemo.ui.class_tab import membership_markdown, report_markdown

HOSTILE_NICKNAMES = [
    "![n](http://127.0.0.1:7889/nick.png)",  # a remote image the teacher's browser would fetch
    "[pwn](javascript:alert(1)) **Bo|b**",  # a link, bold, a pipe
    '=HYPERLINK("http://evil.example/?leak","x")',  # an autolink inside
    "www.evil.example",  # an autolink without a scheme
    "kid@evil.example",  # an e-mail autolink
    "$$\\href{http://x}{y}$$",  # LaTeX
    "<img src=x onerror=alert(1)>",  # HTML
    "`code` _em_ ~~gone~~ &amp; #h",  # code, emphasis, strike-through, an entity
]
HOSTILE_GUESSES = ["x\n=1+1", "a|b", "![g](http://127.0.0.1:7889/guess.png)", "line\u2028sep\rend"]
HOSTILE_TRUTH = "![t](http://127.0.0.1:7889/truth.png)"


def _plain(text: str) -> str:
    """What a person reads of ``text`` shown on one line: its words, one space between them."""
    return " ".join(text.split())


def _tables(markdown: str) -> list[list[list[list]]]:
    """Every table of ``markdown`` as rendered: rows of cells, each cell its inline tokens."""
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(markdown)
    tables, row = [], None
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
            tables[-1].append(row)
        elif token.type == "inline" and row is not None:
            row.append(token.children or [])
        elif token.type == "table_close":
            row = None
    return tables


def _text(cell: list) -> str:
    return "".join(t.content for t in cell)


def _markup_free(markdown: str) -> None:
    """No character sequence a Markdown renderer with GFM autolinks or LaTeX reads as a link or a formula."""
    for sequence in ("http:", "https:", "javascript:", "www.", "@", "$$", "](", "<img", "\n="):
        assert sequence not in markdown, sequence


def _hostile_report() -> ClassReport:
    report = ClassReport("Year 12 ![c](http://127.0.0.1:7889/class.png)", "ABC234")
    report.participants = [Participant(n, 0.0, 0.0, True, 1, 1, 0) for n in HOSTILE_NICKNAMES]
    report.questions = [QuestionSpread("attention", "attention.top-token", HOSTILE_TRUTH, 0, len(HOSTILE_GUESSES),
                                       [(g, 1) for g in HOSTILE_GUESSES])]
    report.runs = [(HOSTILE_NICKNAMES[0], "20261201-221129-run", "pretrain")]
    return report


def test_student_text_is_shown_as_text_in_the_teachers_view():
    markdown = report_markdown(_hostile_report(), [])
    _markup_free(markdown)
    people, _funnel, answers, _gains, runs = _tables(markdown)
    assert len(people) == 1 + len(HOSTILE_NICKNAMES)  # the header, then one row per student: none split or added
    for row, nick in zip(people[1:], HOSTILE_NICKNAMES):
        assert len(row) == 5 and _text(row[0]) == _plain(nick)
        assert {t.type for cell in row for t in cell} == {"text"}, nick  # no link, image, emphasis, code, HTML
    (_header, question), = [answers]
    assert len(question) == 5 and {t.type for cell in question for t in cell} == {"text"}
    assert _text(question[3]) == HOSTILE_TRUTH
    # the step as its students read it ("3. …?"), not its key and the question's id ("attention · attention.top-token")
    from bertdemo.learn import steps as learn_steps

    assert _text(question[0]) == learn_steps.step_label(learn_steps.step("attention"))
    # the funnel's steps and the concept check's items in the learners' words too
    from bertdemo.classroom.report import ItemGain
    from bertdemo.learn import concept_check

    report = _hostile_report()
    report.funnel = [("embeddings", 2)]
    first = concept_check.items()[0]
    report.gains = [ItemGain(first.id, 2, 50.0, 100.0, 1.0), ItemGain("retired-item", 1, 0.0, 0.0, None)]
    _people, funnel, _answers, gains, _runs = _tables(report_markdown(report, []))
    assert _text(funnel[1][0]) == learn_steps.step_label(learn_steps.step("embeddings"))
    assert [_text(row[0]) for row in gains[1:]] == [f"1. {first.misconception}", "retired-item"]
    assert _text(question[4]) == ", ".join(f"{_plain(g)} × 1" for g in HOSTILE_GUESSES)
    assert _text(runs[1][0]) == HOSTILE_NICKNAMES[0] and {t.type for t in runs[1][0]} == {"text"}


def test_the_students_own_line_shows_their_nickname_as_text():
    for nick in HOSTILE_NICKNAMES:
        markdown = membership_markdown("Year 12 [x](http://evil.example)", nick, [("run-1", "pretrain")])
        _markup_free(markdown)
        (paragraph,) = [t for t in MarkdownIt("commonmark").parse(markdown) if t.type == "inline"]
        kinds = {t.type for t in paragraph.children}
        assert kinds <= {"text", "strong_open", "strong_close"}, (nick, kinds)  # the page's own bold, nothing else
        assert _plain(nick) in _text(paragraph.children)


@pytest.fixture
def store(tmp_path):
    made = ClassStore(Database.in_folder(tmp_path / "runs"), ClassLimits(), clock=lambda: 1_764_627_089.0)
    yield made
    made.db.close()


def test_the_csv_keeps_each_record_on_one_line_and_defuses_every_formula(store):
    new = store.create_class("c")
    eve = store.join(new.join_code, "Eve")
    typed = {" =1+1": "'=1+1", "\u200b=1+1": "'=1+1", "\uff1d1+1": "'\uff1d1+1", '"=1+1': "'\"=1+1",
             "\t=1+1": "'=1+1", "|pipe": "'|pipe", "x\n=1+1": "x =1+1", "-2+3": "'-2+3", "@SUM(1)": "'@SUM(1)"}
    for i, guess in enumerate(typed):
        store.record_answer(eve.token, "attention", f"q{i}", guess, "cat", False)
    text = csv_text(store, new.teacher_key)
    assert len(text.splitlines()) == 1 + len(typed)  # one line per record: no cell spans two
    rows = list(csv.reader(io.StringIO(text)))
    assert all(len(row) == 8 for row in rows)
    assert [row[4] for row in sorted(rows[1:], key=lambda row: row[3])] == list(typed.values())
    assert defuse("\ufeff+1") == "'+1" and defuse("line\n=1") == "line =1"  # a value kept before this rule, too


def test_the_csv_gives_utc_times_and_a_count_as_a_whole_number(store):
    new = store.create_class("c")
    ada = store.join(new.join_code, "Ada")
    store.record_answer(ada.token, "embeddings", "embeddings.token-count", 13.0, 13.0, True)
    store.record_check(ada.token, "pre", "m1", True)
    header, answer, check = list(csv.reader(io.StringIO(csv_text(store, new.teacher_key))))
    assert "UTC" in header[7]
    when = datetime.fromtimestamp(1_764_627_089.0, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert answer[7] == check[7] == when == "2025-12-01 22:11:29"
    assert answer[4:7] == ["13", "13", "1"]
    assert [r[2:4] for r in store.own_answers(ada.token)] == [("13", "13")]
    (question,) = class_report(store, new.teacher_key).questions
    assert (question.truth, question.guesses) == ("13", [("13", 1)])


@pytest.mark.parametrize("typed", ["AB0CD2", "ab1cd2", "AB-CD-10"])
def test_a_code_with_0_or_1_is_refused_saying_those_are_never_used(store, typed):
    with pytest.raises(ValueError) as refused:
        store.class_of_code(typed)
    message = str(refused.value)
    assert "0" in message and "1" in message and "never" in message


# --- the server grades ----------------------------------------------------------------------------------------

SENTENCE = "The cat sat on the mat."


@pytest.fixture
def ctx(tmp_path):
    from bertdemo.context import AppContext

    made = AppContext.for_tests(tmp_path)
    yield made
    made.classes.close()


def _token_count(ctx) -> int:
    return len(ctx.models.get().tokenizer(SENTENCE)["input_ids"])


def test_the_class_records_the_truth_and_grade_the_server_computes(ctx):
    """A browser that claims "FORGED TRUTH" and "right" (F3), or keeps `correct: true` for a step it never
    answered (D17), changes nothing: the server asks the step again on the sentence and model, and grades."""
    from bertdemo.ui.class_tab import send_learning

    store = ctx.classes.store
    new = store.create_class("Year 12")
    ada, bob = store.join(new.join_code, "Ada"), store.join(new.join_code, "Bob")
    count = _token_count(ctx)
    forged = {"step": "embeddings", "id": "embeddings.token-count", "kind": predictions.NUMBER,
              "truth": "FORGED TRUTH", "tolerance": 1e9, "choices": [], "prompt": "", "reveal": "", "unit": ""}
    answer = {"step": "embeddings", "text": SENTENCE, "model_name": ctx.models.get().name, "prediction": forged}
    never_answered = {"question": "order.shuffle-without-positions", "guess": "Yes", "truth": "FORGED TRUTH",
                      "correct": True}
    asked = predictions.asking("embeddings", SENTENCE, ctx.models.get().name)  # the asking the browser guessed on
    for who, guess in ((ada, count + 5), (bob, count)):
        progress = predictions.empty_progress()
        progress["answers"] = {"embeddings": {"question": "embeddings.token-count", "guess": guess,
                                              "truth": "FORGED TRUTH", "correct": True, "asked": asked},
                               "order": never_answered}
        send_learning(ctx, progress, who.token, answer)
    assert [r[:5] for r in store.own_answers(ada.token)] == [
        ("embeddings", "embeddings.token-count", str(count + 5), str(count), 0)]
    assert [r[:5] for r in store.own_answers(bob.token)] == [
        ("embeddings", "embeddings.token-count", str(count), str(count), 1)]
    report = class_report(store, new.teacher_key)
    (question,) = report.questions  # the never-answered step is no answer at all
    assert (question.truth, question.right, question.wrong) == (str(count), 1, 1)
    assert "FORGED" not in report_markdown(report, [])
    assert dict(report.funnel) == {"embeddings": 2, "order": 2}  # reaching a step is the browser's to say

    # a guess the browser keeps for another sentence is not this sentence's answer
    cyd = store.join(new.join_code, "Cyd")
    progress = predictions.empty_progress()
    progress["answers"] = {"embeddings": {"question": "embeddings.token-count", "guess": count, "truth": count,
                                          "correct": True,
                                          "asked": predictions.asking("embeddings", "Another one.", answer["model_name"])}}
    send_learning(ctx, progress, cyd.token, answer)
    assert store.own_answers(cyd.token) == []


def test_a_guess_that_is_none_of_the_questions_choices_is_not_recorded(ctx):
    from bertdemo.ui.class_tab import send_learning

    store = ctx.classes.store
    new = store.create_class("Year 12")
    ada = store.join(new.join_code, "Ada")
    answer = {"step": "order", "text": SENTENCE, "model_name": ctx.models.get().name}
    progress = predictions.empty_progress()
    progress["answers"] = {"order": {"question": "order.shuffle-without-positions", "guess": "x\n=1+1",
                                     "truth": "x", "correct": True}}
    send_learning(ctx, progress, ada.token, answer)
    assert store.own_answers(ada.token) == []


def test_a_why_the_b_guess_reaches_the_class_graded_on_the_steps_own_twins(ctx):
    """"Why the B in BERT?" is answered by the shipped twins, whatever the model box says: its answer names them, and
    the class asks it again on the model the request loaded (the twins' joint name was sent as one model to load, and
    every guess on the step was refused: "No such folder")."""
    from bertdemo.learn import path as learn_path
    from bertdemo.ui.class_tab import send_learning

    store = ctx.classes.store
    ada = store.join(store.create_class("Year 12").join_code, "Ada")
    answer = learn_path.answer(ctx.models.get(), "why-b", "The [dog] barked at the mailman all night.").to_json()
    assert answer["answered_by"] == "embedded/twin-mlm and embedded/twin-ltr"
    assert answer["model_name"] == ctx.models.get().name
    question = answer["prediction"]
    progress = predictions.empty_progress()
    progress["answers"] = {"why-b": predictions.grade(question, question["truth"]) | {"asked": question["asked"]}}
    send_learning(ctx, progress, ada.token, answer)
    assert [r[:5] for r in store.own_answers(ada.token)] == [
        ("why-b", question["id"], question["truth"], question["truth"], 1)]

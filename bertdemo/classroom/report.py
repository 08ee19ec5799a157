"""What the teacher sees of a class, computed from the store's rows (:func:`class_report`): who joined and who
is active, how many reached each Learn step (the funnel), each question's answers (right, wrong, the spread of
guesses), the concept check's gain per item (Hake's normalised gain), the members' runs; and the CSV of it all
(:func:`csv_text`: one line per record, times in UTC, cells a spreadsheet would run as a formula defused)."""

from __future__ import annotations

import csv
import io
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bertdemo.classroom.store import ACTIVE_S, ClassStore, one_line

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "|")


@dataclass(frozen=True)
class Participant:
    nickname: str
    joined: float
    seen: float
    active: bool  # seen within ACTIVE_S
    steps: int  # Learn steps reached
    answered: int
    right: int


@dataclass(frozen=True)
class QuestionSpread:
    step_id: str
    question_id: str
    truth: str  # the model's answer most often recorded (one per question, unless the sentences differed)
    right: int
    wrong: int
    guesses: list[tuple[str, int]]  # each guess and how many gave it, most given first


@dataclass(frozen=True)
class ItemGain:
    item_id: str
    students: int  # who took the item both before and after (the gain is over them alone)
    pre: float  # % right before
    post: float  # % right after
    gain: float | None  # Hake's <g> = (post - pre) / (100 - pre); None when everyone was right before


@dataclass
class ClassReport:
    name: str
    join_code: str
    participants: list[Participant] = field(default_factory=list)
    funnel: list[tuple[str, int]] = field(default_factory=list)  # (step id, members who reached it), path order
    questions: list[QuestionSpread] = field(default_factory=list)
    gains: list[ItemGain] = field(default_factory=list)
    runs: list[tuple[str, str, str]] = field(default_factory=list)  # (nickname, run id, kind)
    class_id: str = ""  # the class's id (its places on the server are counted by it)


def hake_gain(pre: float, post: float) -> float | None:
    """Hake's normalised gain of class averages in percent: (post − pre) / (100 − pre); None when pre is 100."""
    return None if pre >= 100 else (post - pre) / (100 - pre)


def class_report(store: ClassStore, teacher_key: str, step_order: list[str] | None = None,
                 now: float | None = None) -> ClassReport:
    """The report of the class whose teacher key this is (ValueError for any other key). ``step_order``:
    the Learn path's step ids in order (the funnel's order; steps not in it follow by name)."""
    class_id, name, code = store.class_of_teacher(teacher_key)
    now = store.clock() if now is None else now
    members = store.rows(class_id, "members")
    answers = store.rows(class_id, "answers")
    progress = store.rows(class_id, "progress")
    report = ClassReport(name, code, class_id=class_id)
    steps = Counter(nick for nick, *_ in progress)
    answered = Counter(row[0] for row in answers)
    right = Counter(row[0] for row in answers if row[5])
    report.participants = [Participant(nick, joined, seen, now - seen <= ACTIVE_S, steps[nick], answered[nick],
                                       right[nick]) for nick, _id, joined, seen in members]
    reached = Counter(step for _nick, step, _at in progress)
    order = {step: i for i, step in enumerate(step_order or [])}
    report.funnel = sorted(reached.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    by_question: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for row in answers:
        by_question[(row[1], row[2])].append(row)
    for (step, question), rows in sorted(by_question.items(), key=lambda kv: (order.get(kv[0][0], len(order)), kv[0])):
        ok = sum(1 for r in rows if r[5])
        truth = Counter(r[4] for r in rows).most_common(1)[0][0]
        report.questions.append(QuestionSpread(step, question, truth, ok, len(rows) - ok,
                                               Counter(r[3] for r in rows).most_common()))
    report.gains = item_gains(store.rows(class_id, "checks"))
    report.runs = [(nick, run_id, kind) for nick, run_id, kind, _at in store.rows(class_id, "member_runs")]
    return report


def item_gains(checks: list[tuple]) -> list[ItemGain]:
    """Per concept-check item, over the members who took it before and after: % right each time and Hake's ⟨g⟩.
    ``checks``: (nickname, phase, item id, correct, at) rows."""
    taken: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: {"pre": {}, "post": {}})
    for nick, phase, item, correct, _at in checks:
        taken[item][phase][nick] = int(correct)
    gains = []
    for item in sorted(taken):
        both = sorted(set(taken[item]["pre"]) & set(taken[item]["post"]))
        if not both:
            continue
        pre = 100.0 * sum(taken[item]["pre"][n] for n in both) / len(both)
        post = 100.0 * sum(taken[item]["post"][n] for n in both) / len(both)
        gains.append(ItemGain(item, len(both), pre, post, hake_gain(pre, post)))
    return gains


def defuse(cell: object) -> str:
    """A CSV cell a spreadsheet shows as text, on one line: a cell that could start a formula gets a leading
    apostrophe — read past leading spaces, quotes and invisible characters, with full-width signs (＝, ＋) read as
    theirs, as some spreadsheets read them."""
    text = one_line(cell)
    head = unicodedata.normalize("NFKC", text).lstrip(" \"'\u200b\u200c\u200d\u2060\ufeff")
    return "'" + text if head.startswith(FORMULA_START) else text


def utc_time(at: float) -> str:
    """A stored time (Unix seconds) as a person and a spreadsheet read it: ``2025-12-01 22:11:29``, in UTC."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S")


def csv_text(store: ClassStore, teacher_key: str) -> str:
    """Every answer and check of the class as CSV rows (record, nickname, step or phase, question or item,
    guess, truth, correct, at in UTC), each on one line, every cell defused."""
    class_id, _name, _code = store.class_of_teacher(teacher_key)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["record", "nickname", "step_or_phase", "question_or_item", "guess", "truth", "correct",
                     "at (UTC)"])
    for nick, step, question, guess, truth, correct, at in store.rows(class_id, "answers"):
        writer.writerow([defuse(c) for c in ("answer", nick, step, question, guess, truth, int(correct), utc_time(at))])
    for nick, phase, item, correct, at in store.rows(class_id, "checks"):
        writer.writerow([defuse(c) for c in ("check", nick, phase, item, "", "", int(correct), utc_time(at))])
    return out.getvalue()

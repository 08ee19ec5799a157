"""The Learn tab's concept check: a few multiple-choice items, each aimed at one known misconception about BERT
(``concept_check.json`` beside this module: the question, the choices, the right one, and why), taken before
and after the path. Graded exactly (the chosen index against the item's), with the learner's own change and
Hake's normalised gain g = (after − before) / (100 % − before). Torch-free, gradio-free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

ITEMS_FILE = Path(__file__).with_name("concept_check.json")
BEFORE, AFTER = "before", "after"
WHEN = (BEFORE, AFTER)


@dataclass(frozen=True)
class Item:
    id: str
    misconception: str
    question: str
    choices: tuple[str, ...]
    answer: int  # index into choices
    explanation: str
    shown: tuple[int, ...] = ()  # the order the page shows the choices in (indices into choices)

    def shown_choices(self) -> tuple[str, ...]:
        """The choices as the page lists them: the right one's place varies from item to item (it was second in
        every item, the stored answers' indices stay as they were)."""
        return tuple(self.choices[i] for i in (self.shown or range(len(self.choices))))


@lru_cache(maxsize=1)
def items() -> tuple[Item, ...]:
    """The items, in order, checked: unique ids, a right answer among the choices."""
    raw = json.loads(ITEMS_FILE.read_text(encoding="utf-8"))["items"]
    out = tuple(Item(r["id"], r["misconception"], r["question"], tuple(r["choices"]), int(r["answer"]),
                     r["explanation"], tuple(r.get("shown", ()))) for r in raw)
    if len({i.id for i in out}) != len(out) or any(not 0 <= i.answer < len(i.choices) for i in out):
        raise ValueError(f"{ITEMS_FILE.name}: item ids must be unique and each answer one of its choices.")
    if any(i.shown and sorted(i.shown) != list(range(len(i.choices))) for i in out):
        raise ValueError(f"{ITEMS_FILE.name}: an item's 'shown' order must list each of its choices once.")
    return out


def clean_answers(value: Any) -> dict:
    """{"before": {item id: chosen index}, "after": {…}} from whatever a browser sent (unknown ids, indices out
    of range and anything else dropped)."""
    out: dict[str, dict[str, int]] = {}
    if not isinstance(value, dict):
        return out
    for when in WHEN:
        given = value.get(when)
        if not isinstance(given, dict):
            continue
        kept = {i.id: int(given[i.id]) for i in items()
                if isinstance(given.get(i.id), int) and not isinstance(given.get(i.id), bool)
                and 0 <= given[i.id] < len(i.choices)}
        if kept:
            out[when] = kept
    return out


def chosen_indices(choices: list[str | None]) -> dict[str, int]:
    """The page's radio values (choice texts, in item order; None unanswered) as {item id: index}."""
    if len(choices) != len(items()):
        raise ValueError(f"The concept check has {len(items())} items; got {len(choices)} answers.")
    out = {}
    for item, choice in zip(items(), choices):
        if choice is None or choice == "":
            continue
        if choice not in item.choices:
            raise ValueError(f"{choice!r} is not a choice of the item {item.id!r}.")
        out[item.id] = item.choices.index(choice)
    return out


def score(answers: dict[str, int]) -> int:
    """How many items are answered right (an unanswered item counts as wrong)."""
    return sum(1 for i in items() if answers.get(i.id) == i.answer)


def hake_gain(before: float, after: float) -> float | None:
    """Hake's normalised gain from two fractions in [0, 1]: (after − before) / (1 − before); None when
    ``before`` is already 1 (nothing left to gain)."""
    if before >= 1:
        return None
    return (after - before) / (1 - before)


def records(concept: dict) -> list[dict]:
    """Each graded item as a row {step, question, guess, truth, correct} (step "concept-check:before" / ":after")."""
    rows = []
    for when in WHEN:
        answers = concept.get(when) or {}
        if not answers:
            continue
        for i in items():
            guess = answers.get(i.id)
            rows.append({"step": f"concept-check:{when}", "question": i.id,
                         "guess": None if guess is None else i.choices[guess], "truth": i.choices[i.answer],
                         "correct": None if guess is None else guess == i.answer})
    return rows


def report(concept: dict, when: str) -> str:
    """Markdown: the score just taken, each item's verdict with its explanation, and the change from
    before to after once both are taken."""
    n = len(items())
    answers = concept.get(when) or {}
    lines = [f"**{score(answers)} of {n}** right ({'before' if when == BEFORE else 'after'} the path)."]
    before, after = concept.get(BEFORE), concept.get(AFTER)
    if before and after:
        b, a = score(before) / n, score(after) / n
        g = hake_gain(b, a)
        lines.append(f"Before the path **{score(before)}**, after **{score(after)}**: "
                     f"{'+' if a >= b else '−'}{abs(a - b):.0%}; normalised gain (Hake's g) = "
                     + ("— (everything was right before)" if g is None else f"**{g:.2f}**")
                     + ". Hake's 62 courses: 0.23 on average for lecture teaching, 0.48 for interactive teaching.")
    elif when == BEFORE:
        lines.append("Take it again *after the path* to see your change.")
    for number, i in enumerate(items(), start=1):
        got = answers.get(i.id)
        mark = "right" if got == i.answer else "wrong" if got is not None else "not answered"
        lines.append(f"**{number}. {i.question}** ({mark}) Right answer: *{i.choices[i.answer]}*"
                     + ("" if got is None or got == i.answer else f"; you: *{i.choices[got]}*")
                     + f"  \n{i.explanation}")
    return "\n\n".join(lines)

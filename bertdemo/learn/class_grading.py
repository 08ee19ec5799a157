"""A Learn guess as a class records it: graded on the server.

The learner's page keeps its progress (each step's guess, the model's answer it was shown, whether the guess was
right) in the browser, where anyone can write anything, and sends it to their class. What the teacher sees must be
what happened, so the class reads only the guess from it: :func:`asked_again` computes the step's question again on
the server, from the step, the learner's sentence and the model, as the step's own answer does (the live-run
question from the learner's own run, as the Learn tab grades it), and :func:`graded` grades the kept guess against
that truth (:func:`bertdemo.learn.predictions.grade`). A truth or a "right" sent by the browser is never read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bertdemo.learn import path, predictions
from bertdemo.learn.steps import STEP_KEYS
from bertdemo.models.load_errors import MAX_NAME_CHARS
from bertdemo.request_budget import WorkBudget


def asked_again(models: Any, step: object, text: object, model: object, *, runs: Any = None, owner_token: str = "",
                public: bool = False, budget: WorkBudget | None = None) -> dict | None:
    """Step ``step``'s question (a :class:`~bertdemo.learn.predictions.Prediction` as JSON) with its truth computed
    now on ``text`` by ``model`` (a name the model store loads, e.g. the answer's ``model_name``); for the live-run
    question, decided by the run of ``owner_token`` in ``runs`` (the pretraining runs) when it has decided it. None
    when the values name no step, sentence or model; ValueError from the model store or the step (a model not
    served here, a sentence the step refuses, a request over its budget)."""
    if step not in STEP_KEYS or not isinstance(text, str) or not text.strip():
        return None
    if not isinstance(model, str) or len(model) > MAX_NAME_CHARS:
        return None
    question = path.answer(models.get(model or None), str(step), text, budget=budget).prediction
    return predictions.decided_on_own_run(question, runs, owner_token, public)


def graded(progress: object, question: Mapping | None) -> dict | None:
    """The guess ``progress`` (what a browser kept) holds for ``question`` (as :func:`asked_again` computed it),
    graded against the question's truth: {step, question, guess, truth, correct}; None when it holds no guess for
    that very question, or one that is none of its choices (a number for a number question)."""
    if not question:
        return None
    record = predictions.record_for(progress, dict(question))
    if record is None or record["guess"] is None:
        return None
    try:
        return predictions.grade(dict(question), record["guess"])
    except ValueError:  # not one of the question's choices, not a number
        return None

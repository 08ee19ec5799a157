"""Predict, then reveal, on a run that is still training: "will the held-out loss go below the word-before line
in 2 minutes?"

The Learn path's pretraining question cannot be answered when it is asked: its truth is in the learner's own run.
It is graded when the learner commits a guess (or asks to be shown), against

* **the learner's own run** when they have one that has decided it: its own metrics, the held-out loss of each
  evaluation against the run's own "uses the word before" landmark (:mod:`bertdemo.pretrain.landmarks`, the
  bigram guesser's loss on the same held-out questions). The answer is *yes* when an evaluation at or before
  :data:`LIMIT_S` seconds of training is strictly below the line, *no* when the run has trained at least
  :data:`LIMIT_S` seconds without one; a run short of that with no crossing yet has not decided;
* else **the reference measurement** shipped with the app (:data:`bertdemo.pretrain.measured.DEFAULT_RUN`: the
  default recipe's minutes until its held-out loss first went below the same line, measured by a bench).

The reveal says which of the two it is, and why the learner's own run was not used when it was not.
Only masked-LM runs are read (a left-to-right run's held-out loss is another quantity). On a public server a run
is the learner's only when their browser's owner token started it. Torch-free, gradio-free.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bertdemo.pretrain import measured

LIMIT_S = 120.0  # "in 2 minutes": seconds of training (the run's own clock, as its curve is drawn)
LINE = "left"  # the landmark: "uses the word before"
LINE_LABEL = "uses the word before"
QUESTION_ID = "live-run.below-word-before"
RUNS_READ = 5  # the learner's saved runs looked at, newest first
RUN, REFERENCE = "run", "reference"


@dataclass(frozen=True)
class LineCheck:
    """One run's answer to the question: ``crossed`` None while it has not decided it."""

    source: str  # RUN or REFERENCE
    name: str  # what the reveal calls it
    crossed: bool | None
    crossed_s: float | None = None  # training seconds at the first evaluation below the line
    loss: float | None = None  # the held-out loss at the last evaluation within LIMIT_S (None: none yet)
    loss_s: float | None = None
    line: float | None = None  # the run's word-before landmark (None for the reference: its own, not stored)
    trained_s: float = 0.0  # seconds of training the run has done

    def to_json(self) -> dict:
        return asdict(self)


def check_history(name: str, eval_wall_s: list[float], eval_loss: list[float], landmarks: dict[str, float],
                  trained_s: float, limit_s: float = LIMIT_S) -> LineCheck:
    """The question answered from a run's own metrics (see the module's docstring): ``eval_wall_s`` and
    ``eval_loss`` its evaluations (training seconds, held-out loss), ``landmarks`` its landmark losses,
    ``trained_s`` the training seconds it has done."""
    line = landmarks.get(LINE)
    trained = max([float(trained_s), *map(float, eval_wall_s)], default=0.0)
    within = [(float(s), float(v)) for s, v in zip(eval_wall_s, eval_loss) if float(s) <= limit_s]
    loss_s, loss = within[-1] if within else (None, None)
    if line is None:
        return LineCheck(RUN, name, None, None, loss, loss_s, None, trained)
    crossed_at = next((s for s, v in within if v < line), None)
    if crossed_at is not None:
        return LineCheck(RUN, name, True, crossed_at, loss, loss_s, float(line), trained)
    return LineCheck(RUN, name, False if trained >= limit_s else None, None, loss, loss_s, float(line), trained)


def reference_check(run: measured.MeasuredRun = measured.DEFAULT_RUN, limit_s: float = LIMIT_S) -> LineCheck:
    """The shipped measurement of the default recipe (the minutes until it went below the line)."""
    below = run.below_left_min
    crossed_s = None if below is None else 60.0 * below
    return LineCheck(REFERENCE, f"the reference run (the default recipe, {run.budget_min:g} minutes on "
                     f"{measured.MEASURED_ON}; its clock the training thread's CPU time)",
                     crossed_s is not None and crossed_s <= limit_s, crossed_s,
                     trained_s=60.0 * run.minutes)


def _is_masked_lm(settings: dict) -> bool:
    return str(settings.get("objective", "mlm")) == "mlm"


def own_run_checks(service: Any, token: str, public: bool, limit: int = RUNS_READ,
                   limit_s: float = LIMIT_S) -> list[LineCheck]:
    """The learner's masked-LM pretraining runs answered from their own metrics, the live one first, then the
    saved ones newest first (at most ``limit``), each against ``limit_s`` seconds. ``service``: the pretraining runs
    (:class:`bertdemo.pretrain.service.PretrainService`); on a public server a run is the learner's only when
    ``token`` (their browser's owner token) started it."""
    from bertdemo.runs import folders

    checks: list[LineCheck] = []
    seen: set[str] = set()
    run = service.current
    if run is not None and (not public or (token and run.owner_token and run.may_control(token))):
        seen.add(run.run_id)
        if _is_masked_lm(run.cfg.flat()):
            snap = run.snapshot()
            checks.append(check_history(f"your run {run.run_id}", snap.eval_wall_s, snap.eval_loss, snap.landmarks,
                                        snap.wall_s[-1] if snap.wall_s else 0.0, limit_s))
    for run_id in service.list_runs()[: limit]:
        if run_id in seen or (public and not folders.is_owner(service.root, run_id, token)):
            continue
        try:
            record = service.load_run(run_id)
        except ValueError:  # deleted meanwhile
            continue
        if _is_masked_lm(record.settings):
            snap = record.snapshot
            checks.append(check_history(f"your run {run_id}", snap.eval_wall_s, snap.eval_loss, snap.landmarks,
                                        snap.wall_s[-1] if snap.wall_s else 0.0, limit_s))
    return checks


def deciding(checks: list[LineCheck]) -> tuple[LineCheck, str]:
    """(the check the guess is graded against, a note on why the learner's own run was not it, or ""): the first
    of ``checks`` that decided the question, else the reference measurement."""
    for check in checks:
        if check.crossed is not None:
            return check, ""
    if not checks:
        return reference_check(), "You have no pretraining run of your own yet (a masked-LM run on the Pretrain tab)."
    newest = checks[0]
    if newest.line is None:
        return reference_check(), f"{newest.name.capitalize()} has no word-before line yet."
    return reference_check(), (f"{newest.name.capitalize()} has trained {clock(newest.trained_s)} so far, without "
                               f"going below the line: it has not reached {clock(LIMIT_S)} yet.")


def clock(seconds: float) -> str:
    """Seconds as m:ss."""
    whole = round(float(seconds))  # an int (numpy's floats too)
    return f"{whole // 60}:{whole % 60:02d}"


def reveal_text(check: LineCheck, note: str = "") -> str:
    """The answer in words, naming what it was measured on (Markdown)."""
    line = f" (line {check.line:.2f})" if check.line is not None else ""
    if check.crossed:
        said = f"yes — below the word-before line{line} at {clock(check.crossed_s)} of training"
    else:
        said = f"no — not below the word-before line{line} within {clock(LIMIT_S)}"
        if check.crossed_s is not None:
            said += f" (it went below at {clock(check.crossed_s)})"
    if check.loss is not None:
        said += f"; held-out loss {check.loss:.2f} at {clock(check.loss_s)}"
    basis = ("Graded against **your own run**: " if check.source == RUN else "Graded against **the reference "
             "measurement** (no live run of yours decides it): ")
    return f"{basis}{check.name}: {said}." + (f"  \n*{note}*" if note else "")


def numbers(check: LineCheck, note: str = "") -> dict:
    """The step's numbers for its question (:func:`bertdemo.learn.predictions.prediction`, step "live-run")."""
    return {"check": check.to_json(), "note": note, "limit_s": LIMIT_S, "reveal": reveal_text(check, note)}

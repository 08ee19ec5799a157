"""The Learn path's live-run question ("will the held-out loss go below the word-before line in 2 minutes?"):
graded exactly against the learner's own run's metrics when one decides it, against the shipped reference
measurement otherwise, the reveal saying which; on a public server only the browser's own run counts."""

from __future__ import annotations

import pytest

from bertdemo.learn import live_run, path as learn_path, predictions, steps as learn_steps
from bertdemo.pretrain import measured
from bertdemo.settings import ServerSettings
from tests.helpers import run_services, tiny_run_config

LINE = {"unigram": 7.0, "left": 6.0, "both": 5.0}


def test_below_the_line_means_an_evaluation_strictly_below_it_within_two_minutes():
    yes = live_run.check_history("r", [0, 60, 120, 180], [9.0, 6.5, 5.99, 5.0], LINE, 180)
    assert (yes.crossed, yes.crossed_s, yes.loss, yes.loss_s, yes.line) == (True, 120.0, 5.99, 120.0, 6.0)
    on_the_line = live_run.check_history("r", [0, 60, 120, 180], [9.0, 6.5, 6.0, 5.0], LINE, 180)
    assert (on_the_line.crossed, on_the_line.crossed_s, on_the_line.loss) == (False, None, 6.0)  # equal is not below
    late = live_run.check_history("r", [0, 100, 130], [9.0, 6.2, 5.5], LINE, 131)
    assert (late.crossed, late.loss, late.loss_s) == (False, 6.2, 100.0)  # below only after 2:00: no
    early = live_run.check_history("r", [0, 30], [9.0, 5.9], LINE, 31)
    assert (early.crossed, early.crossed_s) == (True, 30.0)  # decided before 2:00
    short = live_run.check_history("r", [0, 60], [9.0, 6.5], LINE, 119.9)
    assert short.crossed is None and short.trained_s == 119.9  # not yet 2:00 and not below: undecided
    assert live_run.check_history("r", [0, 60], [9.0, 6.5], LINE, 120.0).crossed is False  # 2:00 reached
    assert live_run.check_history("r", [0], [9.0], {}, 200).crossed is None  # no line: undecided


def test_the_reference_is_the_shipped_measurement_of_the_default_recipe():
    ref = live_run.reference_check()
    assert ref.source == live_run.REFERENCE and measured.MEASURED_ON in ref.name
    assert ref.crossed_s == pytest.approx(60 * measured.DEFAULT_RUN.below_left_min)
    assert ref.crossed is (60 * measured.DEFAULT_RUN.below_left_min <= 120)
    never = measured.MeasuredRun(5, 1, 5.0, 1, None, None, 6.0, 1, 5.0, 1, None, ())
    assert live_run.reference_check(never).crossed is False
    later = measured.MeasuredRun(5, 1, 5.0, 1, 2.5, None, 6.0, 1, 5.0, 1, None, ())
    assert (live_run.reference_check(later).crossed, live_run.reference_check(later).crossed_s) == (False, 150.0)


def test_the_first_run_that_decided_it_grades_else_the_reference_and_the_reveal_says_which():
    undecided = live_run.check_history("your run a", [0, 50], [9.0, 7.0], LINE, 75)
    decided = live_run.check_history("your run b", [0, 90], [9.0, 5.5], LINE, 150)
    check, note = live_run.deciding([undecided, decided])
    assert check == decided and note == ""
    text = live_run.reveal_text(check, note)
    assert text.startswith("Graded against **your own run**: your run b: yes") and "1:30" in text
    check, note = live_run.deciding([undecided])
    assert check == live_run.reference_check() and note == ("Your run a has trained 1:15 so far, without going "
                                                             "below the line: it has not reached 2:00 yet.")
    text = live_run.reveal_text(check, note)
    assert text.startswith("Graded against **the reference measurement**") and note in text
    check, note = live_run.deciding([])
    assert check.source == live_run.REFERENCE and "no pretraining run of your own" in note


def test_the_question_is_graded_exactly_against_its_truth():
    for check in (live_run.check_history("your run b", [0, 90], [9.0, 5.5], LINE, 150),
                  live_run.check_history("your run c", [0, 90], [9.0, 6.5], LINE, 150)):
        q = predictions.prediction("live-run", live_run.numbers(check)).to_json()
        truth = predictions.YES if check.crossed else predictions.NO
        assert (q["id"], q["truth"], q["choices"]) == (live_run.QUESTION_ID, truth, [predictions.YES, predictions.NO])
        assert q["reveal"] == live_run.reveal_text(check)
        assert predictions.grade(q, truth)["correct"] is True
        other = predictions.NO if truth == predictions.YES else predictions.YES
        assert predictions.grade(q, other) == {"step": "live-run", "question": live_run.QUESTION_ID, "guess": other,
                                               "truth": truth, "correct": False, "asked": ""}


def test_the_step_sits_in_the_pretraining_stage_and_asks_on_the_reference(tiny_loaded):
    keys = learn_steps.STEP_KEYS
    assert keys.index("live-run") == keys.index("tiny") + 1 and learn_steps.step("live-run").tab == "pretrain"
    answer = learn_path.answer(tiny_loaded, "live-run", "The cat sat on the mat.")
    assert answer.prediction["truth"] == predictions.YES  # the reference went below at 1.7 minutes
    assert f"{measured.DEFAULT_RUN.below_left_min:g} minutes" in answer.answer
    assert "reference measurement" in answer.prediction["reveal"]


@pytest.fixture(scope="module")
def public_run(corpus, tmp_path_factory):
    """A finished tiny masked-LM run on a public server, started by the browser whose owner token is "mine"."""
    tmp = tmp_path_factory.mktemp("public")
    settings = ServerSettings.build(runs_dir=tmp / "runs", cache_dir=tmp / "cache", public=True, offline=True,
                                    device="cpu")
    _, service, _ = run_services(settings)
    cfg = tiny_run_config(corpus, tmp / "runs", steps=20, eval_every=5, checkpoint_every=20)
    run = service.start(cfg, owner_token="mine")
    assert run.join(300), run.snapshot().message
    return service, run


def test_a_learners_own_run_is_read_from_its_own_metrics_and_a_strangers_is_not(public_run):
    service, run = public_run
    snap = run.snapshot()
    assert snap.eval_loss and "left" in snap.landmarks
    trained = snap.wall_s[-1]
    mine = live_run.own_run_checks(service, "mine", public=True, limit_s=trained)
    live = live_run.check_history(f"your run {run.run_id}", snap.eval_wall_s, snap.eval_loss, snap.landmarks,
                                  trained, limit_s=trained)
    assert mine[0] == live and mine[0].crossed is not None  # decided at its own end: graded on it
    below = [s for s, v in zip(snap.eval_wall_s, snap.eval_loss) if s <= trained and v < snap.landmarks["left"]]
    assert mine[0].crossed is bool(below) and mine[0].crossed_s == (below[0] if below else None)
    assert live_run.deciding(mine)[0].source == live_run.RUN
    assert live_run.own_run_checks(service, "stranger", public=True) == []  # neither the live nor the saved run
    assert live_run.own_run_checks(service, "", public=True) == []
    check, note = live_run.deciding(live_run.own_run_checks(service, "mine", public=True))  # 2:00: not reached
    assert check.source == live_run.REFERENCE and "has not reached 2:00" in note


def test_the_steps_code_grades_the_runs_metrics_csv_as_the_page_does(public_run, tmp_path, monkeypatch):
    from bertdemo.pretrain.metrics import metrics_csv
    from bertdemo.snippets.views import below_line_code
    from tests.helpers import run_snippet

    _, run = public_run
    snap = run.snapshot()
    (tmp_path / "metrics.csv").write_text(metrics_csv(snap))
    monkeypatch.chdir(tmp_path)
    for limit_s in (snap.eval_wall_s[1], snap.wall_s[-1], 1e9):
        check = live_run.check_history("r", snap.eval_wall_s, snap.eval_loss, snap.landmarks, snap.wall_s[-1], limit_s)
        lines, _ = run_snippet(below_line_code(limit_s))
        said = lines[0].split(":")[0]
        assert said == {True: "yes", False: "no", None: "not decided yet"}[check.crossed], (limit_s, lines)


def test_the_learn_tab_grades_the_guess_on_the_browsers_own_run(corpus, tmp_path):
    """The page's "Check my guess" reads the browser's owner token: the owner is told about their own run (not yet
    at 2:00, so the reference grades it), a stranger that they have none; both graded against the reference."""
    from bertdemo.context import AppContext
    from bertdemo.ui.layout import build_app

    ctx = AppContext.for_tests(tmp_path, public=True)
    run = ctx.pretrain_runs.start(tiny_run_config(corpus, ctx.settings.runs_dir, steps=10, eval_every=5,
                                                  checkpoint_every=10), owner_token="mine")
    assert run.join(300), run.snapshot().message
    check_guess = next(f.fn for f in build_app(ctx).fns.values() if f.name == "check_guess")
    asked = {"prediction": predictions.prediction("live-run", live_run.numbers(live_run.reference_check())).to_json()}
    verdicts = {token: check_guess(asked, predictions.YES, None, None, token) for token in ("mine", "stranger")}
    for verdict, _box, progress, _line in verdicts.values():
        assert progress["answers"]["live-run"]["correct"] is True  # the reference went below at 1.7 minutes
        assert verdict.startswith("**Right**") and "Graded against **the reference measurement**" in verdict
    assert f"Your run {run.run_id} has trained" in verdicts["mine"][0]
    assert "no pretraining run of your own" in verdicts["stranger"][0] and run.run_id not in verdicts["stranger"][0]

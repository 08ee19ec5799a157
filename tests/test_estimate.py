"""The time estimate before a run starts: how it scales, the machine's measured speed, the public refusal."""

from __future__ import annotations

import pytest

from bertdemo.pretrain import TrainConfig, budget

TINY = dict(preset="custom", num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512,
            seq_len=128, batch_size=32, steps=1000, eval_every=100, eval_batches=4, mlm_probability=0.15)


def _cfg(**changes) -> TrainConfig:
    return TrainConfig.from_flat(**{**TINY, **changes})


def test_the_work_grows_with_what_the_run_asks_for():
    base = budget.work_flops(_cfg())
    assert budget.work_flops(_cfg(steps=2000)) == pytest.approx(2 * base, rel=0.01)  # twice the steps
    # twice the tokens per step: twice the training; the 11 evaluations ask the same held-out questions
    assert budget.work_flops(_cfg(batch_size=64)) == pytest.approx(2 * base - 11 * budget.evaluation_flops(_cfg()))
    assert budget.evaluation_flops(_cfg()) == pytest.approx(budget.flops_per_token(_cfg()) * 20_480 / 3)
    # a wider model costs more than proportionally (the dense layers are quadratic in hidden)
    assert budget.flops_per_token(_cfg(hidden_size=256, intermediate_size=1024)) > 2 * budget.flops_per_token(_cfg())
    # longer blocks cost more per token (attention), and more predicted tokens more (the vocabulary logits)
    assert budget.flops_per_token(_cfg(seq_len=256)) > budget.flops_per_token(_cfg())
    assert budget.flops_per_token(_cfg(mlm_probability=0.3)) > budget.flops_per_token(_cfg())
    # evaluations are work too: more often means more, but less than training (forward only)
    often = budget.work_flops(_cfg(eval_every=10))
    assert base < often < base + budget.flops_per_token(_cfg()) * 100 * 4 * 32 * 128
    # the time is the work at the machine's rate
    assert budget.estimate_seconds(_cfg(), rate=base / 60) == pytest.approx(60)
    assert budget.estimate_seconds(_cfg(), rate=base / 60, steps=500) == pytest.approx(
        budget.work_flops(_cfg(), 500) / (base / 60))


def test_the_speed_book_calibrates_once_per_device_then_uses_measured_runs():
    calls = []

    def calibrate(device: str) -> float:
        calls.append(device)
        return {"cpu": 1.0e9, "cuda": 5.0e12}[device]

    speeds = budget.SpeedBook(calibrate)
    assert speeds.rate("cpu") == speeds.rate("cpu") == 1.0e9 and calls == ["cpu"]  # before any run: calibrated once
    cfg = _cfg(device="cpu")
    speeds.record(cfg, tokens_per_s=20_000, device="cpu")
    assert speeds.rate("cpu") == pytest.approx(20_000 * budget.flops_per_token(cfg))
    speeds.record(cfg, tokens_per_s=0.0, device="cpu")  # a run that never logged says nothing
    assert speeds.rate("cpu") == pytest.approx(20_000 * budget.flops_per_token(cfg))
    speeds.record(cfg, tokens_per_s=900_000, device="cuda:0")  # per device type
    assert speeds.rate("cuda") == pytest.approx(900_000 * budget.flops_per_token(cfg)) and calls == ["cpu"]
    # a run measured at 20,000 tokens/s: the same run's estimate is its token count at that speed
    tokens = budget.work_flops(cfg) / budget.flops_per_token(cfg)
    assert speeds.estimate_seconds(cfg) == pytest.approx(tokens / 20_000)
    assert budget.SpeedBook(calibrate).rate("cpu") == 1.0e9  # another server's book starts afresh


def test_each_objective_is_estimated_at_its_own_measured_speed():
    """Train both: the left-to-right twin's speed, the last measured, was applied to the masked LM too, whose
    operations run slower (its 250-step twin estimated at 37 s took 53 s; D12)."""
    speeds = budget.SpeedBook(lambda device: 1.0e9)
    mlm, ltr = _cfg(device="cpu"), _cfg(device="cpu").replace(objective="ltr")
    speeds.record(mlm, tokens_per_s=20_000, device="cpu")
    speeds.record(ltr, tokens_per_s=6_000, device="cpu")
    assert speeds.rate("cpu", "mlm") == pytest.approx(20_000 * budget.flops_per_token(mlm))
    assert speeds.rate("cpu", "ltr") == pytest.approx(6_000 * budget.flops_per_token(ltr))
    assert speeds.rate("cpu", "nsp-only") == speeds.rate("cpu") == speeds.rate("cpu", "ltr")  # unmeasured: the last
    tokens = budget.work_flops(mlm) / budget.flops_per_token(mlm)
    assert speeds.estimate_seconds(mlm) == pytest.approx(tokens / 20_000)


def test_a_run_longer_than_the_public_cap_is_refused_with_the_steps_that_fit():
    cfg = _cfg(time_budget_s=0)  # Steps alone end the run
    rate = budget.work_flops(cfg) / 3600  # the whole run takes an hour
    assert budget.check_time(cfg, max_seconds=2 * 3600, rate=rate) == pytest.approx(3600)
    with pytest.raises(ValueError, match=r"about 60 min here; .* after 20 minutes. Lower Steps to about 331,"):
        budget.check_time(cfg, max_seconds=20 * 60, rate=rate)
    # the advice counts what the refusal counts (evaluations, checkpoints): its run fits, one step more does not
    assert budget.estimate_run(cfg.replace(steps=331), rate).total_s <= 20 * 60
    assert budget.estimate_run(cfg.replace(steps=332), rate).total_s > 20 * 60
    # a 5-minute time budget ends the same run first: it fits the 20-minute cap; a 30-minute one does not.
    # The cap counts wall time: the 300 s of training plus the evaluations due in the steps that fit
    done = int(300 * rate / (budget.flops_per_token(cfg) * 32 * 128))  # the steps 300 s of training make
    evals = done // 100 + 1  # step 0 and every 100th
    assert (done, evals) == (84, 1)  # a step takes 3.6 s here: only the step-0 evaluation is due
    assert budget.check_time(_cfg(time_budget_s=300), max_seconds=20 * 60, rate=rate) == pytest.approx(
        300 + evals * budget.evaluation_flops(cfg) / rate)
    with pytest.raises(ValueError, match=r"about 31 min here; .* Lower Steps to about 331,"):  # with its evaluations
        budget.check_time(_cfg(time_budget_s=1800), max_seconds=20 * 60, rate=rate)
    assert budget.duration_text(30) == "about 30 s" and budget.duration_text(5 * 3600) == "about 5.0 h"


def test_a_refused_run_is_never_told_to_lower_its_steps_to_more_than_it_asked():
    """A 120-step run whose evaluations make it too long was told "Lower Steps to about 151" (audit B10): the
    advice counted only the training steps. Now it is a count below 120 that fits, or it says that no count does."""
    cfg = _cfg(time_budget_s=0, steps=120, eval_every=10)
    rate = budget.work_flops(cfg.replace(eval_every=10_000)) / 1150  # the steps alone fit the 20-minute cap
    seconds = budget.estimate_run(cfg, rate).total_s
    assert seconds > 20 * 60  # the 13 evaluations push it past the cap
    fit = budget.steps_that_fit(cfg, 20 * 60, rate)
    assert 0 < fit < 120 and budget.estimate_run(cfg.replace(steps=fit), rate).total_s <= 20 * 60
    with pytest.raises(ValueError, match=f"Lower Steps to about {fit},"):
        budget.check_time(cfg, max_seconds=20 * 60, rate=rate)
    with pytest.raises(ValueError, match="No number of steps fits with these evaluations and checkpoints"):
        budget.check_time(cfg, max_seconds=1, rate=rate)


def test_the_cli_refuses_a_run_this_machine_cannot_hold(tmp_path, capsys, monkeypatch):
    from bertdemo.pretrain import __main__ as cli

    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 2 * 2**30)
    code = cli.main(["--out", str(tmp_path / "out"), "--preset", "bert-small", "--batch-size", "256",
                     "--seq-len", "512", "--device", "cpu", "--no-progress"])
    assert code == 2
    assert "Lower the batch size, the block length or the model size" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _log(upto: int, per_step, eval_every: int = 50, eval_s: float = 2.0, every: int = 10):
    """A train log to step ``upto``: training seconds at each logged step, one evaluation of ``eval_s``
    seconds every ``eval_every`` steps (``per_step``: seconds per step, a number or a function of the step)."""
    cost = per_step if callable(per_step) else (lambda s: per_step)
    steps, wall, t = [], [], 0.0
    for s in range(1, upto + 1):
        t += cost(s) + (eval_s if s % eval_every == 0 else 0.0)
        if s % every == 0:
            steps.append(s)
            wall.append(t)
    return steps, wall


def test_the_time_left_comes_from_the_runs_own_speed_evaluations_included():
    steps, wall = _log(500, 0.1)
    eta = budget.run_eta(1000, 500, steps, wall, period=50)
    # 500 steps left at 0.1 s + 10 evaluations of 2 s = 70 s, and a steady run is sure of it
    assert (eta.seconds, eta.low, eta.high) == pytest.approx((70.0, 70.0, 70.0))
    assert eta.basis == "the speed of the last 5 evaluation periods"
    # the estimate does not swing at every log, as a rate over the last few seconds did (an evaluation
    # in the window read as a stall): at every log after the first windows it names the same finish
    finishes = [budget.run_eta(1000, s, steps[:i + 1], wall[:i + 1], 50).seconds + wall[i]
                for i, s in enumerate(steps) if s >= 200]
    assert max(finishes) - min(finishes) < 0.05 * 140  # within 5 % of the whole run's 140 s


def test_the_time_left_says_how_sure_it_is():
    # the machine gets twice as slow from step 600 on: the range widens and holds the true time left
    slower = lambda s: 0.1 if s <= 600 else 0.2
    steps, wall = _log(700, slower)
    eta = budget.run_eta(1000, 700, steps, wall, period=50)
    true_left = 300 * 0.2 + 6 * 2.0
    assert eta.low < true_left <= eta.high + 1e-9 and eta.low < eta.seconds < eta.high
    # before two whole evaluation periods: the speed so far, said to be rough; before two logs: nothing
    early_steps, early_wall = _log(60, 0.1)
    rough = budget.run_eta(1000, 60, early_steps, early_wall, period=50)
    assert rough.basis == "rough: from the first 60 steps" and rough.seconds == pytest.approx(940 * (5.0 + 2.0) / 50)
    assert budget.run_eta(1000, 10, [10], [1.0], period=50) is None


def test_the_estimate_counts_evaluations_checkpoints_and_start_up():
    cfg = _cfg(time_budget_s=300, checkpoint_every=100)  # 1,000 steps, an evaluation every 100
    step_flops = budget.flops_per_token(cfg) * 32 * 128
    # one training step a second: the 5-minute budget ends the run at step 300, long before step 1,000
    est = budget.estimate_run(cfg, rate=step_flops)
    assert (est.training_s, est.budget_ends_it, est.evaluations, est.checkpoints) == (300, True, 4, 3)  # 0, 100, 200, 300
    # an evaluation reads the 20,480 held-out tokens forward only: 5/3 of a training step's operations (4,096 tokens)
    assert est.evaluation_s == pytest.approx(4 * 5 / 3) and est.total_s == pytest.approx(300 + 20 / 3)
    assert not est.measured and est.startup_s == 0 == est.checkpoint_s  # nothing measured on this machine yet
    # what the last run here measured: 12 s to its first step, evaluations at half the training speed, 0.5 s a write
    measured = budget.RunOverheads(startup_s=12.0, eval_rate=step_flops / 2, save_s=0.5)
    est = budget.estimate_run(cfg, rate=step_flops, overheads=measured)
    assert est.measured and est.total_s == pytest.approx(300 + 4 * 10 / 3 + 3 * 0.5 + 12)
    # without a budget all 1,000 steps run: evaluations at 0, 100, ..., 1,000; writes at 100, ..., 900 and the last
    est = budget.estimate_run(_cfg(time_budget_s=0, checkpoint_every=100), rate=step_flops)
    assert (est.budget_ends_it, est.evaluations, est.checkpoints) == (False, 11, 10)
    assert est.training_s == pytest.approx(1000)
    assert budget.estimate_run(_cfg(time_budget_s=0, steps=1050), rate=step_flops).evaluations == 12  # + the last step's


def test_the_speed_book_keeps_what_the_last_run_spent_beside_training():
    cfg = _cfg(time_budget_s=300)
    speeds = budget.SpeedBook(lambda device: 1.0e9)
    assert speeds.overheads("cpu") is None
    assert budget.measured_overheads(cfg, startup_s=3.0, eval_s=0.0, evals=0, save_s=0.0, saves=0) is None
    measured = budget.measured_overheads(cfg, startup_s=3.0, eval_s=8.0, evals=4, save_s=1.0, saves=2)
    assert measured == budget.RunOverheads(3.0, budget.evaluation_flops(cfg) / 2.0, 0.5)  # 2 s an evaluation
    speeds.record(cfg, tokens_per_s=0.0, device="cpu:0", overheads=measured)
    assert speeds.overheads("cpu") == measured and speeds.rate("cpu") == 1.0e9  # no speed measured: calibrated
    assert speeds.estimate(_cfg(time_budget_s=300, device="cpu")) == budget.estimate_run(cfg, 1.0e9, measured)


def test_before_any_run_evaluations_are_priced_at_their_own_calibrated_speed():
    import math

    from bertdemo.pretrain.calibration import calibrate_evaluation

    cfg = _cfg(time_budget_s=0, device="cpu")
    speeds = budget.SpeedBook(lambda device: 1.0e9, eval_calibrator=lambda device: 2.5e8)  # a quarter as fast
    est = speeds.estimate(cfg)
    assert not est.measured and est.evaluations == 11
    assert est.evaluation_s == pytest.approx(11 * budget.evaluation_flops(cfg) / 2.5e8)
    with pytest.raises(ValueError, match="this public server stops runs after"):  # the public cap counts them too
        speeds.check_time(cfg, max_seconds=est.training_s + est.evaluation_s / 2)
    assert speeds.check_time(cfg, max_seconds=est.total_s + 1) == pytest.approx(est.total_s)
    rate = calibrate_evaluation("cpu")  # the engine's own evaluation, timed on this machine
    assert math.isfinite(rate) and rate > 0

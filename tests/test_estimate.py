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
    assert budget.work_flops(_cfg(batch_size=64)) == pytest.approx(2 * base)  # twice the tokens per step
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


def test_a_run_longer_than_the_public_cap_is_refused_with_the_steps_that_fit():
    cfg = _cfg(time_budget_s=0)  # Steps alone end the run
    rate = budget.work_flops(cfg) / 3600  # the whole run takes an hour
    assert budget.check_time(cfg, max_seconds=2 * 3600, rate=rate) == pytest.approx(3600)
    with pytest.raises(ValueError, match=r"about 60 min here; .* after 20 minutes. Lower Steps to about 333,"):
        budget.check_time(cfg, max_seconds=20 * 60, rate=rate)
    # a 5-minute time budget ends the same run first: it fits the 20-minute cap; a 30-minute one does not
    assert budget.check_time(_cfg(time_budget_s=300), max_seconds=20 * 60, rate=rate) == 300
    with pytest.raises(ValueError, match=r"about 30 min here; .* Lower Steps to about 333,"):
        budget.check_time(_cfg(time_budget_s=1800), max_seconds=20 * 60, rate=rate)
    assert budget.duration_text(30) == "about 30 s" and budget.duration_text(5 * 3600) == "about 5.0 h"


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
    slower = lambda s: 0.1 if s <= 600 else 0.2  # noqa: E731
    steps, wall = _log(700, slower)
    eta = budget.run_eta(1000, 700, steps, wall, period=50)
    true_left = 300 * 0.2 + 6 * 2.0
    assert eta.low < true_left <= eta.high + 1e-9 and eta.low < eta.seconds < eta.high
    # before two whole evaluation periods: the speed so far, said to be rough; before two logs: nothing
    early_steps, early_wall = _log(60, 0.1)
    rough = budget.run_eta(1000, 60, early_steps, early_wall, period=50)
    assert rough.basis == "rough: from the first 60 steps" and rough.seconds == pytest.approx(940 * (5.0 + 2.0) / 50)
    assert budget.run_eta(1000, 10, [10], [1.0], period=50) is None

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
    cfg = _cfg()
    rate = budget.work_flops(cfg) / 3600  # the whole run takes an hour
    assert budget.check_time(cfg, max_seconds=2 * 3600, rate=rate) == pytest.approx(3600)
    with pytest.raises(ValueError, match=r"about 60 min here; .* after 20 minutes. Lower Steps to about 333,"):
        budget.check_time(cfg, max_seconds=20 * 60, rate=rate)
    assert budget.duration_text(30) == "about 30 s" and budget.duration_text(5 * 3600) == "about 5.0 h"


def test_the_cli_refuses_a_run_this_machine_cannot_hold(tmp_path, capsys, monkeypatch):
    from bertdemo.pretrain import __main__ as cli

    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 2 * 2**30)
    code = cli.main(["--out", str(tmp_path / "out"), "--preset", "bert-small", "--batch-size", "256",
                     "--seq-len", "512", "--device", "cpu", "--no-progress"])
    assert code == 2
    assert "Lower the batch size, the block length or the model size" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

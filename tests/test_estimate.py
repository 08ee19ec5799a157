"""The time estimate before a run starts: its arithmetic, the machine's measured speed, the public refusal."""

from __future__ import annotations

import pytest

from bertdemo.pretrain import TrainConfig, estimate

TINY = dict(preset="custom", num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512,
            seq_len=128, batch_size=32, steps=1000, eval_every=100, eval_batches=4, mlm_probability=0.15)


def test_work_counts_dense_attention_logits_and_evaluations():
    cfg = TrainConfig.from_flat(**TINY)
    per_token = 6 * (2 * (4 * 128**2 + 2 * 128 * 512) + 2 * 2 * 128 * 128 + 128 * 30522 * 0.15)
    assert estimate.flops_per_token(cfg) == pytest.approx(per_token)
    tokens = 1000 * 32 * 128 + (1000 // 100 + 1) * 4 * 32 * 128 / 3
    assert estimate.work_flops(cfg) == pytest.approx(per_token * tokens)
    assert estimate.estimate_seconds(cfg, rate=per_token * 10_000) == pytest.approx(tokens / 10_000)


def test_a_measured_run_sets_the_machine_speed_per_device(monkeypatch):
    monkeypatch.setattr(estimate, "_rates", {})
    monkeypatch.setattr(estimate, "calibrate", lambda device: {"cpu": 1.0e9, "cuda": 5.0e12}[device])
    assert estimate.machine_rate("cpu") == 1.0e9  # before any run: calibrated
    cfg = TrainConfig.from_flat(**TINY)
    estimate.record(cfg, tokens_per_s=20_000, device="cpu")
    assert estimate.machine_rate("cpu") == pytest.approx(20_000 * estimate.flops_per_token(cfg))
    estimate.record(cfg, tokens_per_s=0.0, device="cpu")  # a run that never logged says nothing
    assert estimate.machine_rate("cpu") == pytest.approx(20_000 * estimate.flops_per_token(cfg))
    estimate.record(cfg, tokens_per_s=900_000, device="cuda:0")
    assert estimate.machine_rate("cuda") == pytest.approx(900_000 * estimate.flops_per_token(cfg))
    assert estimate.estimate_seconds(cfg.replace(device="cpu")) == pytest.approx(
        estimate.work_flops(cfg) / (20_000 * estimate.flops_per_token(cfg)))


def test_calibration_measures_this_machine():
    assert 1e7 < estimate.calibrate() < 1e14


def test_a_run_longer_than_the_public_cap_is_refused_with_the_steps_that_fit():
    cfg = TrainConfig.from_flat(**TINY)
    rate = estimate.work_flops(cfg) / 3600  # the whole run takes an hour
    assert estimate.check_time(cfg, max_seconds=2 * 3600, rate=rate) == pytest.approx(3600)
    with pytest.raises(ValueError, match=r"about 60 min here; .* after 20 minutes. Lower Steps to about 333,"):
        estimate.check_time(cfg, max_seconds=20 * 60, rate=rate)
    assert estimate.duration_text(30) == "about 30 s" and estimate.duration_text(5 * 3600) == "about 5.0 h"


def test_the_cli_refuses_a_run_this_machine_cannot_hold(tmp_path, capsys, monkeypatch):
    from bertdemo.pretrain import __main__ as cli
    from bertdemo.pretrain import limits

    monkeypatch.setattr(limits, "available_memory_bytes", lambda: 2 * 2**30)
    code = cli.main(["--out", str(tmp_path / "out"), "--preset", "bert-small", "--batch-size", "256",
                     "--seq-len", "512", "--device", "cpu", "--no-progress"])
    assert code == 2
    assert "Lower the batch size, the block length or the model size" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

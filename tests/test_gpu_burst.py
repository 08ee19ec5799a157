"""The GPU burst of a ZeroGPU Space, run here on the CPU through the same code (the decorator absent):
the run's weights, optimizer state and history after the burst are the burst's, and the run continues."""

from __future__ import annotations

import pytest
import torch

from bertdemo.pretrain import checkpoints as ckpt, zerogpu as gpu_burst
from bertdemo.pretrain.model import load_checkpoint_model
from bertdemo.pretrain.run import TrainingRun
from bertdemo.runs.slot import RunManager
from bertdemo.runs.status import Status
from tests.helpers import tiny_run_config, wait_until

# quiet: no evaluation, a log every other step (the burst's progress items)
QUIET = dict(lr=2e-3, log_every=2, eval_every=1000, eval_batches=1)


def reach(run, step: int) -> None:
    """Wait (at most 120 s, however busy the machine) until ``run`` has trained ``step`` steps; fail at once if it ends first."""
    def reached() -> bool:
        done = run.snapshot().step >= step
        assert done or run.active, f"the run ended at step {run.snapshot().step}: {run.snapshot().message[:200]}"
        return done

    wait_until(reached, timeout=120, interval=0.02, what=f"step {step}", message=lambda: run.snapshot().message[:200])


def _started(corpus, tmp_path, steps: int, at_least: int = 4) -> RunManager:
    manager = RunManager(tmp_path / "runs")
    run = manager.start_run(TrainingRun(tiny_run_config(corpus, tmp_path, QUIET, steps=steps, runs_dir=str(tmp_path / "runs")), manager.runs_dir, owner_token="owner-a",
                                        max_seconds=600, clock=manager.clock))
    reach(run, at_least)
    return manager


def test_the_run_gets_back_what_the_burst_produced(corpus, tmp_path):
    manager = _started(corpus, tmp_path, steps=40)
    run = manager.current
    items = list(gpu_burst.run_burst(manager, steps=1000, device="cpu", train=gpu_burst.train_burst))
    progress = [i for i in items if isinstance(i, gpu_burst.BurstProgress)]
    result = items[-1]
    assert isinstance(result, gpu_burst.BurstResult) and result.device == "cpu"
    before = progress[0].step - 2  # a log step the run reached on the CPU before the burst
    assert result.step == 40 and [p.step for p in progress] == list(range(before + 2, 41, 2))

    latest = ckpt.latest_checkpoint(run.run_folder)
    saved = ckpt.read_state(latest)
    assert saved["step"] == 40 and manager.current is run and run.status == "finished"
    model = load_checkpoint_model(str(latest), nsp=False)
    for name, value in model.state_dict().items():
        assert torch.equal(value, result.model_state[name]), name
    optimizer = torch.load(latest / ckpt.OPTIMIZER_FILE, map_location="cpu", weights_only=True)
    steps = {int(s["step"]) for s in optimizer["state"].values()}
    assert steps == {int(s["step"]) for s in result.optimizer_state["state"].values()} == {40}
    # the burst's losses streamed into the run's live metrics and are in the saved history
    snap = run.snapshot()
    assert snap.steps[-len(progress):] == [p.step for p in progress]
    assert saved["history"]["steps"][-len(progress):] == [p.step for p in progress]
    assert saved["history"]["steps"][: snap.steps.index(before)] == snap.steps[: snap.steps.index(before)]


def test_the_run_continues_on_the_cpu_after_the_burst(corpus, tmp_path):
    manager = _started(corpus, tmp_path, steps=60)
    first = manager.current
    items = list(gpu_burst.run_burst(manager, steps=6, device="cpu", train=gpu_burst.train_burst))
    result = items[-1]
    continued = manager.current
    assert continued is not first and continued.run_id == first.run_id and continued.owner_token == "owner-a"
    assert 0 < continued.time_left() <= 600
    assert continued.join(120) and continued.status == "finished"
    snap = continued.snapshot()
    assert snap.step == 60 and result.step in snap.steps  # the burst's steps are part of the run's history
    assert ckpt.read_state(ckpt.latest_checkpoint(continued.run_folder))["step"] == 60


def test_no_other_run_starts_during_a_burst_and_only_a_run_can_burst(corpus, tmp_path):
    manager = RunManager(tmp_path / "runs")
    with pytest.raises(ValueError, match="no run yet"):
        next(gpu_burst.run_burst(manager, steps=5, device="cpu", train=gpu_burst.train_burst))
    with manager.hold(), pytest.raises(ValueError, match="GPU burst"):
        manager.start_run(TrainingRun(tiny_run_config(corpus, tmp_path, QUIET, steps=10, runs_dir=str(tmp_path / "runs")), manager.runs_dir))


def test_the_gpu_entry_point_is_there_from_startup_without_torch():
    import subprocess
    import sys

    from bertdemo.pretrain import gpu_entry

    def f():
        return 1
    assert gpu_entry.gpu_decorator(60)(f) is f  # no `spaces` package here: the identity
    code = "import sys, bertdemo.pretrain.gpu_entry as g; assert callable(g.gpu_train); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-2000:]


def test_a_run_on_a_gpu_burst_is_busy_and_cannot_be_deleted(corpus, tmp_path):
    from bertdemo.settings import ServerSettings
    from tests.helpers import run_services

    _, service, _ = run_services(ServerSettings.build(runs_dir=tmp_path / "runs"))
    seen = {}

    def train(inp, device):  # a burst whose GPU worker is still training when the owner tries to delete
        run = service.current
        seen["status"], seen["active"] = run.status, run.active
        with pytest.raises(ValueError, match="still active"):
            service.delete(run.run_id)
        with pytest.raises(ValueError, match="GPU burst"):
            service.start(tiny_run_config(corpus, tmp_path, QUIET, steps=10, runs_dir=str(tmp_path / "runs")))
        yield from gpu_burst.train_burst(inp, device)

    run = service.start(tiny_run_config(corpus, tmp_path, QUIET, steps=30, runs_dir=str(tmp_path / "runs")))
    reach(run, 4)
    list(gpu_burst.run_burst(service.manager, steps=4, device="cpu", train=train))
    assert seen == {"status": Status.GPU_BURST, "active": True}
    assert service.current.join(60)


def test_the_bursts_time_is_charged_to_the_runs_cap(corpus, tmp_path):
    from tests.helpers import FakeClock

    clock = FakeClock()
    manager = RunManager(tmp_path / "runs", clock=clock)
    run = manager.start_run(TrainingRun(tiny_run_config(corpus, tmp_path, QUIET, steps=400, runs_dir=str(tmp_path / "runs")), manager.runs_dir, owner_token="owner-a",
                                        max_seconds=600, clock=manager.clock))
    reach(run, 4)
    asked = {}

    def train(inp, device):  # a burst that takes 250 s of the server's clock
        asked["max_seconds"] = inp.max_seconds
        clock.now += 250
        yield from gpu_burst.train_burst(inp, device)

    clock.now += 500  # the run has used 500 s of its 600 on the CPU
    list(gpu_burst.run_burst(manager, steps=4, device="cpu", train=train))
    assert asked["max_seconds"] <= 100  # the burst may use only what the cap has left
    after = manager.current
    assert after.time_left() == 0.0 or not after.active  # 750 s used: the run does not go on past its cap
    assert after.join(60)

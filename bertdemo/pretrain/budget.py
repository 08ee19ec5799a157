"""What a pretraining run may ask of this machine, checked before it starts: public caps, memory, disk and time.

Memory. The estimate refuses, before anything is allocated, a run the machine cannot hold:

    parameters × 16 bytes (fp32 weights, gradients, AdamW's two moments)
  + batch × block length × hidden × layers × 180 bytes (activations kept for the backward pass)
  + batch × block length × 30,522 × 4 bytes × 15 % (the vocabulary logits of the masked positions)
  + 300 MB (the Python process, torch, the tokenizer)

The 180 is calibrated on the measured ~180 MB per 512-token sequence of bert-small (4 layers,
hidden 512): 512 × 512 × 4 × 180 B ≈ 189 MB.

Time. A run's work is counted in floating-point operations per trained token (forward + backward):

    6 × (encoder weights: layers × (4·hidden² + 2·hidden·ffn))      the dense layers
  + 12 × layers × hidden × block length                              attention scores and mixing
  + 6 × hidden × 30,522 × masking rate                               the vocabulary logits, masked tokens only

plus held-out evaluations (a forward pass: a third of that per token). The machine's speed in
operations per second is kept by a :class:`SpeedBook` (one per server, owned by the pretraining
service): the last run's measured speed, or before any run a quick calibration through the run's own
training code (:func:`bertdemo.pretrain.calibration.calibrate`, passed in by that service). Torch-free
(the page checks a form before torch loads); the caps themselves (:class:`bertdemo.settings.Limits`) are server settings.

A time budget counts training seconds only; a run's wall time adds its evaluations, its checkpoint
writes and its start-up (the tokenizer, the corpus, the model). :func:`estimate_run` counts
each: the evaluations and checkpoints due in the steps the budget allows, at the speeds the last run
on the same device measured (:class:`RunOverheads`); before any run, evaluations at the calibrated
rate, and start-up and checkpoint writes as not yet measured (:attr:`TimeEstimate.measured`).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bertdemo import storage
from bertdemo.pretrain import checkpoints
from bertdemo.pretrain.config import VOCAB_SIZE, TrainConfig, param_count_of_run
from bertdemo.pretrain.heldout import EVAL_TOKENS
from bertdemo.settings import DiskRules, Limits  # Limits: the caps check_public applies (its home: settings)

ACTIVATION_BYTES = 180  # per (token × hidden unit × layer), kept for backward
STATE_BYTES_PER_PARAM = 16  # weights + gradients + AdamW m and v, fp32
BASE_BYTES = 300 * 2**20
HEADROOM = 0.8  # never plan to use more than this share of the memory available now
CHECKPOINT_BYTES_PER_PARAM = 12  # fp32 weights + AdamW m and v on disk
CHECKPOINT_EXTRA_BYTES = 2 * 10**6  # tokenizer, configs, metrics
BURST_SECONDS = 120  # the GPU time one ZeroGPU burst asks for (pretrain/gpu_entry.py, pretrain/zerogpu.py)
BURST_TIME_SHARE = 0.75  # a burst's training stops at this share of it: evaluation and the hand-back fit in the rest


def check_public(cfg: TrainConfig, limits: Limits) -> None:
    """ValueError with a clear message when a run exceeds a public server's caps."""
    n_params = param_count_of_run(cfg)
    if n_params > limits.max_params:
        raise ValueError(f"This model has {n_params:,} parameters; this public server trains models up to "
                         f"{limits.max_params:,}. Choose a smaller size (bert-tiny or bert-mini).")
    if cfg.optim.steps > limits.max_steps:
        raise ValueError(f"{cfg.optim.steps:,} steps is more than this public server allows ({limits.max_steps:,}).")
    if cfg.monitor.eval_batches > limits.max_eval_batches:
        raise ValueError(f"{cfg.monitor.eval_batches:,} held-out batches per evaluation is more than this public "
                         f"server allows ({limits.max_eval_batches}).")
    tokens = cfg.max_seq_len() * cfg.optim.batch_size
    if tokens > limits.max_tokens_per_step:
        raise ValueError(f"Block length × batch size is {cfg.max_seq_len()} × {cfg.optim.batch_size} = {tokens:,} "
                         f"tokens per step; this public server allows {limits.max_tokens_per_step:,}. "
                         "Lower the batch size or the block length.")


def estimate_memory_bytes(cfg: TrainConfig) -> int:
    """Rough peak memory of a run (see the module docstring for the formula)."""
    layers, hidden, _, _ = cfg.model_shape()
    tokens = cfg.optim.batch_size * cfg.max_seq_len()
    activations = tokens * hidden * layers * ACTIVATION_BYTES
    logits = int(tokens * VOCAB_SIZE * 4 * cfg.objective.mlm_probability)
    return param_count_of_run(cfg) * STATE_BYTES_PER_PARAM + activations + logits + BASE_BYTES


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation now: MemAvailable of /proc/meminfo, else free pages (None if unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def checkpoint_bytes(cfg: TrainConfig) -> int:
    """Disk one checkpoint of this run takes (weights and optimizer state)."""
    return param_count_of_run(cfg) * CHECKPOINT_BYTES_PER_PARAM + CHECKPOINT_EXTRA_BYTES


def kept_saves(cfg: TrainConfig, disk: DiskRules) -> int:
    """The most checkpoints this run keeps: ``disk.kept_per_run``, and, for a run resumed to continue a finished
    schedule (or an earlier continuation) with milestones kept, each save that ended a schedule in its run's folder
    up to the step it resumes from (at least the one its schedule begins again from)."""
    kept = disk.kept_per_run
    if not cfg.system.resume_from or disk.keep_milestones <= 0:
        return kept
    try:
        state = checkpoints.read_state(cfg.system.resume_from)
    except (ValueError, OSError):  # not a checkpoint: the run itself refuses it
        return kept
    if not checkpoints.rewarm_step(state, cfg.optim.steps):
        return kept
    run = Path(cfg.system.resume_from).parents[1]  # <run>/steps/<step>: the folder the continuation saves into
    ended = [p for p in checkpoints.step_folders(run)
             if checkpoints.step_of(p)[0] <= int(state.get("step", 0)) and checkpoints.ended_schedule(p)]
    return kept + max(len(ended), 1)


def check_disk(cfg: TrainConfig, runs_dir: str | Path, disk: DiskRules) -> int:
    """Disk the run's kept checkpoints (:func:`kept_saves`: the latest ``disk.keep_checkpoints``, the log-spaced
    ``disk.keep_milestones`` and a continuation's first save) need; ValueError when the server's disk budget
    (``disk``) or the free space of ``runs_dir``'s disk cannot hold them (in every mode)."""
    need = checkpoint_bytes(cfg) * kept_saves(cfg, disk)
    disk.check(adding=need)
    folder = Path(runs_dir)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return need
    if need > free:
        raise ValueError(f"This run's checkpoints need about {storage.size_text(need)} of disk, but only "
                         f"{storage.size_text(free)} is free. Choose a smaller model, or delete earlier runs.")
    return need


def check_memory(cfg: TrainConfig, available: int | None = None, processes: int = 1) -> int:
    """The run's memory estimate (``processes`` ranks of it on this machine); ValueError when it will not
    fit in the memory available now."""
    need = estimate_memory_bytes(cfg) * max(1, processes)
    available = available_memory_bytes() if available is None else available
    if available is not None and need > available * HEADROOM:
        raise ValueError(f"This run needs about {need / 2**30:.1f} GB of memory, but only {available / 2**30:.1f} GB "
                         "is free on this machine. Lower the batch size, the block length or the model size.")
    return need


# --- time -----------------------------------------------------------------------------------------

CALIBRATION_STEPS = 3


def flops_per_token(cfg: TrainConfig) -> float:
    """Training operations per token (forward + backward) of this run's model at its longest block."""
    layers, hidden, _, ffn = cfg.model_shape()
    dense = layers * (4 * hidden * hidden + 2 * hidden * ffn)
    attention = 2 * layers * hidden * cfg.max_seq_len()
    # the vocabulary projection runs at the predicted positions: 15 % of them for a masked LM, all for a left-to-right LM
    logits = hidden * VOCAB_SIZE * (1.0 if cfg.objective.objective == "ltr" else cfg.objective.mlm_probability)
    return 6.0 * (dense + attention + logits)


def work_flops(cfg: TrainConfig, steps: int | None = None) -> float:
    """Operations of ``steps`` (default: all) training steps and the evaluations due in them."""
    steps = cfg.optim.steps if steps is None else steps
    evals = steps // cfg.monitor.eval_every + 1
    return flops_per_token(cfg) * steps * cfg.optim.batch_size * cfg.max_seq_len() + evals * evaluation_flops(cfg)


def run_device(cfg: TrainConfig) -> str:
    """The device type the run will train on ("cpu" on ZeroGPU and where there is no GPU)."""
    from bertdemo.models.device import resolve_device

    return resolve_device(cfg.system.device).type


def evaluation_flops(cfg: TrainConfig) -> float:
    """Operations of one held-out evaluation: a forward pass (a third of training's per token) over the fixed
    questions' blocks (at most :data:`~bertdemo.pretrain.heldout.EVAL_TOKENS` tokens), and over
    ``eval_batches`` training batches for next-sentence prediction when the run has it."""
    tokens = EVAL_TOKENS + (cfg.monitor.eval_batches * cfg.optim.batch_size * cfg.max_seq_len() if cfg.objective.nsp else 0)
    return flops_per_token(cfg) * tokens / 3.0


@dataclass(frozen=True)
class RunOverheads:
    """What a run measured beside its training steps, on one device type."""

    startup_s: float  # Start to the first training step, its step-0 evaluation left out: tokenizer, corpus, model
    eval_rate: float  # operations per second of its evaluations (evaluation_flops / seconds per evaluation)
    save_s: float  # seconds per checkpoint write


def measured_overheads(cfg: TrainConfig, startup_s: float, eval_s: float, evals: int, save_s: float,
                       saves: int) -> RunOverheads | None:
    """A finished run's overheads from its totals (None when it made no evaluation to time)."""
    if evals <= 0 or eval_s <= 0:
        return None
    return RunOverheads(startup_s=max(0.0, startup_s), eval_rate=evaluation_flops(cfg) * evals / eval_s,
                        save_s=save_s / saves if saves > 0 else 0.0)


@dataclass(frozen=True)
class TimeEstimate:
    """A run's wall time, part by part."""

    training_s: float  # training steps: the time budget when it ends the run first
    budget_ends_it: bool  # the time budget ends the run before its last step
    evaluations: int  # held-out evaluations due (the step-0 one included)
    evaluation_s: float
    checkpoints: int  # checkpoint writes (at the interval and the last)
    checkpoint_s: float
    startup_s: float
    measured: bool  # start-up and checkpoint writes measured by a run on this device (else not counted yet)

    @property
    def total_s(self) -> float:
        return self.training_s + self.evaluation_s + self.checkpoint_s + self.startup_s


def estimate_run(cfg: TrainConfig, rate: float, overheads: RunOverheads | None = None,
                 eval_rate: float | None = None) -> TimeEstimate:
    """The run's wall time at ``rate`` training operations per second: its training (to the last step or
    the time budget), the evaluations and checkpoints due in the steps that fit, and its start-up.
    Evaluations run at the measured ``overheads``' speed, else at ``eval_rate``, else at ``rate``; start-up
    and checkpoint writes are counted only when measured."""
    step_flops = flops_per_token(cfg) * cfg.optim.batch_size * cfg.max_seq_len()
    steps, budget = cfg.optim.steps, cfg.optim.time_budget_s
    all_steps_s = steps * step_flops / rate
    ends = 0 < budget < all_steps_s
    done = min(steps, int(budget * rate / step_flops)) if ends else steps
    every = max(1, cfg.monitor.eval_every)
    evaluations = done // every + 1 + (0 if ends or done % every == 0 else 1)  # step 0, each interval, the last
    interval = cfg.monitor.checkpoint_every
    checkpoints = 1 + ((done - 1) // interval if interval and done > 0 else 0)
    eval_rate = overheads.eval_rate if overheads is not None else (eval_rate or rate)
    return TimeEstimate(
        training_s=budget if ends else all_steps_s, budget_ends_it=ends, evaluations=evaluations,
        evaluation_s=evaluations * evaluation_flops(cfg) / eval_rate, checkpoints=checkpoints,
        checkpoint_s=checkpoints * overheads.save_s if overheads is not None else 0.0,
        startup_s=overheads.startup_s if overheads is not None else 0.0, measured=overheads is not None)


class SpeedBook:
    """This machine's training speed per device type, in operations per second, and what its runs spent
    beside training (:class:`RunOverheads`): measured by the runs, or calibrated once before the first.
    One per server (the run service owns it); thread-safe."""

    def __init__(self, calibrator: Callable[[str], float],
                 eval_calibrator: Callable[[str], float] | None = None) -> None:
        """``calibrator``: device type -> training operations per second (the server's: the engine's own,
        :mod:`bertdemo.pretrain.calibration`); ``eval_calibrator``: the same for a held-out evaluation
        (default: ``calibrator``)."""
        self._calibrate = calibrator
        self._calibrate_eval = eval_calibrator or calibrator
        self._lock = threading.Lock()
        self._rates: dict[str, float] = {}  # device type ("cpu", "cuda") -> operations per second
        # (device type, objective) -> operations per second that objective's last run measured: a left-to-right run
        # does more of its work in one large projection, which runs faster per operation than a masked LM's
        self._objective_rates: dict[tuple[str, str], float] = {}
        self._eval_rates: dict[str, float] = {}  # device type -> evaluation operations per second, calibrated
        self._overheads: dict[str, RunOverheads] = {}  # device type -> the last measured run's overheads

    def record(self, cfg: TrainConfig, tokens_per_s: float, device: str = "cpu",
               overheads: RunOverheads | None = None) -> None:
        """Remember the speed a run measured on ``device`` and what it spent beside training (used for the
        next estimates); 0 and None say nothing."""
        kind = device.split(":")[0]
        with self._lock:
            if tokens_per_s > 0:
                self._rates[kind] = tokens_per_s * flops_per_token(cfg)
                self._objective_rates[(kind, cfg.objective.objective)] = self._rates[kind]
            if overheads is not None:
                self._overheads[kind] = overheads

    def overheads(self, device: str = "cpu") -> RunOverheads | None:
        """What the last measured run on ``device`` spent beside training (None before any)."""
        with self._lock:
            return self._overheads.get(device.split(":")[0])

    def _speeds(self, cfg: TrainConfig) -> tuple[float, RunOverheads | None, float | None]:
        """(training rate, the last measured run's overheads, the calibrated evaluation rate when there are
        none) on the device ``cfg`` trains on: :func:`estimate_run`'s arguments after ``cfg``."""
        device = run_device(cfg)
        overheads = self.overheads(device)
        rate = self.rate(device, cfg.objective.objective)
        return rate, overheads, None if overheads is not None else self.eval_rate(device)

    def estimate(self, cfg: TrainConfig) -> TimeEstimate:
        """The run's wall time, part by part, on the device it will train on: evaluations at the speed the
        last run measured, else at the calibrated one."""
        return estimate_run(cfg, *self._speeds(cfg))

    def check_time(self, cfg: TrainConfig, max_seconds: float) -> float:
        """:func:`check_time` with this book's speeds: the run's wall-time estimate, or ValueError past
        ``max_seconds``."""
        return check_time(cfg, max_seconds, *self._speeds(cfg))

    def eval_rate(self, device: str = "cpu") -> float:
        """Operations per second of a held-out evaluation on ``device``, calibrated once."""
        with self._lock:
            if device not in self._eval_rates:
                self._eval_rates[device] = self._calibrate_eval(device)
            return self._eval_rates[device]

    def rate(self, device: str = "cpu", objective: str | None = None) -> float:
        """Operations per second on ``device``: the last run's of ``objective`` when one was measured, else the last
        run's measured speed, else a calibration (once)."""
        with self._lock:
            if (device, objective) in self._objective_rates:
                return self._objective_rates[(device, objective)]
            if device not in self._rates:
                self._rates[device] = self._calibrate(device)
            return self._rates[device]

    def estimate_seconds(self, cfg: TrainConfig, steps: int | None = None) -> float:
        """Wall time of the run (or of ``steps`` of it) on the device it will train on."""
        return estimate_seconds(cfg, self.rate(run_device(cfg), cfg.objective.objective), steps)



def estimate_seconds(cfg: TrainConfig, rate: float, steps: int | None = None) -> float:
    """Wall time of the run (or of ``steps`` of it) at ``rate`` operations per second; a whole run ends
    at its time budget if that comes first."""
    seconds = work_flops(cfg, steps) / rate
    budget = cfg.optim.time_budget_s
    return min(seconds, budget) if steps is None and budget > 0 else seconds


def duration_text(seconds: float) -> str:
    """e.g. "about 40 s", "about 12 min", "about 3.5 h"."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def clock_text(seconds: float) -> str:
    """A measured duration, e.g. "6m40s", "1h05m"."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def check_time(cfg: TrainConfig, max_seconds: float, rate: float, overheads: RunOverheads | None = None,
               eval_rate: float | None = None) -> float:
    """The run's wall-time estimate (:func:`estimate_run`: evaluations, checkpoints and start-up counted)
    at ``rate`` operations per second; ValueError when it exceeds ``max_seconds`` (a public server's cap,
    which counts wall time), naming the number of steps that would fit."""
    seconds = estimate_run(cfg, rate, overheads, eval_rate).total_s
    if seconds > max_seconds:
        fit = steps_that_fit(cfg, max_seconds, rate, overheads, eval_rate)
        advice = (f"Lower Steps to about {fit:,}, or the batch size, the block length or the model size." if fit else
                  "No number of steps fits with these evaluations and checkpoints: evaluate or save less often, or "
                  "lower the batch size, the block length or the model size.")
        raise ValueError(f"This run would take {duration_text(seconds)} here; this public server stops runs after "
                         f"{max_seconds / 60:g} minutes. {advice}")
    return seconds


def steps_that_fit(cfg: TrainConfig, max_seconds: float, rate: float, overheads: RunOverheads | None = None,
                   eval_rate: float | None = None) -> int:
    """The most steps below ``cfg``'s whose whole run (:func:`estimate_run`: evaluations, checkpoints and start-up
    counted, as the refusal counts them) fits in ``max_seconds``; 0 when not even one does."""
    def fits(steps: int) -> bool:
        return estimate_run(cfg.replace(steps=steps), rate, overheads, eval_rate).total_s <= max_seconds

    low, high = 0, max(cfg.optim.steps - 1, 0)  # the answer lies in [low, high]; fits(low) or low == 0
    while low < high:  # the estimate grows with the steps: bisect
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low if low and fits(low) else 0


# --- time left of a run under way -------------------------------------------------------------------

ETA_PERIODS = 5  # windows (of one evaluation period each) the time left is averaged over


@dataclass(frozen=True)
class Eta:
    """Seconds left of a run under way, how far they may be off, and what they rest on."""

    seconds: float
    low: float  # at the fastest window's speed
    high: float  # at the slowest window's speed
    basis: str  # e.g. "the speed of the last 5 evaluation periods", "rough: from the first 20 steps"


def run_eta(total_steps: int, step: int, steps: Sequence[int], wall_s: Sequence[float], period: int) -> Eta | None:
    """Time left of a run from its own measured speed (``steps``/``wall_s``: its train log, training
    seconds at each logged step; ``period``: steps between evaluations).

    The log is cut into windows of at least ``period`` steps, each holding its training steps and
    one evaluation, so evaluations are counted at their share. The estimate is the mean seconds per
    step of the last ``ETA_PERIODS`` windows (a moving average: one slow or fast stretch moves it
    by a fifth) times the steps left, and its range that of the slowest and fastest of them. Before
    two whole windows: the speed since the first logged step, marked rough. None before two logged steps.
    """
    points = list(zip(steps, wall_s))
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    left = max(0, total_steps - step)
    windows = []
    s0, w0 = points[0]  # the first log: the start-up before it (allocations, first batches) is left out
    for s, w in points[1:]:
        if s - s0 >= max(1, period):
            windows.append((w - w0) / (s - s0))
            s0, w0 = s, w
    recent = windows[-ETA_PERIODS:]
    if len(recent) >= 2:
        per_step = sum(recent) / len(recent)
        return Eta(left * per_step, left * min(recent), left * max(recent),
                   f"the speed of the last {len(recent)} evaluation periods")
    (first, w_first), (last, w_last) = points[0], points[-1]
    per_step = (w_last - w_first) / (last - first)
    return Eta(left * per_step, left * per_step, left * per_step, f"rough: from the first {last:,} steps")

"""The training loop shared by the app's run thread and the headless CLI (also under torchrun).

Read it in one sitting: :func:`run_training` sets up a :class:`Trainer` (tokenizer, blocks,
model, optimizer), then repeats ``train_step`` and, at their intervals, ``log``,
``evaluate`` and ``save``, checking pause/stop between steps. What an evaluation computes is
:mod:`bertdemo.pretrain.evaluation`; timing this machine before a run is :mod:`bertdemo.pretrain.calibration`.

Data and masks never leave the device: blocks live there, an epoch permutation and fresh
masks are drawn there with a seeded generator, and the host reads the loss only every
``log_every`` steps. Under torchrun the ranks agree on a stop at those same log steps (one
all-reduce carries the losses and the stop flag), so no rank waits alone in an all-reduce.
The metrics buffer is the only thing shared with other threads.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import AutoTokenizer

from bertdemo.models.device import resolve_device
from bertdemo.models.embedded import tokenizer_dir
from bertdemo.models.load_errors import shown_fault
from bertdemo.pretrain import budget, checkpoints, timeline
from bertdemo.pretrain.config import TrainConfig, param_count_of_model
from bertdemo.pretrain.data import Blocks, prepare_blocks
from bertdemo.pretrain.evaluation import answer_questions, evaluate_heldout, predict_masks, probe_answers
from bertdemo.pretrain.hardware import autocast, keep_freed_memory, thread_count, use_bf16
from bertdemo.pretrain.heldout import heldout_questions
from bertdemo.pretrain.landmarks import count_ngrams, landmark_losses
from bertdemo.pretrain.locality import LocalityBias, locality_checkpoint_note
from bertdemo.pretrain.metrics import MetricsBuffer, RunSnapshot, history_dict, metrics_csv, restore_history
from bertdemo.pretrain.model import (
    BatchMaker,
    PretrainObjective,
    apply_freeze,
    build_model,
    load_checkpoint_model,
    load_weights,
    model_from_config,
    remove_position_embeddings,
    starts_on_neighbours,
)
from bertdemo.pretrain.probes import tracked_probes
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status
from bertdemo.settings import DiskRules

FINAL_EVAL_SECONDS = 15.0  # the evaluation a stopped run makes before its last checkpoint ends by then

@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


@dataclass
class TrainerState:
    """What a trainer continues from when it is handed the run in memory (a GPU burst)."""

    model_config: dict  # config.json of the model: its architecture
    model_state: dict  # parameter name -> tensor (CPU)
    optimizer_state: dict  # AdamW's state_dict()
    state: dict  # trainer_state.json's content: step, run identity, metric history


def _barrier(dist: DistInfo) -> None:
    if dist.world_size > 1:
        torch.distributed.barrier()


def training_device(cfg: TrainConfig, dist: DistInfo) -> torch.device:
    """The run's device (ValueError when the one asked for is missing); under torchrun each rank its own GPU."""
    device = resolve_device(cfg.system.device)
    if device.type == "cuda" and dist.world_size > 1:
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
    return device


class Trainer:
    """One run's model, optimizer, data and counters; each method is one part of the loop."""

    def __init__(self, cfg: TrainConfig, metrics: MetricsBuffer, run_folder: Path | None, dist: DistInfo,
                 run_info: dict, device: torch.device, control: RunControl, initial: TrainerState | None = None,
                 disk: DiskRules | None = None) -> None:
        """``initial``: start from these weights, optimizer state and trainer state (a GPU burst) instead
        of ``cfg``'s checkpoint or a new model; ``disk``: checkpoints kept and the disk budget."""
        self.cfg, self.metrics, self.dist = cfg, metrics, dist
        self.run_folder = None if run_folder is None else Path(run_folder)  # its checkpoints; None: save() refuses
        self.run_info, self.device, self.control, self.disk = run_info, device, control, disk
        metrics.update(status=Status.PREPARING, device=str(device), message="Loading the tokenizer…")
        self.tokenizer = AutoTokenizer.from_pretrained(cfg.data.tokenizer or str(tokenizer_dir()))
        phase_blocks = self._setup_data()
        state = self._setup_model(initial)
        self._setup_optimizer(initial)
        self._move_data(phase_blocks)
        self._setup_evaluation(phase_blocks)
        self.make_batch = BatchMaker(cfg, self.tokenizer, device)
        self.bf16 = use_bf16(device, cfg.system.precision)
        # the data order and the masks are functions of the seed and the step, not of the step a run began at: a run
        # resumed anywhere draws what it would have drawn uninterrupted (so twins stopped at different steps stay
        # on the same batches)
        self.seed_base = (cfg.system.seed + 7919 * dist.rank) * 1_000_003
        self.generator = torch.Generator(device=device)  # each step's masks (and NSP pairs), reseeded per step
        self.order_key: tuple[int, int] | None = None
        self.step = self.start_step
        self.saved_step = self.start_step if state is not None else -1
        self.seq_len = self.phase_length(self.step)
        self.train_blocks, self.heldout = self.data[self.seq_len]
        # the tokens read before this sitting: its history's last log, and the steps between that log and the save
        done, logged = metrics.get("tokens"), metrics.get("steps")
        self.tokens_seen = (done[-1] if done else 0) + self.tokens_between(logged[-1] if done else 0, self.start_step)
        self.loss_sum = torch.zeros((), device=device)  # masked-LM loss summed since the last log
        self.nsp_loss_sum = torch.zeros((), device=device)  # NSP loss summed since the last log
        self.steps_since_log = 0
        self.elapsed = float(run_info.get("elapsed_s", 0.0))
        self.t_last = time.perf_counter()
        self.rate_window_s, self.rate_window_steps = 0.0, 0
        self.clock = time.perf_counter  # what the time budget counts (a benchmark may count CPU time instead)
        self.train_seconds = self.elapsed  # seconds spent in train_step: the time budget's clock
        m = cfg.model
        self.locality = LocalityBias(self.model, m.locality_bias, m.locality_fade)
        self.locality.update(self.progress())
        if self.locality.active:
            metrics.update(locality_plan="permanent" if m.locality_fade == 0 else "fades")
        metrics.update(attention_start="neighbours" if starts_on_neighbours(cfg) else "")

    def _setup_data(self) -> dict[int, Blocks]:
        """The packed blocks of every block length the schedule uses (tokenized once, then cached)."""
        self.phases = self.cfg.seq_len_phases()  # (first step, block length); one unless a schedule is set
        phase_blocks = {length: self._blocks(length) for length in sorted({n for _, n in self.phases})}
        self.corpus_label = next(iter(phase_blocks.values())).corpus_label
        return phase_blocks

    def _setup_model(self, initial: TrainerState | None) -> dict | None:
        """The model: continued (weights in hand, or the checkpoint to resume) or new and seeded; returns
        the trainer state it continues from (None for a new run)."""
        cfg, metrics = self.cfg, self.metrics
        self.start_step = self.rewarm_at = 0
        state = None
        if initial is not None or cfg.system.resume_from:
            state = initial.state if initial is not None else checkpoints.read_state(cfg.system.resume_from)
            self.start_step = int(state.get("step", 0))
            self.rewarm_at = checkpoints.rewarm_step(state, cfg.optim.steps)
            restore_history(metrics, state.get("history", {}))
            if initial is not None:  # weights in hand: a model of the run's architecture, then its state dict
                self.model = model_from_config(initial.model_config, cfg.objective.nsp)
                load_weights(self.model, initial.model_state)
            else:
                self.model = load_checkpoint_model(cfg.system.resume_from, cfg.objective.nsp)
            apply_freeze(self.model, cfg.model.train_layers, cfg.model.freeze_embeddings)
            if not cfg.model.position_embeddings:
                remove_position_embeddings(self.model)
        else:
            with torch.random.fork_rng(devices=[]):  # seeded init without touching the process's RNG
                torch.manual_seed(cfg.system.seed)
                self.model = build_model(cfg, self.tokenizer)
        self.run_info.setdefault("started_at", (state or {}).get("started_at",
                                                                 datetime.now().isoformat(timespec="seconds")))
        if state is not None:  # a resumed run's clock goes on from its checkpoint's (the command line passes none)
            self.run_info.setdefault("elapsed_s", float(state.get("elapsed_s") or 0.0))
        self.n_params = param_count_of_model(self.model)
        metrics.update(param_count=self.n_params, step=self.start_step, total_steps=cfg.optim.steps)
        self.objective = PretrainObjective(self.model).to(self.device).train()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        return state

    def _setup_optimizer(self, initial: TrainerState | None) -> None:
        """AdamW (its state continued when resuming), and the forward under DDP / torch.compile."""
        cfg, device = self.cfg, self.device
        self.optimizer = make_optimizer(self.model, cfg, device)
        if initial is not None:
            self.optimizer.load_state_dict(initial.optimizer_state)
        elif cfg.system.resume_from:
            checkpoints.load_optimizer_state(cfg.system.resume_from, self.optimizer)
        self.forward = self.objective
        if self.dist.world_size > 1:
            ids = [device.index] if device.type == "cuda" else None
            self.forward = torch.nn.parallel.DistributedDataParallel(self.objective, device_ids=ids)
        if cfg.system.compile and device.type == "cuda":
            self.forward = torch.compile(self.forward)

    def _move_data(self, phase_blocks: dict[int, Blocks]) -> None:
        """This process's share of the blocks onto the device; ValueError when a batch cannot be filled."""
        dist = self.dist
        self.data = {length: (torch.from_numpy(b.train[dist.rank :: dist.world_size].astype(np.int64)).to(self.device),
                              torch.from_numpy(b.heldout.astype(np.int64)).to(self.device))  # (N, T), (N_eval, T)
                     for length, b in phase_blocks.items()}
        for length, (train, _) in self.data.items():
            if len(train) < self.cfg.optim.batch_size:
                raise ValueError(f"The corpus has only {len(train)} training blocks of {length} tokens per "
                                 "process; lower the batch size below that or use more text.")

    def _setup_evaluation(self, phase_blocks: dict[int, Blocks]) -> None:
        """The fixed held-out questions of each block length, and the landmarks on the first (rank 0 only):
        n-gram guessers counted over the run's training blocks, scored on the same questions."""
        if not self.dist.is_main:
            return
        tok = self.tokenizer
        questions = {length: heldout_questions(b.heldout, tok.all_special_ids, tok.mask_token_id)
                     for length, b in phase_blocks.items()}
        self.questions = {length: (torch.from_numpy(q.input_ids).to(self.device),
                                   torch.from_numpy(q.labels).to(self.device)) for length, q in questions.items()}
        first = self.phases[0][1]
        self.metrics.update(message="Counting words and word pairs for the landmarks…")
        counts = count_ngrams(phase_blocks[first].train, len(tok), tok.all_special_ids)
        q = questions[first]
        self.metrics.update(landmarks=landmark_losses(counts, q.input_ids, q.labels, tok.mask_token_id))

    @classmethod
    def from_state(cls, cfg: TrainConfig, model_config: dict, model_state: dict[str, torch.Tensor],
                   optimizer_state: dict, state: dict, metrics: MetricsBuffer, device: torch.device,
                   run_folder: Path | None = None) -> Trainer:
        """A trainer that continues from weights and optimizer state in memory (a GPU burst's input):
        no checkpoint is read. ``model_config``: the model's config.json content; ``state``: the trainer
        state (step, run identity, history); ``run_folder``: where :meth:`save` writes (None: nowhere)."""
        return cls(cfg, metrics, run_folder, DistInfo(), dict(state), device, RunControl(),
                   initial=TrainerState(model_config, model_state, optimizer_state, state))

    def phase_length(self, step: int) -> int:
        """The block length the schedule uses at `step`."""
        return [length for first, length in self.phases if first <= step][-1]

    def tokens_between(self, first: int, end: int) -> int:
        """The tokens every rank together reads in steps ``first`` to ``end - 1`` (each at its block length)."""
        per_batch = self.cfg.optim.batch_size * self.dist.world_size
        return sum(per_batch * self.phase_length(step) for step in range(first, end))

    def data_place(self, step: int) -> tuple[int, int]:
        """Where `step`'s batch lies in the data order: (epoch counted over the whole run, the first place of the
        batch in that epoch's order of the blocks of :meth:`phase_length`). An epoch is ``len(blocks) // batch_size`` batches of one random
        order (the blocks left over wait for the next order); a new block length starts a new epoch."""
        batch_size, epoch = self.cfg.optim.batch_size, 0
        for i, (first, length) in enumerate(self.phases):
            end = self.phases[i + 1][0] if i + 1 < len(self.phases) else None
            per_epoch = max(1, len(self.data[length][0]) // batch_size)
            if end is None or step < end:
                done = step - first
                return epoch + done // per_epoch, (done % per_epoch) * batch_size
            epoch += -(-(end - first) // per_epoch)  # the epochs this block length began
        raise AssertionError("unreachable: the last phase has no end")

    def data_order(self, length: int, epoch: int) -> torch.Tensor:
        """Epoch `epoch`'s random order of the blocks of `length` (seeded by the run's seed and the epoch)."""
        if self.order_key != (length, epoch):
            generator = torch.Generator(device=self.device)
            generator.manual_seed(self.seed_base + 2 * epoch)
            self.order = torch.randperm(len(self.data[length][0]), generator=generator, device=self.device)
            self.order_key = (length, epoch)
        return self.order

    def _blocks(self, seq_len: int) -> Blocks:
        """Packed blocks of the corpus; rank 0 tokenizes and caches first, the others then read the cache."""
        def progress(fraction: float, message: str) -> None:
            self.metrics.update(prepare_fraction=fraction, message=message)

        if not self.dist.is_main:
            _barrier(self.dist)
        blocks = prepare_blocks(self.cfg.data.corpus, self.tokenizer, seq_len, self.cfg.data.cache_dir,
                                self.cfg.data.max_corpus_tokens, self.cfg.data.heldout_fraction, progress,
                                self.cfg.data.block_starts)
        if self.dist.is_main:
            _barrier(self.dist)
        return blocks

    # one step ---------------------------------------------------------------------------
    def progress(self) -> float:
        """How much of the run is done, 0..1: the steps' share, or the time budget's when that is ahead."""
        done = self.step / self.cfg.optim.steps
        budget = self.cfg.optim.time_budget_s
        return min(1.0, max(done, self.train_seconds / budget) if budget > 0 else done)

    def out_of_time(self) -> bool:
        """Whether the run's time budget (if any) is spent."""
        return 0 < self.cfg.optim.time_budget_s <= self.train_seconds

    def locality_strength(self) -> float:
        """The locality bias the model's attention adds now, as a share of its starting strength, read from its
        attention modules (0: the model is a standard BERT)."""
        return self.locality.applied_strength()

    def train_step(self) -> None:
        """One optimizer step on the step's batch (:meth:`data_place`; new masks always)."""
        cfg = self.cfg
        started = self.clock()
        progress = self.progress()  # the locality bias was set for it when the last step ended (or at start)
        batch_size = cfg.optim.batch_size
        length = self.phase_length(self.step)
        if length != self.seq_len:  # the schedule moves to longer blocks: a new epoch over them
            previous, self.seq_len = self.seq_len, length
            self.train_blocks, self.heldout = self.data[length]
            self.metrics.update(message=f"Block length {previous} -> {length} at step {self.step}: position "
                                        f"embeddings {previous}-{length - 1} train only from now on.")
            self.metrics.log_event(timeline.length_event(previous, length), self.step, self.tokens_seen, self.elapsed)
        epoch, first = self.data_place(self.step)
        ids = self.data_order(length, epoch)[first : first + batch_size]  # (B,) block indices
        self.generator.manual_seed(self.seed_base + 2 * self.step + 1)
        batch = self.make_batch(self.train_blocks[ids], self.generator, block_ids=ids, epoch=epoch)
        self.tokens_seen += batch_size * length * self.dist.world_size
        self.lr = lr_at(self.step, cfg, progress, self.rewarm_at)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        with autocast(self.device, self.bf16):
            out = self.forward(**batch)
        out["loss"].backward()
        if cfg.optim.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, cfg.optim.grad_clip, foreach=True)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.loss_sum += out["mlm_loss"].detach()
        if "nsp_loss" in out:
            self.nsp_loss_sum += out["nsp_loss"].detach()
        self.steps_since_log += 1
        self.step += 1
        self.train_seconds += self.clock() - started
        self.locality.update(self.progress())  # the model as it stands now: evaluations, probes, checkpoints see it

    # logging ----------------------------------------------------------------------------
    def log(self, stop_requested: bool) -> bool:
        """Record the mean losses since the last log (the one host sync per interval) and the speed.

        Returns whether any rank asked to stop: under torchrun the ranks agree here, together."""
        values = torch.stack([self.loss_sum, self.nsp_loss_sum]) / self.steps_since_log
        values = torch.cat([values, torch.tensor([float(stop_requested)], device=self.device)])
        if self.dist.world_size > 1:
            torch.distributed.all_reduce(values)
            values[:2] /= self.dist.world_size
        mlm_loss, nsp_loss, stops = values.tolist()
        check_finite_loss(mlm_loss + nsp_loss, self.step)  # before any save: a NaN model is never written
        now = time.perf_counter()
        self.rate_window_s += now - self.t_last
        self.rate_window_steps += self.steps_since_log
        self.elapsed += now - self.t_last
        self.t_last = now
        rate = self.rate_window_steps / max(self.rate_window_s, 1e-9)  # steps/s
        tokens_per_step = self.cfg.optim.batch_size * self.seq_len * self.dist.world_size
        self.metrics.log_train(self.step, mlm_loss, self.lr, nsp_loss if self.cfg.objective.nsp else None,
                               self.tokens_seen, self.elapsed)
        eta = budget.run_eta(self.cfg.optim.steps, self.step, self.metrics.get("steps"), self.metrics.get("wall_s"),
                             self.cfg.monitor.eval_every)  # (this thread is the log's only writer)
        if eta is not None and self.cfg.optim.time_budget_s > 0:  # the time budget may run out first
            left = max(0.0, self.cfg.optim.time_budget_s - self.train_seconds)
            eta = dataclasses.replace(eta, seconds=min(eta.seconds, left), low=min(eta.low, left),
                                      high=min(eta.high, left))
        self.metrics.update(tokens_per_s=rate * tokens_per_step, elapsed_s=self.elapsed,
                            **({} if eta is None else dict(eta_s=eta.seconds, eta_low_s=eta.low, eta_high_s=eta.high,
                                                           eta_basis=eta.basis)))
        self.loss_sum.zero_(), self.nsp_loss_sum.zero_()
        self.steps_since_log = 0
        if self.rate_window_s > 5.0:  # the rate is over the last few seconds
            self.rate_window_s, self.rate_window_steps = 0.0, 0
        return stops > 0

    # evaluation and checkpoints ----------------------------------------------------------
    def evaluate(self, final: bool = False) -> None:
        """Held-out loss/accuracy and the probe's guesses at this step (rank 0 only). A Stop cuts an
        evaluation short; the final one that a stopped run makes before its last checkpoint has
        FINAL_EVAL_SECONDS (Stop, or the wall-time cap, has already been asked for: it ends soon)."""
        if not self.dist.is_main:
            return
        started = time.perf_counter()
        try:
            self._evaluate(final)
        finally:
            self.metrics.log_beside_training("eval", time.perf_counter() - started)

    def _evaluate(self, final: bool) -> None:
        if final:
            deadline = time.monotonic() + FINAL_EVAL_SECONDS
            should_stop = lambda: time.monotonic() > deadline
        else:
            should_stop = self.control.stop_event.is_set
        result = answer_questions(self.model, self.questions[self.seq_len], self.device, self.bf16, should_stop)
        nsp = {}
        if result is not None and self.cfg.objective.nsp:  # NSP is scored on the training recipe's pairs
            nsp = evaluate_heldout(self.objective, self.heldout, self.make_batch, self.cfg, self.device, self.bf16,
                                   should_stop=should_stop) or {}
        if result is not None:
            self.metrics.log_eval(self.step, result["loss"], result["top1"], nsp.get("nsp_loss"), nsp.get("nsp_acc"),
                                  self.tokens_seen, self.elapsed, top5=result["top5"],
                                  median_rank=result["median_rank"],
                                  locality=self.locality_strength() if self.locality.active else None)
        self.probe()

    def probe(self) -> None:
        """The learner's probe: top-5 at each [MASK]; every tracked probe: top-5 and the expected word's
        rank at its first [MASK] (rank 0 only)."""
        if not self.dist.is_main:
            return
        self.control.probe_event.clear()
        text = self.metrics.get("probe_text") or self.cfg.monitor.probe_text
        expected = self.metrics.get("probe_expected") or (
            self.cfg.monitor.probe_expected if text == self.cfg.monitor.probe_text else "")
        tracked = tracked_probes(text, expected)
        try:
            self.metrics.log_probe(self.step, predict_masks(self.model, self.tokenizer, text, self.device), text)
            answers = probe_answers(self.model, self.tokenizer, [(t, e) for t, e, _ in tracked], self.device)
        except ValueError:
            return  # the probe text was validated on input; never fail a run over it
        self.metrics.log_probe_ranks(self.step, [(t, e, own, a.top5, a.rank) for (t, e, own), a in zip(tracked, answers)],
                                     self.tokens_seen, self.elapsed)

    def save(self) -> None:
        """Write the checkpoint of this step atomically (rank 0 only, once per step)."""
        if not self.dist.is_main or self.step == self.saved_step:
            return
        if self.run_folder is None:
            raise ValueError("This trainer was given no run folder to save checkpoints into.")
        if self.steps_since_log:  # losses not yet logged: check them (one host sync) before writing
            check_finite_loss((self.loss_sum + self.nsp_loss_sum).item(), self.step)
        self.run_info["elapsed_s"] = self.elapsed
        snap = self.metrics.snapshot()
        state = {**self.run_info, "step": self.step, "total_steps": self.cfg.optim.steps, "preset": self.cfg.model.preset,
                 "nsp": self.cfg.objective.nsp, "objective": self.cfg.objective.objective, "corpus": self.cfg.data.corpus, "param_count": self.n_params,
                 "history": history_dict(snap)}
        if self.rewarm_at:  # a continued run keeps where its schedule began again, for its next resume
            state["rewarm_at"] = self.rewarm_at
        strength = self.locality.strength
        if strength > 0:  # the saved model is a stock BERT: it predicts without the bias the run still trains with
            state["locality_strength"] = strength
        started = time.perf_counter()
        path = checkpoints.write_checkpoint(self.run_folder, self.model, self.tokenizer, self.cfg.to_dict(), state,
                                            metrics_csv(snap), self.optimizer, disk=self.disk)
        self.metrics.log_beside_training("save", time.perf_counter() - started)
        self.metrics.add_checkpoint(str(path))
        if strength > 0:
            self.metrics.update(message=locality_checkpoint_note(self.step, strength))
        self.saved_step = self.step

    def evaluate_and_save_if_due(self) -> None:
        """At eval / checkpoint intervals (and the last step); that time is not counted as training."""
        cfg, step = self.cfg, self.step
        eval_due = step % cfg.monitor.eval_every == 0 or step == cfg.optim.steps
        save_due = bool(cfg.monitor.checkpoint_every) and step % cfg.monitor.checkpoint_every == 0 and step < cfg.optim.steps
        if eval_due:
            self.evaluate()
        if save_due:
            self.save()
        if eval_due or save_due:
            self.t_last = time.perf_counter()

    def wait_while_paused(self) -> None:
        """Block while the pause event is set (the stop event ends the wait)."""
        self.elapsed += time.perf_counter() - self.t_last
        self.metrics.update(status=Status.PAUSED, message="Paused.")
        self.control.wait_while_paused(self.step)  # records the step it holds at (the tests read it)
        if not self.control.stop_event.is_set():
            self.metrics.update(status=Status.RUNNING, message="Training.")
        self.t_last = time.perf_counter()


def check_finite_loss(loss: float, step: int) -> None:
    """ValueError (the run fails, its last good checkpoint kept) when the loss is NaN or infinite."""
    if not np.isfinite(loss):
        what = "NaN" if np.isnan(loss) else "infinite"
        raise ValueError(f"The loss became {what} at step {step}: lower the learning rate "
                         "(the last good checkpoint is kept).")


def run_training(
    cfg: TrainConfig,
    *,
    metrics: MetricsBuffer,
    run_folder: Path,
    control: RunControl | None = None,
    dist: DistInfo | None = None,
    run_info: dict | None = None,
    on_step: Callable[[int], None] | None = None,
    raise_on_failure: bool = False,
    disk: DiskRules | None = None,
) -> str:
    """Train per `cfg`, writing metrics and checkpoints; returns the final status (finished/stopped/failed).

    Every failure — a device that is missing, a corpus that cannot be read, a fault mid-run —
    ends the run with status "failed" and the reason in the metrics; earlier checkpoints stay.
    ``raise_on_failure`` (the CLI): the failure is then also raised, after it is recorded.
    ``disk``: how many checkpoints the run keeps, and the server's disk budget.
    """
    control = control or RunControl()
    dist = dist or DistInfo()
    where = {"device": str(cfg.system.device)}
    try:
        return _train(cfg, metrics, Path(run_folder), control, dist, dict(run_info or {}), on_step, disk, where)
    except Exception as err:  # noqa: BLE001 - the thread must report, not die silently; earlier checkpoints stay
        failure = err
        metrics.update(status=Status.FAILED, message=failure_message(err, cfg, where["device"]))
        if not isinstance(err, ValueError) and not is_out_of_memory(err):
            traceback.print_exc()
        traceback.clear_frames(err.__traceback__)  # the failed step's frames let go of the model and batch
    if is_out_of_memory(failure):  # out of the except block: nothing holds the run's tensors any more
        release_device_memory()  # hand the cached memory back for the other tabs
    if raise_on_failure:
        raise failure
    return Status.FAILED


def _train(cfg: TrainConfig, metrics: MetricsBuffer, run_folder: Path, control: RunControl, dist: DistInfo,
           run_info: dict, on_step: Callable[[int], None] | None, disk: DiskRules | None, where: dict) -> str:
    """The loop of :func:`run_training` (which turns its exceptions into a failed run)."""
    cfg.validate()
    device = training_device(cfg, dist)
    where["device"] = str(device)
    if device.type == "cpu":
        keep_freed_memory()  # the same large tensors every step: reuse them, no page faults
    started = time.perf_counter()
    with thread_count(cfg.system.num_threads, dist.world_size, device):
        trainer = Trainer(cfg, metrics, run_folder, dist, run_info, device, control, disk=disk)
        metrics.update(status=Status.RUNNING, message=f"Training on {trainer.corpus_label} "
                       f"({len(trainer.train_blocks):,} blocks, {'bf16 autocast' if trainer.bf16 else 'fp32'}).")
        if trainer.start_step == 0:
            trainer.evaluate()
        metrics.update(startup_s=time.perf_counter() - started - metrics.get("eval_s"))  # step 0's: an evaluation
        trainer.t_last = time.perf_counter()  # the training clock starts at the first step
        single = dist.world_size == 1
        while trainer.step < cfg.optim.steps and not trainer.out_of_time():
            if single and control.stop_event.is_set():
                break
            if single and control.pause_event.is_set():
                trainer.wait_while_paused()
                continue
            trainer.train_step()
            logs = trainer.step % cfg.monitor.log_every == 0 or trainer.step == cfg.optim.steps
            if logs and trainer.log(control.stop_event.is_set()) and not single:
                break  # every rank leaves at this same step
            metrics.update(step=trainer.step)
            trainer.evaluate_and_save_if_due()
            if control.probe_event.is_set():
                trainer.probe()
            if on_step is not None:
                on_step(trainer.step)
        stopped = trainer.step < cfg.optim.steps and not trainer.out_of_time()
        trainer.elapsed += time.perf_counter() - trainer.t_last
        if stopped and trainer.step > trainer.start_step and trainer.step not in metrics.get("eval_steps"):
            metrics.update(status=Status.STOPPING, message="Final evaluation…")
            trainer.evaluate(final=True)
        metrics.update(status=Status.STOPPING if stopped else Status.RUNNING, elapsed_s=trainer.elapsed, eta_s=0.0,
                       message="Saving the final checkpoint…")
        trainer.save()
        final = Status.STOPPED if stopped else Status.FINISHED
        metrics.update(status=final, message=final_message(final, trainer.step, cfg, trainer.out_of_time(),
                                                           metrics.snapshot() if trainer.start_step == 0 else None))
        return final


def final_message(final: str, step: int, cfg: TrainConfig, out_of_time: bool, snap: RunSnapshot | None) -> str:
    """The last status line: where the run ended, what ended it (the steps, the time budget, a Stop), and
    its wall time part by part (``snap``: training, start-up, evaluations and checkpoint writes measured;
    None for a resumed run, whose earlier sessions' parts were not kept)."""
    text = f"{final.capitalize()} at step {step:,} of {cfg.optim.steps:,}"
    if final == Status.FINISHED and out_of_time and step < cfg.optim.steps:
        text += f": the time budget ({cfg.optim.time_budget_s / 60:g} min of training) ended it before the last step"
    elif final == Status.STOPPED:
        text += ": stopped by request"
    if snap is None:
        return text + "."
    def clock(seconds: float) -> str:  # a part under a minute in tenths of a second (start-up may take 0.4 s)
        return budget.clock_text(seconds) if seconds >= 60 else f"{seconds:.1f} s"

    total = snap.elapsed_s + snap.startup_s + snap.eval_s + snap.save_s
    return (f"{text}. Wall time {clock(total)}: training {clock(snap.elapsed_s)}, start-up {clock(snap.startup_s)}, "
            f"{snap.evals} evaluation{'s' if snap.evals != 1 else ''} {clock(snap.eval_s)}, "
            f"{snap.saves} checkpoint write{'s' if snap.saves != 1 else ''} {clock(snap.save_s)}.")


# --- optimizer and schedule -----------------------------------------------------------------------
# The optimizer and its schedule: AdamW with weight decay on matrices only, linear warmup then
# linear decay to zero.

def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW, weight decay on matrices only (not biases / LayerNorm); the fused kernel (one pass over
    each parameter) on CUDA and CPU, where the multi-tensor form would run op by op."""
    params = {id(p): p for p in model.parameters() if p.requires_grad}.values()  # tied weights once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    extra = {"fused": True} if device.type in ("cuda", "cpu") else {"foreach": True}
    return torch.optim.AdamW(groups, lr=cfg.optim.lr, betas=(0.9, cfg.optim.adam_beta2), eps=1e-8, **extra)


def lr_at(step: int, cfg: TrainConfig, progress: float | None = None, rewarm_at: int = 0) -> float:
    """Linear warmup to cfg.optim.lr over warmup_steps, then linear decay to 0 at cfg.optim.steps; with a
    time budget, to 0 as the run's ``progress`` (the share of its budget used, 0..1) reaches 1. A run continued
    past the end of its schedule (``rewarm_at``: the step it had finished at) warms up again from there, over
    warmup_steps, and decays to 0 at cfg.optim.steps, by steps, not by a time budget's share (a run ended by its time
    budget has not finished its schedule: continued, its schedule stretches): the learning rate never jumps from 0
    to near its peak."""
    start = rewarm_at if 0 < rewarm_at <= step else 0
    if step - start < cfg.optim.warmup_steps:
        return cfg.optim.lr * (step - start + 1) / cfg.optim.warmup_steps
    if cfg.optim.time_budget_s > 0 and progress is not None and not start:
        return cfg.optim.lr * max(0.0, 1.0 - progress)
    remaining = max(1, cfg.optim.steps - start - cfg.optim.warmup_steps)
    return cfg.optim.lr * max(0.0, 1.0 - (step - start - cfg.optim.warmup_steps) / remaining)


# --- faults ---------------------------------------------------------------------------------------
# What a failed run tells the learner: a library's exception turned into what to change.
# Out-of-memory is the fault a learner can cause from the form (a batch or a block length too
# large for the device); it gets a message naming the settings to lower, and the device's cache
# is emptied so the server keeps serving the other tabs.

_OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory")


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocator failure (CUDA, MPS or CPU)."""
    if isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(err, RuntimeError) and any(m in str(err).lower() for m in _OOM_MARKERS)


def release_device_memory() -> None:
    """Give cached device memory back after a failed run, so inference keeps working."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def failure_message(err: BaseException, cfg: TrainConfig, device: str = "cpu") -> str:
    """The run's failure as the page shows it: what happened and, for out-of-memory, what to lower."""
    if isinstance(err, ValueError):
        return str(err)
    if is_out_of_memory(err):
        batch, seq_len = cfg.optim.batch_size, cfg.data.seq_len
        smaller = max(1, batch // 2)
        where = "GPU" if device.startswith("cuda") else device.upper()
        return (f"Out of {where} memory at batch size {batch} × block length {seq_len} on {cfg.model.preset}. "
                f"Lower the batch size (e.g. to {smaller}), the block length or the model size, and start again; "
                "the last checkpoint is kept.")
    return f"{shown_fault(err)} (the whole error is in the server's log)"

"""The run service: one server's pretraining runs — starting them, who may control them, deleting them.

`RunService` holds every rule of a run that the Pretrain tab and its API apply: the checks before a
start (a run under way first, then the request, ownership of a resumed run, memory, disk, time and
the public caps), adopting an uploaded corpus, pause/resume/stop by the run's owner (stop also by
the admin), deletion, and the names the pages use for checkpoints (``run:<id>/checkpoint``). The tab
only wires components to it, and a test calls it directly.

Fine-tuning runs are a run kind of their own under the same rules (:meth:`RunService.start_finetune`):
they share the machine's one training slot (:mod:`bertdemo.pretrain.slot`: the run threads and the
manager that starts them one at a time), the owner token, the public caps and the per-visitor quota.
Torch-free at import.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from bertdemo.finetune.config import FinetuneConfig, config_from_request
from bertdemo.finetune.lab import read_baselines
from bertdemo.finetune.metrics import NAN_FIELDS, FinetuneSnapshot, finetune_csv, snapshot_from_history
from bertdemo.finetune.run import MODEL_DIRNAME, FinetuneRun, finetune_root
from bertdemo.import_lock import LOGIC_IMPORT_LOCK
from bertdemo.models import run_refs
from bertdemo.models.hub import HubProbe
from bertdemo.pretrain import budget, checkpoints, run_folders, uploads
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.form import UPLOAD, config_from_settings
from bertdemo.pretrain.landmarks import LANDMARK_LABELS
from bertdemo.pretrain.metrics import HELDOUT_EVAL, RunSnapshot, metrics_csv
from bertdemo.pretrain.slot import Clock, RunManager, TrainingRun
from bertdemo.settings import Limits, ServerSettings

TINYSTORIES_OFFLINE = ("TinyStories comes from the dataset hub, which this server cannot reach, so no run was started. "
                       "Choose the embedded Wikipedia summaries (offline), or upload a .txt / .jsonl corpus.")

NOT_YOURS = "This run belongs to another visitor; you can watch it."
NO_RUN = "There is no run to control; press Start first."


class RunAction(StrEnum):
    """What a visitor may do to the live run."""

    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"


class RunService:
    """One server's pretraining runs and their rules (see the module docstring). Thread-safe."""

    def __init__(self, settings: ServerSettings, speeds: budget.SpeedBook | None = None,
                 clock: Clock = time.monotonic, wall_clock: Clock = time.time, hub: HubProbe | None = None) -> None:
        self.settings = settings
        self.wall_clock = wall_clock  # file times are wall-clock times: an ended run's age is measured on it
        self.runs_dir = Path(settings.runs_dir)
        self.speeds = speeds or budget.SpeedBook()  # this machine's measured training speed
        self.manager = RunManager(self.runs_dir, settings.disk, self.speeds, clock)
        # TinyStories needs the dataset hub, asked before a run starts: the server's one probe (AppContext's)
        self.hub = hub or HubProbe(offline=settings.offline)

    # --- the live run ------------------------------------------------------------------------------
    @property
    def current(self) -> TrainingRun | None:
        """The latest pretraining run, active or ended (None before the first, or while the slot's latest
        run is a fine-tuning run)."""
        run = self.manager.current
        return run if isinstance(run, TrainingRun) else None

    def snapshot(self) -> RunSnapshot | None:
        """A copy of the live (or latest) pretraining run's metrics; None before any run."""
        run = self.current
        return None if run is None else run.snapshot()

    def status(self) -> dict | None:
        """The live run's snapshot as plain values, checkpoints named ``run:<id>/…`` (None before any run).
        ``kind`` says which: ``pretrain`` or ``finetune`` (then :meth:`finetune_status`'s values)."""
        if isinstance(self.manager.current, FinetuneRun):
            return self.finetune_status()
        snap = self.snapshot()
        if snap is None:
            return None
        status = {"kind": "pretrain", **dataclasses.asdict(snap)}
        status["train_loss_smooth"] = snap.train_loss_smooth
        status["plateau"] = snap.plateau  # the model answers the same words for every probe
        status["heldout_eval"] = HELDOUT_EVAL  # how eval_loss, mlm_acc (top-1), top5_acc, median_rank are scored
        status["landmark_labels"] = {name: LANDMARK_LABELS[name] for name in snap.landmarks}
        # the run's saves still on disk (older ones beyond keep_checkpoints are deleted as it goes)
        status["checkpoints"] = [self._shown_checkpoint(p) for p in snap.checkpoints if Path(p).is_dir()]
        status["last_checkpoint"] = self._shown_checkpoint(snap.last_checkpoint)
        return status

    def start(self, request: dict[str, Any] | TrainConfig, owner_token: str = "",
              upload_root: str | None = None, visitor: str = "") -> TrainingRun:
        """Start a run from the form's or an API caller's settings (TrainConfig's leaf names, plus
        ``upload``), or from a TrainConfig made by code. ``upload_root``: the web server's upload folder, where a page's
        upload must lie (API callers cannot upload: None); ``visitor``: the address the request came from
        (:func:`bertdemo.traffic.visitor_address`), which a public server's run quota counts together with
        the token. ValueError naming what to change."""
        manager, public = self.manager, self.settings.public_limits
        manager.check_free()  # a refused start costs nothing: no config, memory, disk or time checks
        settings = request if isinstance(request, dict) else None
        if settings is not None and settings.get("resume_from"):
            settings = {**settings, "resume_from": self._resume_folder(settings["resume_from"], public is not None)}
        if settings is not None:
            cfg = config_from_settings(settings, self.runs_dir, public_limits=public, upload_root=upload_root)
        else:  # a config made by code (trusted with the server's files); the caps still hold
            cfg = request
            cfg.validate()
            if public is not None:
                budget.check_public(cfg, public)
        if cfg.data.corpus == "tinystories" and not self.hub.reachable():  # a resumed run streams it too
            raise ValueError(TINYSTORIES_OFFLINE)  # said before a run exists: no FAILED run with 0 parameters
        if not cfg.data.cache_dir:  # this server's block cache (the folder its disk budget counts)
            cfg = cfg.replace(cache_dir=str(self.settings.cache_dir))
        if public is not None and cfg.system.resume_from:  # resuming writes into that run's folder
            resumed = Path(cfg.system.resume_from).resolve().relative_to(self.runs_dir.resolve()).parts[0]
            if not (self.settings.is_admin(owner_token) or run_folders.is_owner(self.runs_dir, resumed, owner_token)):
                raise ValueError("Only the browser that started this run (or this server's administrator) may "
                                 "resume it; start a new run, or resume one of yours.")
        if public is not None:
            self._check_visitor_share(owner_token, visitor, resuming=bool(cfg.system.resume_from))
        budget.check_memory(cfg)
        budget.check_disk(cfg, self.runs_dir, self.settings.disk)
        if public is not None:
            self.speeds.check_time(cfg, public.max_seconds)
        received = None
        if settings is not None and upload_root and settings.get("corpus") == UPLOAD and not cfg.system.resume_from:
            received = cfg.data.corpus  # in the web server's upload folder, which serves files back by URL
            cfg = cfg.replace(corpus=str(uploads.adopt_upload(received, self.runs_dir)))
        try:
            run = manager.start(cfg, owner_token=owner_token if public is not None else "",
                                visitor=visitor if public is not None else "",
                                max_seconds=public.max_seconds if public is not None else None)
        except ValueError:
            uploads.release_uploads(self.runs_dir, active=self._active_corpora())
            raise
        if received:
            uploads.forget_original_upload(received)
        return run

    def clean_leftovers(self) -> list[str]:
        """At server start, when no run trains on this machine: drop the temp folders of interrupted
        checkpoint saves, move runs in the earlier layout to step folders, and delete the folders of runs that never saved (failed, stopped at once, killed).
        Returns the ids deleted; nothing when a run is under way (in this process or another)."""
        if self.manager.current is not None and self.manager.current.active:
            return []
        try:
            lock = self.manager.try_machine_lock()
        except ValueError:  # another process trains into this runs folder: leave everything as it is
            return []
        try:
            deleted = []
            for run_id in run_folders.run_ids(self.runs_dir):
                folder = self.runs_dir / run_id
                checkpoints.clean_unfinished(folder)  # cut-off saves go; a run in the earlier layout moves to steps/
                if not any(folder.rglob("config.json")):
                    run_folders.delete_run_folder(self.runs_dir, run_id)  # no model in it anywhere: nothing lost
                    deleted.append(run_id)
            root = finetune_root(self.runs_dir)
            for run_id in run_folders.run_ids(root):  # a fine-tuning run saves its model once, at its end (atomically)
                if not (root / run_id / MODEL_DIRNAME / "config.json").is_file():
                    run_folders.delete_run_folder(root, run_id)
                    deleted.append(run_id)
            return deleted
        finally:
            lock.release()

    def shutdown(self, timeout: float = 30.0) -> bool:
        """The server is going down: stop the live run so it saves its checkpoint, waiting up to ``timeout``
        seconds; True when nothing is left running."""
        run = self.manager.current
        if run is None or not run.active:
            return True
        run.stop()
        return run.join(timeout)

    def _resume_folder(self, name: object, public: bool) -> str:
        """The checkpoint folder ``resume_from`` names. A public server takes only ``run:<id>/checkpoint``
        names of its own runs, and answers every other value alike, never echoing a path."""
        if not isinstance(name, str):
            raise ValueError("resume_from names a checkpoint, e.g. run:<run id>/checkpoint.")
        folder = self.resolve_run_reference(name)
        if not public:
            return folder or name
        if folder is None:
            raise ValueError("Only checkpoints of this server's runs can be resumed here: pick one from the list "
                             "(run:<run id>/checkpoint).")
        return folder

    def _check_visitor_share(self, owner_token: str, visitor: str, resuming: bool) -> None:
        """A public server: ended runs untouched for ``keep_hours`` go first; then one visitor — the runs
        their token or their address started — keeps at most ``max_runs_per_visitor`` runs (saved or not), so
        nobody holds the disk budget (the admin is not counted)."""
        caps = self.settings.public_limits
        live = self.manager.current
        keep = [live.run_id] if live is not None and live.active else []
        run_folders.expire_runs(self.runs_dir, caps.keep_hours * 3600, keep=keep, now=self.wall_clock())
        if resuming or self.settings.is_admin(owner_token):
            return
        run_folders.expire_runs(finetune_root(self.runs_dir), caps.keep_hours * 3600, keep=keep, now=self.wall_clock())
        mine = [*run_folders.runs_owned_by(self.runs_dir, owner_token, visitor),
                *run_folders.runs_owned_by(finetune_root(self.runs_dir), owner_token, visitor)]
        if len(mine) >= caps.max_runs_per_visitor:
            raise ValueError(f"You keep {len(mine)} runs on this server, the most one visitor may: delete one of "
                             "yours (Runs on this server → Delete, /delete_run or /delete_finetune) to start another.")

    def control(self, action: RunAction, owner_token: str = "") -> RunSnapshot:
        """Pause, resume or stop the live run. On a public server only its owner may (and, to stop
        it, the admin); ValueError otherwise."""
        action = RunAction(action)
        run = self._controlled(owner_token, admin_may=action is RunAction.STOP)
        {RunAction.PAUSE: run.pause, RunAction.RESUME: run.resume, RunAction.STOP: run.stop}[action]()
        return run.snapshot()

    def set_probe(self, text: str, owner_token: str = "", expected: str = "") -> RunSnapshot:
        """Use a new probe sentence, and the word expected at its first [MASK] ("" none), in the live run
        from its next step (its owner only, on a public server)."""
        run = self.current
        if run is None or not run.active:
            raise ValueError("No pretraining run is active; the probe is used by the next run you start.")
        self._controlled(owner_token, admin_may=False).set_probe_text(text, expected)
        return run.snapshot()

    def gpu_burst(self, steps: int, owner_token: str = "", device: str = "cuda") -> Iterator[RunSnapshot]:
        """Move the run to a GPU for ``steps`` steps, then on with it on the CPU (its owner only).
        Yields the run's snapshot as the burst goes."""
        run = self.current
        if run is None:
            raise ValueError("There is no pretraining run yet: start one, then give it a GPU burst.")
        if not run.may_control(owner_token):
            raise ValueError(NOT_YOURS)
        with LOGIC_IMPORT_LOCK:
            from bertdemo.pretrain import zerogpu  # torch: loaded only when a burst starts

        for _ in zerogpu.run_burst(self.manager, int(steps), device=device):
            yield self.manager.current.snapshot()

    def _controlled(self, token: str, admin_may: bool) -> TrainingRun:
        run = self.manager.current
        if run is None:
            raise ValueError(NO_RUN)
        admin = admin_may and self.settings.is_admin(token)
        if self.settings.is_public and not run.may_control(token, admin=admin):
            raise ValueError(NOT_YOURS)
        return run

    # --- runs on disk -------------------------------------------------------------------------------
    def list_runs(self) -> list[str]:
        """Ids of the runs with a checkpoint, newest first."""
        return run_folders.list_runs(self.runs_dir)

    def run_choices(self) -> list[tuple[str, str]]:
        """(label, id) of the runs with a checkpoint, newest first; a label says what the run was
        (its preset, the settings that differ from the default, its step and start)."""
        return run_folders.run_choices(self.runs_dir)

    def load_run(self, run_id: str) -> run_folders.RunRecord:
        """A run's settings and history from its checkpoint; ValueError for a name that is none."""
        return run_folders.load_run(self.runs_dir, run_id)

    def compared(self, run_ids: list[str] | None, live_label: str = "live run",
                 live: RunSnapshot | None = None) -> list[tuple[str, RunSnapshot]]:
        """(label, history) of the live run (first, labelled ``live_label`` + what differs; ``live``: its
        snapshot when the caller holds one already) and of the earlier runs ``run_ids``; labels name the
        settings in which the runs differ."""
        run = self.current
        live = [] if run is None else [run_folders.RunRecord(run.run_id, Path(), run.cfg.flat(), live or run.snapshot())]
        records = live + [self.load_run(run_id) for run_id in (run_ids or []) if run is None or run_id != run.run_id]
        labels = run_folders.differing_labels(records)
        return [(f"{live_label} {labels[r.run_id]}" if i == 0 and live else labels[r.run_id], r.snapshot)
                for i, r in enumerate(records)]

    def run_checkpoint(self, run_id: str) -> str:
        """The folder of run ``run_id``'s latest checkpoint (ValueError for a name that is no run)."""
        return str(run_folders.run_checkpoint(self.runs_dir, run_id))

    def checkpoint_folders(self, run_id: str) -> list[str]:
        """The folders of run ``run_id``'s kept checkpoints, lowest step first, the latest last."""
        return [str(p) for p in reversed(checkpoints.run_checkpoints(run_folders.run_dir(self.runs_dir, run_id)))]

    def metrics_csv(self, run_id: str) -> str:
        """A run's metrics as CSV text: the live run's now, an earlier run's from its checkpoint."""
        if not run_id:
            raise ValueError("Pick a run first.")
        snap = self.snapshot()
        return metrics_csv(snap if snap is not None and snap.run_id == run_id else self.load_run(run_id).snapshot)

    def delete(self, run_id: str, owner_token: str = "") -> None:
        """Delete an ended run's folder, and its uploaded corpus when no other run uses it. On a public
        server only its owner or the admin may; never a run under way (or on a GPU burst)."""
        if not run_id:
            raise ValueError("Pick a run first.")
        if self.settings.is_public and not (self.settings.is_admin(owner_token)
                                            or run_folders.is_owner(self.runs_dir, run_id, owner_token)):
            raise ValueError("Only the browser that started this run (or this server's administrator) may delete it.")
        if self.manager.is_busy(run_id):
            raise ValueError("That run is still active; stop it before deleting it.")
        run_folders.delete_run_folder(self.runs_dir, run_id)
        self.manager.forget(run_id)  # a deleted run's status is not the page's latest run any more
        uploads.release_uploads(self.runs_dir, active=self._active_corpora())

    def _active_corpora(self) -> list[str]:
        run = self.current
        return [run.cfg.data.corpus] if run is not None and run.active else []

    # --- names the pages use -----------------------------------------------------------------------
    def run_reference(self, path: str | Path) -> str:
        """``run:<id>/checkpoint`` (the latest) or ``run:<id>/steps/step-<n>`` for a checkpoint folder of this server."""
        return run_refs.run_reference(path, self.runs_dir)

    def resolve_run_reference(self, name: str) -> str | None:
        """The checkpoint folder a ``run:`` name stands for (None for other names); ValueError when it is none."""
        return run_refs.resolve_run_reference(name, self.runs_dir)

    def _shown_checkpoint(self, path: str) -> str:
        try:
            return self.run_reference(path) if path else ""
        except ValueError:  # not under runs_dir (cannot happen for the app's runs): its name only
            return Path(path).name

    def model_choices(self) -> list[tuple[str, str]]:
        """The runs' latest checkpoints among every tab's models: ("<label> (checkpoint)", "run:<id>/checkpoint")."""
        return [(f"{label} (checkpoint)", self.run_reference(path)) for label, path in checkpoints.list_checkpoints(self.runs_dir)]

    def checkpoint_choices(self) -> list[tuple[str, str]]:
        """Resume choices: "run:<id>/checkpoint" or "run:<id>/steps/step-<n>", never server paths."""
        return [("— start from scratch —", "")] + [(label, self.run_reference(path))
                                                    for label, path in checkpoints.list_checkpoints(self.runs_dir, True)]

    # --- estimates ----------------------------------------------------------------------------------
    def time_estimate(self, settings: dict[str, Any]) -> str:
        """How long the form's run would take on this machine, from Start to its last checkpoint: training,
        evaluations, checkpoints and start-up, each counted (and whether a public server allows it); ""
        when the settings are not a valid run yet."""
        try:
            cfg = config_from_settings({k: v for k, v in settings.items()
                                        if k not in ("upload", "corpus", "resume_from", "probe_text", "probe_expected")}, self.runs_dir)
            est = self.speeds.estimate(cfg)
        except ValueError:
            return ""
        return estimate_text(est, cfg, self.speeds.estimate_seconds(cfg, cfg.optim.steps), self.settings.public_limits)

    # --- fine-tuning: a run kind of its own in the same slot ------------------------------------------
    def start_finetune(self, request: dict[str, Any] | FinetuneConfig, owner_token: str = "", visitor: str = "",
                       task_loader: Any = None) -> FinetuneRun:
        """Start a fine-tuning run (the form's or an API caller's settings, or a config made by code) in the
        machine's one training slot, under the rules of a pretraining run: one at a time, the owner's token,
        the public caps (time, runs per visitor), the disk budget. ``task_loader``: returns the
        :class:`~bertdemo.finetune.engine.TopicTask` (tests pass a small one); by default the topic task from
        the embedded Wikipedia summaries, built once in this server's cache. ValueError naming what to change."""
        self.manager.check_free()
        cfg = request if isinstance(request, FinetuneConfig) else config_from_request(request)
        public = self.settings.public_limits
        if cfg.init.startswith("run:"):
            folder = self.resolve_run_reference(cfg.init)
            if folder is None or not (Path(folder) / "config.json").is_file():
                raise ValueError(f"{cfg.init} is not a checkpoint of this server's runs: pick one from the list.")
            cfg = cfg.replace(init_path=folder)  # a visitor never names a folder: config_from_request refuses init_path
        cfg = cfg.replace(device=cfg.device if public is None else "cpu")
        if public is not None:
            self._check_visitor_share(owner_token, visitor, resuming=False)
            if cfg.time_budget_s == 0 or cfg.time_budget_s > public.max_seconds:
                cfg = cfg.replace(time_budget_s=float(public.max_seconds))
        self.settings.disk.check(adding=FINETUNE_CHECKPOINT_BYTES)
        loader = task_loader or functools.partial(default_topic_task, self.settings.cache_dir)
        run = FinetuneRun(cfg, self.runs_dir, loader, owner_token=owner_token if public is not None else "",
                          visitor=visitor if public is not None else "",
                          max_seconds=public.max_seconds if public is not None else None,
                          cache_dir=self.settings.cache_dir)
        return self.manager.start_run(run)

    @property
    def finetune_run(self) -> FinetuneRun | None:
        run = self.manager.current
        return run if isinstance(run, FinetuneRun) else None

    def finetune_snapshot(self) -> FinetuneSnapshot | None:
        """The live (or latest) fine-tuning run's metrics; None when the slot's latest run is none."""
        run = self.finetune_run
        return None if run is None else run.snapshot()

    def finetune_status(self) -> dict | None:
        """The fine-tuning run's snapshot as plain values (``kind`` finetune, ``task``, ``val_accuracy``,
        ``val_macro_f1``, ``baselines``, the checkpoint as ``ft:<id>``); None before any."""
        snap = self.finetune_snapshot()
        if snap is None:
            return None
        status = dataclasses.asdict(snap)
        status["per_topic_accuracy"] = snap.per_topic_accuracy
        status["checkpoint"] = f"ft:{snap.run_id}" if snap.checkpoint else ""
        status["settings"] = {k: v for k, v in snap.settings.items() if k != "init_path"}  # no server path
        del status["pca_texts"]  # the page's hover text (up to 100 KB): every poll of an API client stays small
        status["baselines"] = self.finetune_baselines()
        for name in NAN_FIELDS:
            if status[name] != status[name]:  # NaN: not measured yet (JSON has no NaN)
                status[name] = None
        return status

    def finetune_baselines(self) -> dict[str, float]:
        """The topic task's landmarks (validation accuracy) when computed on this server (else {})."""
        return read_baselines(self.settings.cache_dir)

    def finetune_ids(self) -> list[str]:
        """Ids of the fine-tuning runs with a saved model, newest first."""
        root = finetune_root(self.runs_dir)
        return sorted((r for r in run_folders.run_ids(root) if (root / r / MODEL_DIRNAME / "config.json").is_file()),
                      reverse=True)

    def finetune_choices(self) -> list[tuple[str, str]]:
        """(label, id) of the saved fine-tuning runs: what they started from, their validation accuracy."""
        out = []
        for run_id in self.finetune_ids():
            snap = self.load_finetune(run_id)
            acc = f"{snap.val_accuracy[-1]:.1%}" if snap.val_accuracy else "—"
            out.append((f"{run_id} · from {snap.init} · val {acc}", run_id))
        return out

    def load_finetune(self, run_id: str) -> FinetuneSnapshot:
        """A saved fine-tuning run's history (ValueError for a name that is none)."""
        try:
            folder = run_folders.run_dir(finetune_root(self.runs_dir), run_id, saved=False)  # a plain name of a run folder
        except ValueError:
            raise ValueError("Pick a fine-tuning run from the list.") from None
        live = self.finetune_snapshot()
        if live is not None and live.run_id == run_id:
            return live
        path = folder / MODEL_DIRNAME / FINETUNE_HISTORY_FILE
        if not path.is_file():
            raise ValueError(f"There is no saved fine-tuning run {run_id!r}: pick one from the list.")
        return snapshot_from_history(json.loads(path.read_text()))

    def finetune_model(self, name: str) -> str:
        """The model folder of ``ft:<run id>`` (ValueError for another name or a run with no saved model)."""
        if not isinstance(name, str) or not name.startswith("ft:"):
            raise ValueError("Pick a fine-tuned model (ft:<run id>) from the list.")
        run_id = name[3:]
        if run_id not in self.finetune_ids():  # the listing is the check: no other name reaches a folder
            raise ValueError(f"There is no fine-tuned model {name[:60]!r} on this server: pick one from the list.")
        return str(finetune_root(self.runs_dir) / run_id / MODEL_DIRNAME)

    def finetune_csv(self, run_id: str) -> str:
        return finetune_csv(self.load_finetune(run_id))

    def delete_finetune(self, run_id: str, owner_token: str = "") -> None:
        """Delete an ended fine-tuning run (its owner or the admin on a public server)."""
        root = finetune_root(self.runs_dir)
        try:
            run_folders.run_dir(root, run_id, saved=False)
        except ValueError:
            raise ValueError("Pick a fine-tuning run first.") from None
        if self.settings.is_public and not (self.settings.is_admin(owner_token)
                                            or run_folders.is_owner(root, run_id, owner_token)):
            raise ValueError("Only the browser that started this run (or this server's administrator) may delete it.")
        live = self.finetune_run
        if live is not None and live.run_id == run_id and live.active:
            raise ValueError("That run is still active; stop it before deleting it.")
        run_folders.delete_run_folder(root, run_id)


FINETUNE_CHECKPOINT_BYTES = 100 * 2**20  # a fine-tuned model of the embedded shape (23M float32 parameters) and its tokenizer
FINETUNE_HISTORY_FILE = "finetune_history.json"  # the engine's HISTORY_FILE (the engine imports torch)
def default_topic_task(cache_dir: str | Path):
    """The topic task (train / validation / test) from the embedded Wikipedia summaries, cached in ``cache_dir``."""
    with LOGIC_IMPORT_LOCK:
        from bertdemo.finetune.engine import task_from_splits
        from bertdemo.finetune.topics import load_topic_splits

    return task_from_splits(load_topic_splits(Path(cache_dir)))


def estimate_text(est: budget.TimeEstimate, cfg: TrainConfig, all_steps_s: float, public: Limits | None) -> str:
    """The form's time estimate in words: the total first, then its parts (``all_steps_s``: the training
    time of every step, named when the time budget ends the run first)."""
    duration = budget.duration_text
    parts = [f"{duration(est.training_s)} of training",
             f"{est.evaluations:,} held-out evaluation{'s' if est.evaluations != 1 else ''} "
             f"({duration(est.evaluation_s)})"]
    if est.measured:
        parts.append(f"start-up and {est.checkpoints} checkpoint write{'s' if est.checkpoints != 1 else ''} "
                     f"({duration(est.startup_s + est.checkpoint_s)}, as the last run here took)")
    text = f"Estimated time on this machine, Start to the last checkpoint: **{duration(est.total_s)}** — " + \
        ", ".join(parts)
    if not est.measured:
        text += "; start-up and checkpoint writes are timed by the first run here and counted after it"
    if est.budget_ends_it:
        text += (f". The time budget ends the training first ({cfg.optim.steps:,} steps would take "
                 f"{duration(all_steps_s)})")
    if public is not None and est.total_s > public.max_seconds:
        text += f" — more than this server's {public.max_minutes:g}-minute limit: lower Steps."
    return text + ("" if text.endswith(".") else ".")

"""The pretraining kind of run: one server's pretraining runs — starting them, listing, deleting them.

`PretrainService` holds the rules of a pretraining run that the Pretrain tab and its API apply: the checks
before a start (the slot first, then the request, ownership of a resumed run, memory, disk, time and the
public caps), adopting an uploaded corpus, the probe and GPU bursts of the live run, deletion, the time
estimate, and the names the pages use for checkpoints (``run:<id>/checkpoint``): a run on a visitor's text (an
upload) is private, listed and served to its holders alone (:mod:`bertdemo.models.run_access`). What every kind
shares — the one training slot, pause/resume/stop by the owner, the per-visitor quota, clean-up and shutdown — is
:class:`bertdemo.runs.service.RunService`, which this kind registers with. Torch-free at import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.models import run_access, run_refs, twin_curve, twins
from bertdemo.models.hub import HubProbe
from bertdemo.pretrain import budget, checkpoints, run_folders
from bertdemo.pretrain.config import APP_CORPORA, TrainConfig
from bertdemo.pretrain.form import UPLOAD, config_from_settings
from bertdemo.pretrain.landmarks import LANDMARK_LABELS
from bertdemo.pretrain.metrics import HELDOUT_EVAL, RunSnapshot, metrics_csv
from bertdemo.pretrain.run import KIND, TrainingRun, TwinRun
from bertdemo.runs import folders, uploads
from bertdemo.runs.service import NOT_YOURS, RunService
from bertdemo.settings import Limits

TRAIN_BOTH = "train_both"  # a start setting (not a TrainConfig's): the twins, masked LM then left-to-right (TwinRun)
TINYSTORIES_OFFLINE = ("TinyStories comes from the dataset hub, which this server cannot reach, so no run was started. "
                       "Choose the embedded Wikipedia summaries (offline), or upload a .txt / .jsonl corpus.")



def _calibrate(device_type: str) -> float:
    """The default training calibration (:func:`bertdemo.pretrain.calibration.calibrate`), whose torch and
    transformers are imported by one thread at a time."""
    with LOGIC_IMPORT_LOCK:
        from bertdemo.pretrain import calibration
    return calibration.calibrate(device_type)


def _calibrate_evaluation(device_type: str) -> float:
    """The default evaluation calibration (:func:`bertdemo.pretrain.calibration.calibrate_evaluation`)."""
    with LOGIC_IMPORT_LOCK:
        from bertdemo.pretrain import calibration
    return calibration.calibrate_evaluation(device_type)


class PretrainService:
    """One server's pretraining runs and their own rules (see the module docstring). Thread-safe."""

    name = KIND
    label = TrainingRun.label

    def __init__(self, runs: RunService, speeds: budget.SpeedBook | None = None, hub: HubProbe | None = None) -> None:
        self.runs = runs  # the shared slot and rules; this kind registers with it
        self.settings = runs.settings
        self.runs_dir = runs.runs_dir
        self.manager = runs.manager
        self.speeds = speeds or budget.SpeedBook(_calibrate, _calibrate_evaluation)  # this machine's speed
        # TinyStories needs the dataset hub, asked before a run starts: the server's one probe (AppContext's)
        self.hub = hub or HubProbe(offline=self.settings.offline)
        runs.register(self)

    @property
    def root(self) -> Path:
        """Pretraining runs' folders are the direct children of ``runs_dir``."""
        return self.runs_dir

    # --- the live run ------------------------------------------------------------------------------
    @property
    def current(self) -> TrainingRun | None:
        """The latest pretraining run, active or ended (None before the first, or while the slot's latest
        run is of another kind)."""
        run = self.manager.current
        return run if isinstance(run, TrainingRun) else None

    def snapshot(self) -> RunSnapshot | None:
        """A copy of the live (or latest) pretraining run's metrics; None before any run."""
        run = self.current
        return None if run is None else run.snapshot()

    def status(self, run: TrainingRun | None = None) -> dict | None:
        """A pretraining run's snapshot (``run``, else the latest) as plain values, ``kind`` ``pretrain``,
        checkpoints named ``run:<id>/…`` (None before any run)."""
        run = run or self.current
        if run is None:
            return None
        snap = run.snapshot()
        status = {"kind": KIND, **dataclasses.asdict(snap)}
        status["train_loss_smooth"] = snap.train_loss_smooth
        status["plateau"] = snap.plateau  # the model answers the same words for every probe
        status["heldout_eval"] = HELDOUT_EVAL  # how eval_loss, mlm_acc (top-1), top5_acc, median_rank are scored
        status["landmark_labels"] = {name: LANDMARK_LABELS[name] for name in snap.landmarks}
        # the run's saves still on disk (older ones beyond keep_checkpoints are deleted as it goes)
        status["checkpoints"] = [self._shown_checkpoint(p) for p in snap.checkpoints if Path(p).is_dir()]
        status["last_checkpoint"] = self._shown_checkpoint(snap.last_checkpoint)
        return status

    def start(self, request: dict[str, Any] | TrainConfig, owner_token: str = "",
              upload_root: str | None = None, visitor: str = "", check_only: bool = False) -> TrainingRun | None:
        """Start a run from the form's or an API caller's settings (TrainConfig's leaf names, plus
        ``upload``), or from a TrainConfig made by code. ``upload_root``: the web server's upload folder, where a page's
        upload must lie (API callers cannot upload: None); ``visitor``: the address the request came from
        (:func:`bertdemo.traffic.visitor_address`), which a public server's run quota counts together with
        the token. ValueError naming what to change. ``check_only``: every check but the slot's, nothing started
        (a start the busy slot queues is refused at once for what it would be refused for at its turn)."""
        public = self.settings.public_limits
        if not check_only:
            self.runs.check_free(owner_token)  # a refused start costs nothing: no config, memory, disk or time checks
        settings = dict(request) if isinstance(request, dict) else None
        both = settings.pop(TRAIN_BOTH, False) if settings is not None else False
        if not isinstance(both, bool):
            raise ValueError(f"{TRAIN_BOTH} must be true or false, got {str(both)[:40]!r}.")
        if both and settings.get("resume_from"):
            raise ValueError("Train both starts two new runs (the twins); it cannot resume a checkpoint.")
        if both:  # the twins: steps end both (see TwinRun); the settings are checked as the masked-LM twin's
            settings = {**settings, "objective": "mlm", "time_budget_s": 0.0}
        if settings is not None and settings.get("resume_from"):
            settings = {**settings, "resume_from": self._resume_folder(settings["resume_from"], public is not None,
                                                                       owner_token)}
        if settings is not None:
            cfg = config_from_settings(settings, self.runs_dir, public_limits=public, upload_root=upload_root)
        else:  # a config made by code (trusted with the server's files); the caps still hold
            cfg = request
            cfg.validate()
            if public is not None:
                budget.check_public(cfg, public)
        if both and cfg.objective.nsp:  # the twins differ in the objective alone (the paper's "No NSP" rows)
            raise ValueError("Train both compares the objectives alone, as BERT's Table 5 did (both without "
                             "next-sentence prediction): turn NSP off.")
        if cfg.data.corpus == "tinystories" and not self.hub.reachable():  # a resumed run streams it too
            raise ValueError(TINYSTORIES_OFFLINE)  # said before a run exists: no FAILED run with 0 parameters
        if not cfg.data.cache_dir:  # this server's block cache (the folder its disk budget counts)
            cfg = cfg.replace(cache_dir=str(self.settings.cache_dir))
        if public is not None and cfg.system.resume_from:  # resuming writes into that run's folder
            resumed = Path(cfg.system.resume_from).resolve().relative_to(self.runs_dir.resolve()).parts[0]
            if not (self.settings.is_admin(owner_token) or folders.is_owner(self.runs_dir, resumed, owner_token)):
                raise ValueError("Only the browser that started this run (or this server's administrator) may "
                                 "resume it; start a new run, or resume one of yours.")
        self.runs.check_visitor_share(owner_token, visitor, resuming=bool(cfg.system.resume_from))
        budget.check_memory(cfg)
        budget.check_disk(cfg, self.runs_dir, self.settings.disk)
        if public is not None:
            self.speeds.check_time(cfg, public.max_seconds)
            if both:  # the pair shares the slot's one wall-time cap: the left-to-right twin's steps count too
                self.speeds.check_time(cfg.replace(steps=2 * cfg.optim.steps), public.max_seconds)
        if check_only:
            return None
        received = None
        if settings is not None and upload_root and settings.get("corpus") == UPLOAD and not cfg.system.resume_from:
            received = cfg.data.corpus  # in the web server's upload folder, which serves files back by URL
            cfg = cfg.replace(corpus=str(uploads.adopt_upload(received, self.runs_dir)))
        try:
            run = (TwinRun if both else TrainingRun)(cfg, self.runs_dir, owner_token=self.runs.owner(owner_token),
                              visitor=self.runs.visitor(visitor), max_seconds=self.runs.cap_seconds(),
                              disk=self.settings.disk, speeds=self.speeds, clock=self.manager.clock)
            run.private = cfg.data.corpus not in APP_CORPORA  # a visitor's text (a resumed run keeps its record)
            self.runs.launch(run, owner_token)
        except ValueError:
            run_folders.release_corpora(self.runs_dir, active=self._active_corpora())
            raise
        if received:
            uploads.forget_original_upload(received)
        return run

    def clean_leftovers(self) -> list[str]:
        """At server start (the shared service holds the machine lock): drop the temp folders of interrupted
        checkpoint saves, move runs in the earlier layout to step folders, and delete the folders of runs
        that never saved (failed, stopped at once, killed): only folders the server made (another folder there, such
        as a build's work folder, is never deleted: :func:`~bertdemo.runs.folders.made_by_server`). Returns the ids
        deleted."""
        deleted = []
        for run_id in folders.run_ids(self.runs_dir):
            folder = self.runs_dir / run_id
            checkpoints.clean_unfinished(folder)  # cut-off saves go; a run in the earlier layout moves to steps/
            if folders.made_by_server(run_id) and not any(folder.rglob("config.json")):
                folders.delete_run_folder(self.runs_dir, run_id)  # no model in it anywhere: nothing lost
                deleted.append(run_id)
        return deleted

    def saved_model(self, run: TrainingRun) -> Path | None:
        """The run's latest checkpoint folder (a stock ``BertForMaskedLM``), None before its first save."""
        return checkpoints.latest_checkpoint(run.run_folder) if run.run_id else None

    def _resume_folder(self, name: object, public: bool, owner_token: str = "") -> str:
        """The checkpoint folder ``resume_from`` names. A public server takes only ``run:<id>/checkpoint``
        names of its own runs, and answers every other value alike, never echoing a path."""
        if not isinstance(name, str):
            raise ValueError("resume_from names a checkpoint, e.g. run:<run id>/checkpoint.")
        folder = self.resolve_run_reference(name, owner_token)  # another visitor's private run: as if there were none
        if not public:
            return folder or name
        if folder is None:
            raise ValueError("Only checkpoints of this server's runs can be resumed here: pick one from the list "
                             "(run:<run id>/checkpoint).")
        return folder

    def set_probe(self, text: str, owner_token: str = "", expected: str = "") -> RunSnapshot:
        """Use a new probe sentence, and the word expected at its first [MASK] ("" none), in the live run
        from its next step (its owner only, on a public server)."""
        run = self.current
        if run is None or not run.active:
            raise ValueError("No pretraining run is active; the probe is used by the next run you start.")
        self.runs.controlled(owner_token, admin_may=False).set_probe_text(text, expected)
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
            from bertdemo.pretrain import gpu_entry, zerogpu  # torch: loaded only when a burst starts

        for _ in zerogpu.run_burst(self.manager, int(steps), device=device, train=gpu_entry.gpu_train):
            yield self.manager.current.snapshot()

    # --- runs on disk -------------------------------------------------------------------------------
    def _listed(self, run_id: str) -> bool:
        """Whether a list shown now offers run ``run_id`` (:func:`~bertdemo.models.run_access.listed`)."""
        return run_access.listed(self.runs_dir / run_id, self.settings.is_public)

    def list_runs(self) -> list[str]:
        """Ids of the runs with a checkpoint the request being served may see, newest first."""
        return [run_id for run_id in run_folders.list_runs(self.runs_dir) if self._listed(run_id)]

    def run_choices(self) -> list[tuple[str, str]]:
        """(label, id) of the runs with a checkpoint the request being served may see, newest first; a label says
        what the run was (its preset, the settings that differ from the default, its step and start)."""
        return [(label, run_id) for label, run_id in run_folders.run_choices(self.runs_dir) if self._listed(run_id)]

    def load_run(self, run_id: str) -> run_folders.RunRecord:
        """A run's settings and history from its checkpoint; ValueError for a name that is none."""
        return run_folders.load_run(self.runs_dir, run_id)

    def compared(self, run_ids: list[str] | None, live_label: str = "live run",
                 live: RunSnapshot | None = None) -> list[tuple[str, RunSnapshot]]:
        """(label, history) of the slot's latest run (first; while its snapshot is under way labelled
        ``live_label`` + the rest, never once it has ended; ``live``: its snapshot when the caller holds one
        already) and of the earlier runs ``run_ids``; labels tell the runs apart by their objective, their start
        and the settings in which they differ (:func:`~bertdemo.pretrain.run_folders.differing_labels`)."""
        run = self.current
        if isinstance(run, TwinRun) and run.twin_id and run.twin_id not in (run_ids or []):
            run_ids = [run.twin_id, *(run_ids or [])]  # the pair's curves overlaid: its masked-LM twin beside it
        latest = [] if run is None else [run_folders.RunRecord(run.run_id, Path(), run.cfg.flat(),
                                                               live or run.snapshot())]
        records = latest + [self.load_run(run_id) for run_id in (run_ids or []) if run is None or run_id != run.run_id]
        labels = run_folders.differing_labels(records)
        under_way = bool(latest) and latest[0].snapshot.active  # as the snapshot drawn says (the page keys on it)
        return [(f"{live_label} · {labels[r.run_id]}" if i == 0 and under_way else labels[r.run_id], r.snapshot)
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
        self.runs.check_may_delete(self.runs_dir, run_id, owner_token)
        folders.delete_run_folder(self.runs_dir, run_id)
        self.manager.forget(run_id)  # a deleted run's status is not the page's latest run any more
        run_folders.release_corpora(self.runs_dir, active=self._active_corpora())

    def _active_corpora(self) -> list[str]:
        return [run.cfg.data.corpus for run in self.manager.active_runs() if isinstance(run, TrainingRun)]

    # --- names the pages use -----------------------------------------------------------------------
    def run_reference(self, path: str | Path) -> str:
        """``run:<id>/checkpoint`` (the latest) or ``run:<id>/steps/step-<n>`` for a checkpoint folder of this server."""
        return run_refs.run_reference(path, self.runs_dir)

    def resolve_run_reference(self, name: str, owner_token: str = "") -> str | None:
        """The checkpoint folder a ``run:`` name stands for (None for other names); ValueError when it is none, or
        one the request being served may not use (``owner_token``: one it carries)."""
        return run_refs.resolve_run_reference(name, self.runs_dir, owner_token)

    def _shown_checkpoint(self, path: str) -> str:
        try:
            return self.run_reference(path) if path else ""
        except ValueError:  # not under runs_dir (cannot happen for the app's runs): its name only
            return Path(path).name

    def _checkpoints(self, every: bool = False) -> list[tuple[str, Path]]:
        """(label, folder) of the runs' checkpoints a list shown now offers (``every``: earlier ones too)."""
        return [(label, path) for label, path in checkpoints.list_checkpoints(self.runs_dir, every)
                if self._listed(checkpoints.run_folder_of(path).name)]

    def model_choices(self) -> list[tuple[str, str]]:
        """The runs' latest checkpoints among every tab's models: ("<label> (checkpoint)", "run:<id>/checkpoint")."""
        return [(f"{label} (checkpoint)", self.run_reference(path)) for label, path in self._checkpoints()]

    def checkpoint_choices(self) -> list[tuple[str, str]]:
        """Resume choices: "run:<id>/checkpoint" or "run:<id>/steps/step-<n>", never server paths."""
        return [("— start from scratch —", "")] + [(label, self.run_reference(path))
                                                    for label, path in self._checkpoints(every=True)]

    # --- estimates ----------------------------------------------------------------------------------
    def time_estimate(self, settings: dict[str, Any]) -> str:
        """How long the form's run would take on this machine, from Start to its last checkpoint: training,
        evaluations, checkpoints and start-up, each counted (and whether a public server allows it); ""
        when the settings are not a valid run yet."""
        settings = dict(settings)
        both = bool(settings.pop(TRAIN_BOTH, False))
        if both:
            settings.update(objective="mlm", time_budget_s=0.0)
        try:
            cfg = config_from_settings({k: v for k, v in settings.items()
                                        if k not in ("upload", "corpus", "resume_from", "probe_text", "probe_expected")}, self.runs_dir)
            est = self.speeds.estimate(cfg)
            twin = cfg.replace(objective="ltr")
            twin_est = self.speeds.estimate(twin) if both else None
        except ValueError:
            return ""
        if twin_est is not None:
            tokens = cfg.optim.steps * cfg.optim.batch_size * cfg.data.seq_len
            layers, hidden, heads, _ffn = cfg.model_shape()
            return twin_estimate_text(est, twin_est, cfg.optim.steps, self.settings.public_limits, tokens,
                                      twins.shape_words(layers, hidden, heads))
        return estimate_text(est, cfg, self.speeds.estimate_seconds(cfg, cfg.optim.steps), self.settings.public_limits)


def twin_estimate_text(mlm: budget.TimeEstimate, ltr: budget.TimeEstimate, steps: int, public: Limits | None,
                       tokens: int | None = None, shape: str = "") -> str:
    """How long "Train both" takes: the two twins one after the other, each ``steps`` steps (no time budget); with
    ``tokens`` (what each twin reads), where such a pair stands on the shipped twins' curve (``shape``: the pair's,
    as "2 layers, hidden 128, 2 heads")."""
    duration = budget.duration_text  # "about 2 min": the word "about" is its own
    text = (f"**Train both** on this machine: **{duration(mlm.total_s + ltr.total_s)}** — the masked-LM twin "
            f"{duration(mlm.total_s)}, then the left-to-right twin {duration(ltr.total_s)} (it predicts every position, "
            f"so each of its steps costs more), each {steps:,} steps on the same batches; the time budget is off.")
    curve = twin_curve.read_curve() if tokens else None
    if curve is not None:
        text += f" On the shipped twins' curve (Pretrain → The B in BERT): {twin_curve.place_run(curve, 'paper', tokens, shape)}"
    if public is not None and mlm.total_s + ltr.total_s > public.max_seconds:
        text += f" More than this server's {public.max_minutes:g}-minute limit: lower Steps."
    elif mlm.total_s + ltr.total_s > TrainConfig().optim.time_budget_s * 2:
        text += " Longer than two default runs: lower Steps for a quicker pair."
    return text


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

"""The fine-tuning kind of run: starting a fine-tuning run and the names the pages use for its runs.

`FinetuneService` holds fine-tuning's own rules — the request checks (a ``run:`` start resolved to this
server's checkpoint, the public time budget, the disk a saved model takes), the default topic task, the
status as plain values, the saved runs and their ``ft:<id>`` models (a run on a learner's own data, or started
from a private pretraining run, is private: listed and served to its holders alone,
:mod:`bertdemo.models.run_access`) — and registers with the shared run service
(:class:`bertdemo.runs.service.RunService`), which gives it the training slot, the owner token, the wall-time cap,
the per-visitor quota, clean-up and shutdown. Torch-free at import.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bertdemo.finetune.config import (
    TASKS,
    FinetuneConfig,
    config_from_request,
    is_random_start,
    random_like,
    run_of_init,
)
from bertdemo.finetune.lab import read_baselines
from bertdemo.finetune.metrics import (
    NAN_FIELDS,
    TASK,
    FinetuneSnapshot,
    accuracy_label,
    finetune_csv,
    snapshot_from_history,
)
from bertdemo.finetune.own_run import RESULT_FILE, TASK as OWN_TASK, OwnRun, is_own, own_request
from bertdemo.finetune.run import KIND, MODEL_DIRNAME, FinetuneRun, finetune_root
from bertdemo.finetune.table5 import CELL_ID_LABEL as TABLE5_ID_LABEL
from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.models import run_access, run_refs
from bertdemo.models.checkpoint_layout import run_folder_of
from bertdemo.runs import folders
from bertdemo.runs.service import RunService

CHECKPOINT_BYTES = 100 * 2**20  # a fine-tuned model of the embedded shape (23M float32 parameters) and its tokenizer
HISTORY_FILE = "finetune_history.json"  # the engine's HISTORY_FILE (the engine imports torch)


def default_topic_task(cache_dir: str | Path):
    """The topic task (train / validation / test) from the embedded Wikipedia summaries, cached in ``cache_dir``."""
    with LOGIC_IMPORT_LOCK:
        from bertdemo.corpus.topics import load_topic_splits
        from bertdemo.finetune.engine import task_from_splits

    return task_from_splits(load_topic_splits(Path(cache_dir)))


def default_names_task(cache_dir: str | Path):
    """The "Find the names" task (a label per word) from the embedded Wikipedia summaries, cached in ``cache_dir``."""
    with LOGIC_IMPORT_LOCK:
        from bertdemo.corpus.names import load_name_splits
        from bertdemo.finetune.token_engine import task_from_name_splits

    return task_from_name_splits(load_name_splits(Path(cache_dir)))


class FinetuneService:
    """One server's fine-tuning runs and their own rules (see the module docstring). Thread-safe."""

    name = KIND
    label = FinetuneRun.label

    def __init__(self, runs: RunService, hub: Any = None) -> None:
        self.runs = runs  # the shared slot and rules; this kind registers with it
        self.hub = hub  # the server's HubProbe (a hub dataset is refused at once when it does not answer)
        self.settings = runs.settings
        self.runs_dir = runs.runs_dir
        # run id -> (the ids its reader saw, its partner's id or ""): the pages ask at every poll and redraw, and a
        # saved run's init, seed and test accuracy never change, so a listing is read again only when it changes
        self._partners: dict[str, tuple[tuple[str, ...], str]] = {}
        runs.register(self)

    @property
    def root(self) -> Path:
        """Fine-tuning runs' folders live under ``runs_dir/.finetune``."""
        return finetune_root(self.runs_dir)

    def start(self, request: dict[str, Any] | FinetuneConfig, owner_token: str = "", visitor: str = "",
              task_loader: Any = None, upload: str | Path | None = None, own: Any = None,
              check_only: bool = False) -> FinetuneRun | None:
        """Start a fine-tuning run (the form's or an API caller's settings, or a config made by code) in the
        machine's one training slot, under the rules every run kind obeys: one at a time, the owner's token,
        the public caps (time, runs per visitor), the disk budget. ``task_loader``: returns the
        :class:`~bertdemo.finetune.engine.TopicTask` (tests pass a small one); by default the topic task from
        the embedded Wikipedia summaries, built once in this server's cache. ``task`` in the settings: "topic"
        (the default) or "own" (the learner's labelled sentences: ``lines``, ``upload`` (a CSV / TSV file's
        path) or ``hub_dataset``; :mod:`bertdemo.finetune.own_run`); code may pass ``own`` (an ``OwnData``)
        with a config instead. ValueError naming what to change. ``check_only``: every check but the slot's,
        nothing started (a start the busy slot queues is refused at once for what it would be refused for)."""
        if not check_only:
            self.runs.check_free(owner_token)
        if isinstance(request, dict):
            request = dict(request)
            task = request.pop("task", TASK) or TASK
            if task not in (*TASKS, OWN_TASK):
                raise ValueError(f"task must be one of {', '.join(map(repr, (*TASKS, OWN_TASK)))}; "
                                 f"got {str(task)[:40]!r}.")
            if task == OWN_TASK:  # the data read and bounded before anything else is done
                reachable = self.hub.reachable if self.hub is not None else (lambda: False)
                own, request = own_request(request, upload, self.settings.cache_dir, reachable)
            elif upload:
                raise ValueError("A file is read only for task 'own' (your labelled sentences).")
            else:
                request["task"] = task  # "topic" or "names": a setting of the run's config
        cfg = request if isinstance(request, FinetuneConfig) else config_from_request(request)
        public = self.settings.public_limits
        from_private = False
        run_ref = run_of_init(cfg.init)  # a run's weights, or random weights of its shape
        if run_ref:  # another visitor's private run is none (run_access)
            folder = run_refs.resolve_run_reference(run_ref, self.runs_dir, owner_token)
            if folder is None or not (Path(folder) / "config.json").is_file():
                raise ValueError(f"{run_ref[:200]} is not a checkpoint of this server's runs: pick one from the list.")
            cfg = cfg.replace(init_path=folder)  # a visitor never names a folder: config_from_request refuses init_path
            from_private = run_access.is_private(run_folder_of(folder))
        cfg = cfg.replace(device=cfg.device if public is None else "cpu")
        note = ""
        if public is not None and (cfg.time_budget_s == 0 or cfg.time_budget_s > public.training_budget_s):
            # under the cap with room for loading, the final evaluation and saving: the run ends with its model
            asked = "none" if cfg.time_budget_s == 0 else f"{cfg.time_budget_s:g} s"
            cfg = cfg.replace(time_budget_s=float(public.training_budget_s))
            note = (f"Time budget {cfg.time_budget_s:g} s (asked: {asked}): this server stops a run at "
                    f"{public.max_minutes:g} minutes, and that also holds loading the model, the final evaluation and "
                    "saving it.")
        self.runs.check_visitor_share(owner_token, visitor, resuming=False)
        self.settings.disk.check(adding=CHECKPOINT_BYTES)
        if check_only:
            return None
        default = default_names_task if cfg.task == "names" else default_topic_task
        loader = task_loader or functools.partial(default, self.settings.cache_dir)
        common = dict(owner_token=self.runs.owner(owner_token), visitor=self.runs.visitor(visitor),
                      max_seconds=self.runs.cap_seconds(), cache_dir=self.settings.cache_dir,
                      clock=self.runs.manager.clock)
        run = (FinetuneRun(cfg, self.runs_dir, loader, **common) if own is None
               else OwnRun(cfg, own, self.runs_dir, **common))
        run.private = own is not None or from_private  # a visitor's data, or a model made from it
        if note:
            run.metrics.update(note=note)
        self.runs.launch(run, owner_token)
        return run

    @property
    def current(self) -> FinetuneRun | None:
        """The latest fine-tuning run, active or ended (None when the slot's latest run is none)."""
        run = self.runs.current
        return run if isinstance(run, FinetuneRun) else None

    def snapshot(self) -> FinetuneSnapshot | None:
        """The live (or latest) fine-tuning run's metrics; None when the slot's latest run is none."""
        run = self.current
        return None if run is None else run.snapshot()

    def status(self, run: FinetuneRun | None = None) -> dict | None:
        """A fine-tuning run's snapshot (``run``, else the latest) as plain values (``kind`` finetune,
        ``task``, ``val_accuracy``, ``val_macro_f1``, ``baselines``, the checkpoint as ``ft:<id>``); None
        before any."""
        run = run or self.current
        if run is None:
            return None
        snap = run.snapshot()
        status = dataclasses.asdict(snap)
        status["per_topic_accuracy"] = snap.per_topic_accuracy
        status["checkpoint"] = f"ft:{snap.run_id}" if snap.checkpoint else ""
        status["settings"] = {k: v for k, v in snap.settings.items() if k != "init_path"}  # no server path
        del status["pca_texts"]  # the page's hover text (up to 100 KB): every poll of an API client stays small
        status["baselines"] = self.baselines()
        for name in NAN_FIELDS:
            if status[name] != status[name]:  # NaN: not measured (yet, or a stopped run's whole splits)
                status[name] = None
        return status

    def has_model(self, run_id: str) -> bool:
        """Whether run ``run_id`` saved its model (once, at its end, atomically)."""
        return (self.root / run_id / MODEL_DIRNAME / "config.json").is_file()

    def _kept(self, run_id: str) -> bool:
        """Whether run ``run_id`` saved what it made: its model, or — a run on a learner's own data stopped before it
        kept a model — its result beside their data (the folds or epochs it scored: what it has, theirs to read and
        download)."""
        return self.has_model(run_id) or (is_own(run_id) and (self.root / run_id / RESULT_FILE).is_file())

    def clean_leftovers(self) -> list[str]:
        """At server start: a run folder the server made (:func:`~bertdemo.runs.folders.made_by_server`) that saved
        nothing (:meth:`_kept`) goes."""
        deleted = []
        for run_id in folders.run_ids(self.root):
            if folders.made_by_server(run_id) and not self._kept(run_id):
                folders.delete_run_folder(self.root, run_id)
                deleted.append(run_id)
        return deleted

    def saved_model(self, run: FinetuneRun) -> Path | None:
        """The run's saved model folder (a stock ``BertForSequenceClassification``), None before its end."""
        return run.run_folder / MODEL_DIRNAME if run.run_id and self.has_model(run.run_id) else None

    def baselines(self) -> dict[str, float]:
        """The topic task's landmarks (validation accuracy) when computed on this server (else {})."""
        return read_baselines(self.settings.cache_dir)

    def _listed(self, owner_token: str = "", saved: Callable[[str], bool] | None = None) -> list[str]:
        """Ids of the runs that saved (``saved``: by default their model) that a list shown now offers
        (``owner_token``: one its reader holds; :func:`~bertdemo.models.run_access.listed`), newest first."""
        saved = saved or self.has_model
        shown = (r for r in folders.run_ids(self.root)
                 if saved(r) and run_access.listed(self.root / r, self.settings.is_public, owner_token))
        return sorted(shown, reverse=True)

    def ids(self) -> list[str]:
        """Ids of the fine-tuning runs with a saved model the request being served may see, newest first: on a
        public server the public runs and the caller's own private ones (outside a request: the public ones)."""
        return self._listed()

    def own_ids(self, owner_token: str = "") -> list[str]:
        """Ids of the saved runs on a learner's own data that ``owner_token``'s holder (or the visitor who
        started them) may see — all of them on a local server — newest first; a run stopped before it kept a model
        is listed too (its result: what it scored before the stop)."""
        return [r for r in self._listed(owner_token, self._kept) if is_own(r)]

    def own_folder(self, run_id: str, owner_token: str = "") -> Path:
        """The folder of a saved own-data run ``owner_token``'s holder may see (ValueError for any other name)."""
        if not isinstance(run_id, str) or run_id not in self.own_ids(owner_token):
            raise ValueError("Pick one of your runs on your own data from the list.")
        return self.root / run_id

    def choices(self, task: str | None = None) -> list[tuple[str, str]]:
        """(label, id) of the saved fine-tuning runs (of ``task`` only, when given): what they started from, their
        validation accuracy (a names run: its F1 of NAME)."""
        out = []
        for run_id in self.ids():
            snap = self.load(run_id)
            if task is not None and snap.task != task:
                continue
            out.append((f"{run_id} · from {snap.init} · {accuracy_label(snap)}", run_id))
        return out

    def model_choices(self) -> list[tuple[str, str]]:
        """The saved fine-tuning runs among every tab's models, as ``ft:<id>``: loaded as a masked LM, the
        fine-tuned encoder with its start's masked-LM head (:mod:`bertdemo.models.mlm_head`)."""
        out = []
        for run_id in self.ids():
            snap = self.load(run_id)
            out.append((f"fine-tuned {run_id} · from {snap.init} · {accuracy_label(snap)}", f"ft:{run_id}"))
        return out

    def load(self, run_id: str) -> FinetuneSnapshot:
        """A saved fine-tuning run's history (ValueError for a name that is none)."""
        try:
            folder = folders.run_folder(self.root, run_id)  # a plain name of a run folder
        except ValueError:
            raise ValueError("Pick a fine-tuning run from the list.") from None
        live = self.snapshot()
        if live is not None and live.run_id == run_id:
            return live
        path = folder / MODEL_DIRNAME / HISTORY_FILE
        if not path.is_file():
            raise ValueError(f"There is no saved fine-tuning run {run_id!r}: pick one from the list.")
        return snapshot_from_history(json.loads(path.read_text()))

    def partner(self, snap: FinetuneSnapshot | None) -> FinetuneSnapshot | None:
        """The other half of a pair of topic runs from one pretraining run of the learner's: for a run started from
        ``run:<id>/checkpoint``, its control (random weights of that run's shape, ``random:run:<id>/checkpoint``) with
        the same seed, and the other way round; the newest such ended run (it has a test accuracy) the caller may see
        (None for any other start, or before the partner has ended). ``snap`` may be live: its partner is drawn
        beside it as it trains."""
        if snap is None or snap.task != TASK or not run_of_init(snap.init):
            return None
        listed = tuple(self.ids())
        seen, partner_id = self._partners.get(snap.run_id, ((), ""))
        if seen != listed or snap.run_id not in self._partners:
            other = run_of_init(snap.init) if is_random_start(snap.init) else random_like(snap.init)
            seed = snap.settings.get("seed")
            partner_id = next(
                (run_id for run_id in listed if run_id != snap.run_id
                 and (found := self.load(run_id)).init == other and found.task == TASK
                 and found.settings.get("seed") == seed and math.isfinite(found.test_accuracy)), "")
            self._partners[snap.run_id] = (listed, partner_id)
        return self.load(partner_id) if partner_id else None

    def model(self, name: str, owner_token: str = "") -> str:
        """The model folder of ``ft:<run id>`` (ValueError for another name or a run with no saved model; a
        private run for its holders alone: the visitor who started it, or ``owner_token``'s holder)."""
        if not isinstance(name, str) or not name.startswith("ft:"):
            raise ValueError("Pick a fine-tuned model (ft:<run id>) from the list.")
        run_id = name[3:]
        if f"-{TABLE5_ID_LABEL}-" in run_id:  # said of the id's shape alone: whether such a run exists stays unsaid
            raise ValueError(f"{name[:60]!r} is a Table 5 cell: a cell keeps its scores, not its weights. Fine-tune on "
                             "the task yourself (Fine-tune tab) for a model to use.")
        if run_id not in self._listed(owner_token):  # the listing is the check: another's private run is none
            raise ValueError(f"There is no fine-tuned model {name[:60]!r} on this server: pick one from the list.")
        return str(self.root / run_id / MODEL_DIRNAME)

    def csv(self, run_id: str) -> str:
        return finetune_csv(self.load(run_id))

    def delete(self, run_id: str, owner_token: str = "") -> None:
        """Delete an ended fine-tuning run (its owner or the admin on a public server)."""
        self.runs.check_may_delete(self.root, run_id, owner_token, missing="Pick a fine-tuning run first.")
        folders.delete_run_folder(self.root, run_id)

"""A fine-tuning run on the learner's own labelled sentences (``task`` "own"): the fine-tuning kind of run, so
it takes the one training slot, the owner token, the caps, the quota, pause and stop like any other.

Torch-free at import. What it reads is the visitor's alone: the run's shared metrics (what every page and
``/run_status`` show of the live run) carry its progress only — no text and no label name; the result
(:data:`RESULT_FILE`: the scores, the label names, each example's out-of-fold prediction) and the data
(:data:`DATA_FILE`, formula cells defused) are written into the run's own folder, shown only to the run's
owner on a public server, and deleted with the run. Its id carries :data:`OWN_MARK`, so the listings can
keep it to its owner.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from bertdemo import storage
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.own_data import (
    OwnData,
    OwnWords,
    copies_of,
    data_csv,
    looks_like_words,
    parse_lines,
    parse_words,
    read_hub_dataset,
    read_table,
    words_csv,
)
from bertdemo.finetune.run import MODEL_DIRNAME, FinetuneRun
from bertdemo.locks import LOGIC_IMPORT_LOCK
from bertdemo.models.load_errors import shown_fault
from bertdemo.models.run_access import OWN_DATA_MARK
from bertdemo.runs.status import Status

log = logging.getLogger(__name__)

TASK = "own"
OWN_MARK = OWN_DATA_MARK  # in every own-data run's id (what marks a run from before the access record private)
RESULT_FILE = "own_result.json"
DATA_FILE = "own_data.csv"
# a run on a few dozen sentences: a batch holds most of them, more passes (docs/benchmarks.md: its time and scores)
OWN_DEFAULTS = {"batch_size": 16, "epochs": 8.0, "learning_rate": 2e-4, "time_budget_s": 120.0, "eval_every": 1000,
                "probe_text": ""}
DATA_FIELDS = ("lines", "hub_dataset", "text_column", "label_column")
LABEL_PER = ("auto", "sentence", "word")  # what pasted lines label: read from their shape (auto), or said


def is_own(run_id: str) -> bool:
    """Whether ``run_id`` names a run on a learner's own data."""
    return OWN_MARK in f"-{run_id}"


def own_request(request: dict[str, Any], upload: str | Path | None, cache_dir: str | Path,
                hub_reachable: Any = lambda: False) -> tuple[OwnData | OwnWords, dict[str, Any]]:
    """The data an own-data start names (``lines``: pasted ``label<TAB>text``, or ``word<TAB>tag`` word labels
    with a blank line between sentences; an uploaded CSV / TSV, with ``text_column`` / ``label_column`` if the
    header's names are not the usual ones; or ``hub_dataset``), read and bounded, and the remaining settings
    with this task's defaults under them. ``label_per``: what pasted lines label, "sentence", "word" or "auto"
    (the default: word labels when every line is one word and one tag and a blank line parts two of them).
    ValueError naming the line and the rule."""
    settings = dict(request)
    lines, hub, text_col, label_col = (settings.pop(name, "") or "" for name in DATA_FIELDS)
    label_per = settings.pop("label_per", "auto") or "auto"
    if label_per not in LABEL_PER:
        raise ValueError(f"label_per must be one of {', '.join(map(repr, LABEL_PER))}; got {str(label_per)[:40]!r}.")
    for name, value in (("lines", lines), ("hub_dataset", hub), ("text_column", text_col), ("label_column", label_col)):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text.")
    given = [what for what, present in (("lines", lines.strip()), ("a file", upload), ("hub_dataset", hub.strip()))
             if present]
    if len(given) != 1:
        raise ValueError("Give your examples one way: pasted lines (label<TAB>text), an uploaded CSV / TSV file, "
                         "or a hub dataset's name" + (f" (got {' and '.join(given)})." if given else "."))
    if label_per == "word" and not lines.strip():
        raise ValueError("Word labels are pasted: word<TAB>tag lines, a blank line between sentences.")
    if lines.strip():
        words = label_per == "word" or (label_per == "auto" and looks_like_words(lines))
        data = parse_words(lines) if words else parse_lines(lines)
    elif upload:
        data = read_table(upload, text_col[:100], label_col[:100], cache_dir=cache_dir)
    else:
        data = read_hub_dataset(hub, hub_reachable)
    return data, {**OWN_DEFAULTS, **settings}


class OwnRun(FinetuneRun):
    """A fine-tuning run on an :class:`OwnData` (a label per sentence) or an :class:`OwnWords` (a label per
    word): cross-validated under 200 examples, split from 200."""

    id_label = "ft-own"  # OWN_MARK in its id
    private = True  # the learner's own data: their run alone (bertdemo.models.run_access)

    def __init__(self, cfg: FinetuneConfig, data: OwnData | OwnWords, runs_dir: str | Path, **kwargs: Any) -> None:
        super().__init__(cfg, runs_dir, task_loader=lambda: data, **kwargs)
        self.data = data
        self.result: dict | None = None
        what = ("sentences", "tags") if isinstance(data, OwnWords) else ("examples", "labels")
        copies = data.copies()  # said at the start: a copy held out beside its text would score memory
        # the settings the page and /run_status show name this task (the config's task is the topic task's field)
        self.metrics.update(task=TASK, settings={**self.metrics.snapshot().settings, "task": TASK},
                            message=f"Starting: {len(data):,} {what[0]}, {len(data.names)} {what[1]}"
                            + (f" ({copies_of(copies)}, held out with it)" if copies else "") + "…")

    def data_csv(self, predictions: list | None = None) -> str:
        """The data as CSV (formula cells defused), each example with its held-out prediction when given."""
        write = words_csv if isinstance(self.data, OwnWords) else data_csv
        return write(self.data, predictions)

    def work(self) -> str:
        with LOGIC_IMPORT_LOCK:
            from bertdemo.finetune.own_eval import CV_BELOW, cross_validate, split_and_finetune

        try:
            storage.write_text(self.run_folder / DATA_FILE, self.data_csv())
            run = cross_validate if len(self.data) < CV_BELOW else split_and_finetune
            status, result = run(self.cfg, self.data, self.metrics, self.control, self.run_folder / MODEL_DIRNAME,
                                 cache_dir=self.cache_dir, clock=self._clock, on_step=self.on_step)
            result["init"] = self.cfg.init
            if result.get("out_of_fold"):  # the data again, each example with the label its held-out fold got
                storage.write_text(self.run_folder / DATA_FILE, self.data_csv(result["out_of_fold"]))
            self.result = result
            storage.write_text(self.run_folder / RESULT_FILE, json.dumps(result, indent=1))
            self.metrics.update(status=status)  # the model and the result are in place: the run says it ended
            return status
        except Exception as err:  # the page says so; the server keeps serving
            self.metrics.update(status=Status.FAILED, message=f"Fine-tuning failed: {shown_fault(err)}")
            log.exception("Fine-tuning on own data failed")
            return Status.FAILED


def read_result(run_folder: Path) -> dict | None:
    """A saved own-data run's result (None when it has none)."""
    try:
        return json.loads((Path(run_folder) / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return None

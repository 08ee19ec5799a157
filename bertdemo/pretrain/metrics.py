"""The metrics of one run behind a lock: written by the training thread, copied by the UI.

`RunSnapshot` is a dataclass of plain values (lists, floats, strings) so the UI, the CLI
and the tests read the same thing; `MetricsBuffer.snapshot()` copies under the lock and
never waits for a training step. Only raw values are stored; smoothing is computed when read
(:attr:`RunSnapshot.train_loss_smooth`, the CSV, the plot at its slider's weight).

Held-out metrics are scored on fixed [MASK]-only questions (:mod:`bertdemo.pretrain.heldout`), the same
for every run whatever its recipe; ``landmarks`` are the n-gram guessers' losses on those questions;
``probe_tracks`` follow the rank of each probe's expected word; ``timeline`` records, once, the first
time the loss goes below each landmark and each probe's word enters the top 5.
"""

from __future__ import annotations

import copy
import csv
import io
import math
import unicodedata
from dataclasses import dataclass, field

from bertdemo.limits import PROBE_WINDOW
from bertdemo.pretrain import timeline
from bertdemo.pretrain.probes import answers_alike
from bertdemo.runs.status import ACTIVE_STATUSES, SMOOTHING, LockedSnapshot, Status, debiased_ema

Prediction = list[tuple[str, float]]  # top-k (token, probability) at one [MASK]
PROBE_POINTS = 1_000  # probe evaluations kept; beyond, every other one is dropped (the whole run stays)
HELDOUT_EVAL = "mask-only 15%"  # how eval_* were scored; histories without it scored with the training masks


@dataclass
class RunSnapshot:
    run_id: str = ""
    status: str = Status.PREPARING  # a Status
    message: str = ""  # tokenizing progress, or the error text of a failed run
    step: int = 0
    total_steps: int = 0
    device: str = ""
    param_count: int = 0
    preset: str = ""
    corpus: str = ""
    objective: str = "mlm"  # "mlm" or "ltr": what its train loss measures (two objectives' train losses differ)
    prepare_fraction: float = 0.0  # tokenizing progress 0..1
    steps: list[int] = field(default_factory=list)  # train-loss log steps
    train_loss: list[float] = field(default_factory=list)  # mean over each log interval
    tokens: list[int] = field(default_factory=list)  # tokens seen (all processes) at `steps`
    wall_s: list[float] = field(default_factory=list)  # training seconds at `steps`
    lr: list[float] = field(default_factory=list)
    nsp_loss: list[float] = field(default_factory=list)  # train NSP loss at `steps` (NSP runs)
    eval_steps: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)  # held-out loss on the fixed [MASK]-only questions (15 %)
    eval_ppl: list[float] = field(default_factory=list)  # exp(eval_loss)
    mlm_acc: list[float] = field(default_factory=list)  # held-out top-1 accuracy (same questions)
    top5_acc: list[float] = field(default_factory=list)  # held-out top-5 accuracy
    median_rank: list[float] = field(default_factory=list)  # median rank of the true token (1 = first guess)
    nsp_acc: list[float] = field(default_factory=list)  # held-out NSP accuracy (NSP runs)
    eval_nsp_loss: list[float] = field(default_factory=list)
    eval_tokens: list[int] = field(default_factory=list)  # tokens seen at `eval_steps`
    eval_wall_s: list[float] = field(default_factory=list)  # training seconds at `eval_steps`
    # the locality bias on attention at `eval_steps` (the evaluation ran with it), as a share of its starting
    # strength, read from the model's attention modules: 1 = full help, 0 = a stock BERT (empty: the run has none)
    locality_strength: list[float] = field(default_factory=list)
    locality_plan: str = ""  # the run's locality bias: "fades", "permanent" (an experiment) or "" (none)
    attention_start: str = ""  # how its heads started: "neighbours" (each on the word before / after) or "" (random)
    tokens_per_s: float = 0.0
    eta_s: float = 0.0  # time left, from the run's own speed (budget.run_eta)
    eta_low_s: float = 0.0  # ... at the fastest and the slowest speed of its last evaluation periods
    eta_high_s: float = 0.0
    eta_basis: str = ""  # what the estimate rests on
    elapsed_s: float = 0.0
    # wall time beside the training steps (what the next run's estimate counts: budget.measured_overheads)
    startup_s: float = 0.0  # Start to the first training step but its step-0 evaluation: tokenizer, corpus, model
    eval_s: float = 0.0  # in held-out evaluations (and their probes) so far
    evals: int = 0
    save_s: float = 0.0  # in checkpoint writes so far
    saves: int = 0
    landmarks: dict[str, float] = field(default_factory=dict)  # landmark -> its loss on the same questions
    probe_text: str = ""
    probe_expected: str = ""  # the word the learner expects at probe_text's first [MASK] ("" none)
    probe_steps: list[int] = field(default_factory=list)  # when the tracked probes were asked
    probe_tokens: list[int] = field(default_factory=list)
    probe_wall_s: list[float] = field(default_factory=list)
    # {"text", "expected", "own", "ranks": rank at each probe step (None before it was tracked), "top5": latest}
    probe_tracks: list[dict] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)  # first landmark crossings and probe arrivals, in order
    probe: list[tuple[int, list[Prediction], str]] = field(default_factory=list)  # (step, per-mask top-5, sentence)
    checkpoints: list[str] = field(default_factory=list)
    last_checkpoint: str = ""

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def plateau(self) -> bool:
        """Whether the model answers (nearly) the same top-5 for every default probe right now."""
        return answers_alike([[token for token, _ in t["top5"]] for t in self.probe_tracks if not t.get("own")])

    @property
    def train_loss_smooth(self) -> list[float]:
        """The debiased EMA of ``train_loss`` at TensorBoard's default weight (computed when read)."""
        return debiased_ema(self.train_loss, SMOOTHING)


class MetricsBuffer(LockedSnapshot):
    """Thread-safe holder of a RunSnapshot; all writers go through its methods."""

    snapshot_type = RunSnapshot

    @staticmethod
    def copied(name: str, value):
        """As :meth:`LockedSnapshot.copied`; a probe track, whose ranks grow, is copied with its own list of ranks."""
        if name == "probe_tracks":
            return [{**track, "ranks": list(track["ranks"])} for track in value]
        return LockedSnapshot.copied(name, value)

    def log_train(self, step: int, loss: float, lr: float, nsp_loss: float | None = None, tokens: int = 0,
                  wall_s: float = 0.0) -> None:
        with self._lock:
            s = self._snap
            s.steps.append(step)
            s.train_loss.append(loss)
            s.lr.append(lr)
            s.tokens.append(tokens)
            s.wall_s.append(wall_s)
            if nsp_loss is not None:
                s.nsp_loss.append(nsp_loss)

    def log_eval(self, step: int, loss: float, acc: float, nsp_loss: float | None, nsp_acc: float | None,
                 tokens: int = 0, wall_s: float = 0.0, top5: float | None = None,
                 median_rank: float | None = None, locality: float | None = None) -> None:
        """One held-out evaluation (``acc``: top-1; ``locality``: the bias it ran with, a share of the starting
        strength, None for a run without one); records a landmark crossing the first time."""
        with self._lock:
            s = self._snap
            s.eval_steps.append(step)
            s.eval_tokens.append(tokens)
            s.eval_wall_s.append(wall_s)
            s.eval_loss.append(loss)
            s.eval_ppl.append(math.exp(min(loss, 50.0)))
            s.mlm_acc.append(acc)
            # every evaluation appends to every series (NaN where a value is absent), so index i is always
            # evaluation i: a Stop during the NSP part, a resumed run or a GPU burst shifts nothing
            both_rank = top5 is not None and median_rank is not None
            s.top5_acc.append(top5 if both_rank else math.nan)
            s.median_rank.append(median_rank if both_rank else math.nan)
            s.locality_strength.append(math.nan if locality is None else locality)
            both_nsp = nsp_acc is not None and nsp_loss is not None
            s.nsp_acc.append(nsp_acc if both_nsp else math.nan)
            s.eval_nsp_loss.append(nsp_loss if both_nsp else math.nan)
            self._record(timeline.landmark_events(loss, s.landmarks, s.timeline), step, tokens, wall_s)

    def log_probe_ranks(self, step: int, answers: list[tuple[str, str, bool, Prediction, int | None]],
                        tokens: int = 0, wall_s: float = 0.0) -> None:
        """The tracked probes' (sentence, expected word, own?, top-5, rank) now. A probe no longer asked
        (the learner changed theirs) is dropped; a new one starts here. Records each probe's first top-5."""
        with self._lock:
            s = self._snap
            known = {(t["text"], t["expected"]): t for t in s.probe_tracks}
            before = len(s.probe_steps)
            tracks = []
            for text, expected, own, top5, rank in answers:
                track = known.get((text, expected)) or {"text": text, "expected": expected, "own": own,
                                                       "ranks": [None] * before}
                track["ranks"].append(rank)
                track["top5"] = [(token, p) for token, p in top5]
                tracks.append(track)
            s.probe_tracks = tracks
            s.probe_steps.append(step)
            s.probe_tokens.append(tokens)
            s.probe_wall_s.append(wall_s)
            if len(s.probe_steps) > PROBE_POINTS:
                _thin_probes(s)
            self._record(timeline.probe_events(tracks, s.timeline), step, tokens, wall_s)

    def log_event(self, event: dict, step: int, tokens: int = 0, wall_s: float = 0.0) -> None:
        """One timeline event the trainer decides on (e.g. the block length switching), at ``step``."""
        with self._lock:
            self._record([event], step, tokens, wall_s)

    def _record(self, events: list[dict], step: int, tokens: int, wall_s: float) -> None:
        self._snap.timeline.extend({**e, "step": step, "tokens": tokens, "wall_s": wall_s} for e in events)

    def log_probe(self, step: int, predictions: list[Prediction], sentence: str = "") -> None:
        """Keep this evaluation's probe answers; only the latest PROBE_WINDOW are kept (and sent to pages)."""
        with self._lock:
            self._snap.probe.append((step, predictions, sentence))
            del self._snap.probe[:-PROBE_WINDOW]

    def log_beside_training(self, part: str, seconds: float) -> None:
        """One evaluation (``part`` "eval") or checkpoint write ("save") that took ``seconds`` of wall time."""
        with self._lock:
            s = self._snap
            setattr(s, f"{part}_s", getattr(s, f"{part}_s") + seconds)
            setattr(s, f"{part}s", getattr(s, f"{part}s") + 1)

    def add_checkpoint(self, path: str) -> None:
        with self._lock:
            if path not in self._snap.checkpoints:
                self._snap.checkpoints.append(path)
            self._snap.last_checkpoint = path


_EVAL_FIELDS = ("eval_steps", "eval_loss", "eval_ppl", "mlm_acc", "top5_acc", "median_rank", "nsp_acc",
                "eval_nsp_loss", "eval_tokens", "eval_wall_s", "locality_strength")
HISTORY_FIELDS = ("steps", "train_loss", "lr", "nsp_loss", "tokens", "wall_s", *_EVAL_FIELDS, "probe", "landmarks",
                  "probe_steps", "probe_tokens", "probe_wall_s", "probe_tracks", "timeline")


def _thin_probes(s: RunSnapshot) -> None:
    """Keep every other probe evaluation (the first and the latest always): the run's whole span, half the points."""
    keep = sorted({*range(0, len(s.probe_steps), 2), len(s.probe_steps) - 1})
    for name in ("probe_steps", "probe_tokens", "probe_wall_s"):
        setattr(s, name, [getattr(s, name)[i] for i in keep])
    for track in s.probe_tracks:
        track["ranks"] = [track["ranks"][i] for i in keep]


def history_dict(snap: RunSnapshot) -> dict:
    """The curves of a snapshot (for trainer_state.json, so a resumed run keeps its history)."""
    return {"heldout_eval": HELDOUT_EVAL, **{name: copy.deepcopy(getattr(snap, name)) for name in HISTORY_FIELDS}}


def latest(values: list[float]) -> float | None:
    """The latest finite value of a series (None when it has none: a run without NSP, say)."""
    return next((v for v in reversed(values) if v is not None and math.isfinite(v)), None)


def has_values(values: list[float]) -> bool:
    """Whether a series holds at least one finite value (an all-gap series is not drawn or reported)."""
    return latest(values) is not None


def _history_values(data: dict) -> dict:
    """The curves saved by :func:`history_dict` as RunSnapshot field values (older files: extra names ignored;
    held-out curves scored with the training masks, which flatter a run, are left out). A held-out series
    whose length is not the number of evaluations (written before every evaluation appended to every
    series) cannot be placed on its steps: it comes back as gaps (NaN), never as values on the wrong steps."""
    values = {name: data[name] for name in HISTORY_FIELDS if name in data}
    if data.get("heldout_eval") != HELDOUT_EVAL:
        values = {name: value for name, value in values.items() if name not in _EVAL_FIELDS}
    if "eval_steps" in values:
        count = len(values["eval_steps"])
        for name in _EVAL_FIELDS:
            series = values.get(name)
            if series is None or len(series) != count:
                values[name] = [math.nan] * count
            else:
                values[name] = [math.nan if v is None else v for v in series]
    if "probe_tracks" in data:  # JSON turned tuples into lists
        values["probe_tracks"] = [{**t, "top5": [(str(tok), float(p)) for tok, p in t.get("top5", [])]}
                                  for t in data["probe_tracks"]]
    if "probe" in data:  # JSON turned tuples into lists
        values["probe"] = [(int(entry[0]), [[(str(t), float(p)) for t, p in m] for m in entry[1]],
                            str(entry[2]) if len(entry) > 2 else "") for entry in data["probe"]]
    return values


def restore_history(buffer: MetricsBuffer, data: dict) -> None:
    """Put saved curves back into a live run's buffer (a resumed run keeps its history)."""
    buffer.update(**_history_values(data))


def snapshot_from_history(data: dict, **fields) -> RunSnapshot:
    """A snapshot of a saved run: its curves from ``data`` (:func:`history_dict`), the rest from ``fields``."""
    return RunSnapshot(**fields, **_history_values(data))


def _one_line(text: str) -> str:
    """``text`` with every line break and control character as a space: one CSV cell on one line (a probe
    kept by an older run may hold a bare CR, which Python's csv leaves unquoted)."""
    return "".join(" " if unicodedata.category(c) in {"Cc", "Zl", "Zp"} else c for c in str(text))


def metrics_csv(snap: RunSnapshot) -> str:
    """One row per logged or evaluated step: step, tokens, wall_s, the train and held-out metrics."""
    rows: dict[int, dict] = {}
    smooth = snap.train_loss_smooth
    for i, step in enumerate(snap.steps):
        row = rows.setdefault(step, {})
        row.update(train_loss=snap.train_loss[i], train_loss_smooth=smooth[i], lr=snap.lr[i])
        if i < len(snap.tokens):
            row.update(tokens=snap.tokens[i], wall_s=snap.wall_s[i])
        if i < len(snap.nsp_loss):
            row["nsp_loss"] = snap.nsp_loss[i]
    landmarks = {f"landmark_{name}": value for name, value in snap.landmarks.items()}
    optional = ("top5_acc", "median_rank", "nsp_acc", "locality_strength")
    for i, step in enumerate(snap.eval_steps):
        row = rows.setdefault(step, {})
        row.update(eval_loss=snap.eval_loss[i], eval_ppl=snap.eval_ppl[i], mlm_acc=snap.mlm_acc[i], **landmarks)
        if i < len(snap.eval_tokens):
            row.update(tokens=snap.eval_tokens[i], wall_s=snap.eval_wall_s[i])
        row.update({name: getattr(snap, name)[i] for name in optional})  # one entry per evaluation, NaN a gap
    ranks = [(f"rank of '{_one_line(t['expected'])}' in '{_one_line(t['text'])}'", t["ranks"])
             for t in snap.probe_tracks if t["expected"]]
    for i, step in enumerate(snap.probe_steps):
        row = rows.setdefault(step, {})
        for column, values in ranks:
            if i < len(values) and values[i] is not None:
                row[column] = values[i]
    columns = ["step", "tokens", "wall_s", "train_loss", "train_loss_smooth", "lr", "nsp_loss", "eval_loss",
               "eval_ppl", "mlm_acc", "top5_acc", "median_rank", "nsp_acc", "locality_strength", *landmarks,
               *(c for c, _ in ranks)]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for step in sorted(rows):
        writer.writerow({"step": step, **{k: _cell(v) for k, v in rows[step].items()}})
    return out.getvalue()


def _cell(value: float | None) -> str:
    """A CSV cell: ints as written, floats to 6 significant digits, a gap (None, NaN) empty."""
    if isinstance(value, int):
        return str(value)
    if value is None or math.isnan(value):
        return ""
    return f"{value:.6g}"

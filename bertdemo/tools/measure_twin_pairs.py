"""Measure the twin pairs that :mod:`bertdemo.tools.build_twin_pairs` trained, along their checkpoints, and ship them.

    python -m bertdemo.tools.measure_twin_pairs --work runs/twin-pairs                  # the curve (resumable)
    python -m bertdemo.tools.measure_twin_pairs --work runs/twin-pairs --table5         # + Table 5 at the last step
    python -m bertdemo.tools.measure_twin_pairs --work runs/twin-pairs --export         # + write bertdemo/assets/twins
    python -m bertdemo.tools.measure_twin_pairs --table5-shipped                         # Table 5 of the shipped models
    python -m bertdemo.tools.measure_twin_pairs --text-start-shipped                     # the shipped, asked as a text's start
    python -m bertdemo.tools.measure_twin_pairs --work runs/twin-stage --stage --table5 --export   # a later stage

At every step that all three runs kept (the log-spaced checkpoints, and the last), on the same held-out words of the
pairs' own corpus (its held-out blocks, never trained on; each word asked alone: the masked LM reads the sentence
with that word hidden, a left-to-right LM the words before it), by the word's position in its sentence, beside the
n-gram landmarks counted over the training blocks; and the rank of the right word on the right-context cloze set.
Both pairs share the masked twin: *controlled* (``mlm`` beside ``ltr-masked``, which predicts the same words per
step) and *paper* (``mlm`` beside ``ltr-all``, which predicts every next word). ``--table5`` fine-tunes each final
model on the topic and names tasks, 3 seeds (:func:`bertdemo.finetune.twin_finetune.finetune_twin`).

Everything measured is kept in ``WORK/measure.json`` (a step measured before is not measured again). ``--export``
writes the three final models in fp16 with their tokenizer (``mlm/``, ``ltr/`` = ``ltr-all``, ``ltr-masked/``),
``heldout.npz`` (the held-out blocks asked and each question's landmark losses, so the page recomputes the models'
side from their weights), ``curve.json`` and the Table 5 files into ``--assets``. With ``--stage`` the work folder is
a later stage of the shipped twins (:mod:`bertdemo.tools.continue_twins`): its checkpoints are asked the shipped
held-out questions, counted on from the shipped curve's tokens and appended to it, and its export keeps the shipped
``heldout.npz`` and adds the stage to ``build.json``'s ``stages``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bertdemo import storage
from bertdemo.tools.build_twin_pairs import MAX_CORPUS_TOKENS

PAIRS = {"controlled": ("mlm", "ltr-masked"), "paper": ("mlm", "ltr-all")}
EXPORT_NAMES = {"mlm": "mlm", "ltr-masked": "ltr-masked", "ltr-all": "ltr"}  # run -> asset folder
RUNS = ("mlm", "ltr-masked", "ltr-all")
SEEDS = (0, 1, 2)
HELDOUT_BLOCKS = 64  # the page's largest comparison: every question of these blocks
SEQ_LEN = 128


def step_folders(run: Path) -> dict[int, Path]:
    """The run's kept checkpoints by step (the latest save of a step)."""
    from bertdemo.pretrain.checkpoints import read_state

    found: dict[int, Path] = {}
    for folder in sorted((run / "steps").glob("step-*")):
        if (folder / "config.json").is_file():
            found[int(read_state(folder).get("step") or 0)] = folder
    return found


def log_spaced(steps: list[int], ends: frozenset[int] | set[int] = frozenset()) -> list[int]:
    """The curve's points among the steps every run kept: the first, each power-of-two multiple of it, each step in
    ``ends`` (where a schedule ended and the runs were continued from) and the last (the save before the last, which
    a run also keeps, is left out)."""
    if not steps:
        return []
    first = steps[0]
    return [s for s in steps
            if s == steps[-1] or s in ends or (s % first == 0 and ((s // first) & (s // first - 1)) == 0)]


def load(folder: Path, name: str):
    """A checkpoint as a :class:`~bertdemo.explore.twins.Twin` (float32, eval mode; its own tokenizer)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer, BertConfig

    from bertdemo.explore.twins import Twin

    causal = bool(BertConfig.from_pretrained(str(folder)).is_decoder)
    model_class = AutoModelForCausalLM if causal else AutoModelForMaskedLM
    model = model_class.from_pretrained(str(folder), dtype=torch.float32).eval()
    return Twin(name, model, AutoTokenizer.from_pretrained(str(folder)))


def heldout_data(work: Path, block_starts: str = "anywhere") -> tuple[np.ndarray, Any]:
    """(held-out blocks, n-gram counts of the training blocks) of the pairs' corpus with their tokenizer, packed as
    the runs packed it (``block_starts``: their recipe's)."""
    from transformers import AutoTokenizer

    from bertdemo.pretrain.data import prepare_blocks
    from bertdemo.pretrain.landmarks import count_ngrams

    tok = AutoTokenizer.from_pretrained(str(work / "tokenizer"))
    blocks = prepare_blocks(str(work / "corpus.jsonl"), tok, SEQ_LEN, max_tokens=MAX_CORPUS_TOKENS,
                            block_starts=block_starts)
    return blocks.heldout[:HELDOUT_BLOCKS], count_ngrams(blocks.train, len(tok), tok.all_special_ids)


def base_blocks(base: Path, tokenizer, cache: Path, heldout_file: Path):
    """The rebuilt base corpus's blocks, cut as the build cut them; they must give the held-out blocks of
    ``heldout_file`` (a shipped ``heldout.npz``), else the held-out words are not the shipped twins' and a stage's
    figures would not continue their curve (SystemExit)."""
    from bertdemo.pretrain.data import prepare_blocks

    blocks = prepare_blocks(str(base), tokenizer, SEQ_LEN, cache, MAX_CORPUS_TOKENS, 0.02)
    shipped = np.load(heldout_file)["blocks"]
    if not np.array_equal(blocks.heldout[:len(shipped)].astype(np.int64), shipped.astype(np.int64)):
        raise SystemExit(f"{base.name} does not rebuild the shipped twins' held-out blocks: not their corpus.")
    return blocks


def stage_heldout_data(work: Path, checkpoint: Path):
    """(held-out blocks, n-gram counts) of a stage of :mod:`bertdemo.tools.continue_twins`: the shipped twins' own
    held-out questions and landmarks, from the base corpus it rebuilt (checked against the ``heldout.npz`` it
    started from), cut as :func:`heldout_data` cuts a build's, with the tokenizer of the stage's ``checkpoint``; so
    the stage's checkpoints continue the shipped curve on the same words."""
    from transformers import AutoTokenizer

    from bertdemo.pretrain.landmarks import count_ngrams

    tok = AutoTokenizer.from_pretrained(str(checkpoint))
    blocks = base_blocks(work / "base.jsonl", tok, work / "cache", work / "prior" / "heldout.npz")
    asked = len(np.load(work / "prior" / "heldout.npz")["blocks"])
    return blocks.heldout[:asked], count_ngrams(blocks.train, len(tok), tok.all_special_ids)


def prior_curve(work: Path) -> tuple[list[dict], list[dict], dict]:
    """What a stage continues: the shipped curve's checkpoints (models named by run, as this tool measures them),
    its stages (the first: the build itself) and the shipped ``build.json``; its schedule restarts:
    :func:`prior_restarts`."""
    curve = json.loads((work / "prior" / "curve.json").read_text(encoding="utf-8"))
    build = json.loads((work / "prior" / "build.json").read_text(encoding="utf-8"))
    inverse = {v: k for k, v in EXPORT_NAMES.items()}
    checkpoints = _renamed(curve["checkpoints"], inverse)
    stages = curve.get("stages") or [{"stage": 0, "from_tokens": 0, "tokens_per_step": curve["tokens_per_step"],
                                      "corpus": build.get("corpus"), "command": build.get("build_command")}]
    return checkpoints, stages, build


def prior_restarts(work: Path) -> list[dict]:
    """Where the curve a stage continues began a learning-rate schedule again (its ``schedule_restarts``; none for a
    record written before they were kept)."""
    return json.loads((work / "prior" / "curve.json").read_text(encoding="utf-8")).get("schedule_restarts", [])


def comparison_record(result) -> dict:
    """A :class:`~bertdemo.explore.twins.HeldoutComparison` as plain values, the models named by run."""
    return {"overall": result.overall, "loss": result.loss, "counts": result.counts, "buckets": result.buckets,
            "questions": result.questions}


def cloze_record(ranks) -> dict:
    """Per model: MRR, median rank, top-1 / top-5 shares; per pair: the share of items the masked twin ranks better."""
    out = {"items": len(ranks.items), "models": {}}
    for name in ranks.names:
        r = np.asarray(ranks.ranks[name])
        out["models"][name] = {"mrr": float(np.mean(1.0 / r)), "median_rank": float(np.median(r)),
                               "top1": float(np.mean(r <= 1)), "top5": float(np.mean(r <= 5)),
                               "ranks": r.tolist(), "first_guess": ranks.first_guess[name]}
    for pair, (mlm, ltr) in PAIRS.items():
        m, l = np.asarray(ranks.ranks[mlm]), np.asarray(ranks.ranks[ltr])
        out[pair] = {"mlm_better": int((m < l).sum()), "ltr_better": int((l < m).sum()), "ties": int((m == l).sum())}
    return out


def schedule_restarts(points: list[int], ends: set[int], offset: int, tokens_per_step: int) -> list[dict]:
    """Where the runs' learning rate was warmed up again among the curve's ``points`` (steps): each step in ``ends``
    (a save that ended its schedule) that the runs went on from, with the tokens read by then (a stage's counted
    after ``offset``) and where the schedule begun there ended (``until_tokens``: the next point in ``ends``; None
    while it was still running at the curve's last point)."""
    restarts = []
    for k, step in enumerate(points[:-1]):
        if step in ends:
            until = next((later for later in points[k + 1:] if later in ends), None)
            restarts.append({"step": step, "tokens": offset + step * tokens_per_step,
                             "until_tokens": None if until is None else offset + until * tokens_per_step})
    return restarts


def measure_step(folders: dict[str, Path], heldout: np.ndarray, counts, block_starts: str = "anywhere") -> dict:
    """One step of all three runs: both pairs on the held-out words (``heldout``, packed as ``block_starts`` says),
    the three models on the cloze set."""
    from bertdemo.explore.twins import cloze_ranks, heldout_by_position

    twins = {run: load(folder, run) for run, folder in folders.items()}
    record = {pair: comparison_record(heldout_by_position(twins[m], twins[l], heldout, counts, HELDOUT_BLOCKS,
                                                          block_starts=block_starts))
              for pair, (m, l) in PAIRS.items()}
    record["cloze"] = cloze_record(cloze_ranks([twins["mlm"], twins["ltr-masked"], twins["ltr-all"]]))
    return record


FAR_TOKENS = 1e15  # past any budget of this tool (BERT-base read about 1.3e11): the extrapolation says "beyond"


def crossover(curve: list[dict], pair: str) -> dict:
    """Where the masked twin's held-out loss falls below the left-to-right twin's, in tokens seen (geometric
    interpolation between the two checkpoints that bracket it); or, when it does not within the budget, the gap's
    straight line in log tokens over the last three checkpoints and the tokens where it would reach zero (past
    ``FAR_TOKENS``, or never: ``extrapolated_tokens`` is None, and a gap still closing says ``beyond_tokens``)."""
    mlm, ltr = PAIRS[pair]
    points = [(c["tokens"], c[pair]["overall"][ltr] - c[pair]["overall"][mlm]) for c in curve]  # > 0: masked ahead
    for (t0, g0), (t1, g1) in itertools.pairwise(points):
        if g0 <= 0 < g1:
            share = -g0 / (g1 - g0)
            return {"crosses": True, "tokens": float(math.exp(math.log(t0) + share * (math.log(t1) - math.log(t0)))),
                    "between": [t0, t1], "gap_at_end": points[-1][1]}
    if points and points[-1][1] > 0:
        return {"crosses": True, "tokens": float(points[0][0]), "between": [points[0][0], points[0][0]],
                "gap_at_end": points[-1][1], "ahead_from_first": True}
    last = points[-3:]
    x = np.log([t for t, _ in last])
    y = np.array([g for _, g in last])
    slope, intercept = np.polyfit(x, y, 1) if len(last) >= 2 else (0.0, y[-1] if len(y) else 0.0)
    log_needed = -intercept / slope if slope > 0 else math.inf  # a gap closing very slowly meets it far out
    far = log_needed > math.log(FAR_TOKENS)
    return {"crosses": False, "gap_at_end": points[-1][1] if points else None, "slope_per_e": float(slope),
            "extrapolated_tokens": float(math.exp(log_needed)) if not far else None,
            **({"beyond_tokens": FAR_TOKENS} if far and slope > 0 else {})}


def table5_cells(folders: dict[str, Path], step: int, settings, seeds: tuple[int, ...], cells_path: Path,
                 log) -> dict:
    """Fine-tune each of ``folders``' models (``run -> its checkpoint at ``step``) on the topic and names tasks with
    each seed, the cells measured before (kept in ``cells_path``, written after every cell) skipped; every cell."""
    from bertdemo.finetune.service import default_names_task, default_topic_task
    from bertdemo.finetune.twin_finetune import finetune_twin

    cells = json.loads(cells_path.read_text(encoding="utf-8")) if cells_path.is_file() else {}
    for task in ("topic", "names"):
        data = None
        for seed in seeds:
            for run, folder in folders.items():
                kind = EXPORT_NAMES[run]
                key = f"{task}/{kind}/{seed}@{step}"
                if key in cells and cells[key]["settings"] == settings.flat():
                    continue
                load_task = default_topic_task if task == "topic" else default_names_task
                data = data or load_task(str(cells_path.parent / "cache"))  # its splits cached beside the cells
                r = finetune_twin(kind, task, seed, data, settings, folder=folder)
                cell = {"test": float(r.test_score), "validation": float(r.val_score), "step": r.chosen_step,
                        "seconds": round(r.seconds, 1), "settings": settings.flat(), "load": os.getloadavg()[0]}
                cells = _keep_cell(cells_path, key, cell)
                log(f"table 5 {task} {kind} seed {seed}: test {r.test_score:.4f} (validation {r.val_score:.4f} at "
                    f"step {r.chosen_step}) {r.seconds:.0f} s")
    return cells


def _keep_cell(cells_path: Path, key: str, cell: dict) -> dict:
    """Add one cell to the cells file (another process may be measuring other models' cells into it: read, add and
    write under a lock); every cell now in it."""
    return storage.update_json(cells_path, lambda cells: {**cells, key: cell})


def table5(cells: dict, step: int, seeds: tuple[int, ...], settings) -> dict:
    """Table 5 in miniature from the cells at ``step`` of all three models, as
    :func:`bertdemo.finetune.table5.table_from_scores` makes it (both pairs' comparisons), with each cell's
    validation choice and mean seconds."""
    from bertdemo.finetune.table5 import table_from_scores

    kinds = [EXPORT_NAMES[run] for run in RUNS]
    at = {task: {kind: [cells[f"{task}/{kind}/{seed}@{step}"] for seed in seeds] for kind in kinds}
          for task in ("topic", "names")}
    scores = {task: {kind: [c["test"] for c in by[kind]] for kind in kinds} for task, by in at.items()}
    return {**table_from_scores(scores, seeds), "settings": settings.flat(),
            "mean_cell_s": {task: {kind: sum(c["seconds"] for c in v) / len(v) for kind, v in by.items()}
                            for task, by in at.items()},
            "chosen": {f"{task}/{kind}/{seed}": {"step": c["step"], "validation": c["validation"]}
                       for task, by in at.items() for kind, v in by.items() for seed, c in zip(seeds, v)}}


def cell_settings(steps: int):
    """The fine-tuning settings of every Table 5 cell: ``steps`` steps, validation three times along them."""
    from bertdemo.finetune.table5 import CellSettings

    return CellSettings(steps=steps, eval_every=max(5, steps // 3)).validate()


def all_cells(cells: dict, step: int) -> bool:
    """Whether ``cells`` holds every cell of Table 5 at ``step``: both tasks, the three models, every seed."""
    return all(f"{task}/{EXPORT_NAMES[run]}/{seed}@{step}" in cells for task in ("topic", "names") for run in RUNS
               for seed in SEEDS)


def table5_along(cells: dict, tokens_per_step: int, settings, offset: int = 0) -> list[dict]:
    """Table 5 at every step where all of its cells were measured with ``settings`` (a checkpoint along the curve, and
    the last), in order: ``{"step", "tokens", "seeds", "cells", "comparisons"}`` as :func:`table5` makes them, the
    tokens counted as the curve counts them (``offset``: a stage's tokens come after the shipped twins')."""
    from bertdemo.finetune.table5 import table_from_scores

    flat = settings.flat()
    steps = sorted({int(key.rsplit("@", 1)[1]) for key, cell in cells.items() if cell.get("settings") == flat})
    kinds = [EXPORT_NAMES[run] for run in RUNS]
    along = []
    for step in steps:
        keys = {task: {kind: [f"{task}/{kind}/{seed}@{step}" for seed in SEEDS] for kind in kinds}
                for task in ("topic", "names")}
        if not all(k in cells and cells[k].get("settings") == flat for by in keys.values() for ks in by.values()
                   for k in ks):
            continue
        scores = {task: {kind: [cells[k]["test"] for k in ks] for kind, ks in by.items()} for task, by in keys.items()}
        along.append({"step": step, "tokens": offset + step * tokens_per_step, **table_from_scores(scores, SEEDS)})
    return along


def table5_record(cells: dict, step: int, settings, threads: int, load: float, argv: list[str] | None) -> dict:
    """The shipped ``table5.json``: Table 5 at ``step`` with where, when and how long its cells ran."""
    import torch

    spent = sum(c["seconds"] for k, c in cells.items() if k.endswith(f"@{step}"))
    return {"step": step, "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{os.uname().machine}, {os.cpu_count()} CPU cores, {threads} torch thread(s), no GPU, "
                       f"shared: load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
            "command": "python -m bertdemo.tools.measure_twin_pairs " + " ".join(
                argv if argv is not None else sys.argv[1:]),
            "torch": torch.__version__, "wall_s": round(spent, 1), **table5(cells, step, SEEDS, settings)}


def table5_of_shipped(assets: Path, work: Path, args: argparse.Namespace, argv: list[str] | None, log) -> int:
    """Table 5 in miniature of the three models already in ``assets`` (their step from its ``build.json``): the
    cells of ``--table5`` (every model when none is named) into ``work``; ``assets/table5.json`` once all are there."""
    step = int(json.loads((assets / "build.json").read_text(encoding="utf-8"))["twins"]["mlm"]["step"])
    settings = cell_settings(args.table5_steps)
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    which = args.table5 or list(RUNS)
    cells = table5_cells({run: assets / EXPORT_NAMES[run] for run in which}, step, settings, SEEDS,
                         work / "table5_cells.json", log)
    if not all_cells(cells, step):
        return 0
    storage.write_text(assets / "table5.json",
                       json.dumps(table5_record(cells, step, settings, args.threads, load, argv), indent=1) + "\n")
    log(f"wrote {assets / 'table5.json'}")
    return 0


def add_table5_along(assets: Path, cells_path: Path, settings, log) -> int:
    """Write into ``assets``' table5.json the Table 5 of every checkpoint whose cells ``cells_path`` keeps (the
    shipped curve's tokens per step; none of a later stage). 2 when the cells do not reach the shipped table's step."""
    table_path = assets / "table5.json"
    table = json.loads(table_path.read_text(encoding="utf-8"))
    curve = json.loads((assets / "curve.json").read_text(encoding="utf-8"))
    cells = json.loads(cells_path.read_text(encoding="utf-8")) if cells_path.is_file() else {}
    along = table5_along(cells, int(curve["tokens_per_step"]), settings)
    if not along or along[-1]["step"] != table["step"]:
        log(f"error: the kept cells reach {[a['step'] for a in along]}, not the shipped table's step {table['step']}")
        return 2
    storage.write_text(table_path, json.dumps({**table, "along": along}, indent=1) + "\n")
    log(f"wrote Table 5 at steps {[a['step'] for a in along]} into {table_path}")
    return 0


def text_start_record(assets: Path, curve: dict, block_starts: str = "anywhere") -> dict:
    """The shipped models in ``assets`` asked after a [SEP] (``[CLS] [SEP] sentence [SEP]``,
    :func:`bertdemo.explore.twins.as_text_start`) beside as the page asks (``[CLS] sentence [SEP]``): the held-out
    words of ``heldout.npz`` by position band, and the right-context cloze, at ``curve``'s (their ``curve.json``'s)
    last checkpoint; ``block_starts``: how their training blocks began (the recipe's). Packed "anywhere" (one stream of texts cut into blocks anywhere), a [CLS] is all but
    never followed by a text's start in training, a [SEP] is: a left-to-right twin asked "[CLS] The" reads "The" as
    the middle of a text."""
    from bertdemo.explore.twins import cloze_ranks, heldout_losses, read_heldout_file

    twins = [load(assets / EXPORT_NAMES[run], run) for run in RUNS]
    heldout = read_heldout_file(assets / "heldout.npz")
    tokens = int(curve["checkpoints"][-1]["tokens"])
    return _renamed({"asked_as": "[CLS] [SEP] sentence [SEP]", "blocks_began": block_starts, "tokens": tokens,
                     "heldout": heldout_losses(twins, heldout.blocks, True, heldout.block_starts),
                     "heldout_as_page": heldout_losses(twins, heldout.blocks, block_starts=heldout.block_starts),
                     "cloze": cloze_record(cloze_ranks(twins, text_start=True))})


def add_text_start(assets: Path, log: Callable[[str], None]) -> None:
    """:func:`text_start_record` of the models in ``assets``, into its ``curve.json`` (``text_start``), their blocks'
    start as the record there says (none: "anywhere", the shipped twins')."""
    curve = json.loads((assets / "curve.json").read_text(encoding="utf-8"))
    began = (curve.get("text_start") or {}).get("blocks_began", "anywhere")
    curve["text_start"] = text_start_record(assets, curve, began)
    storage.write_text(assets / "curve.json", json.dumps(curve, indent=1) + "\n")
    log(f"wrote text_start into {assets / 'curve.json'}")


def export(folders: dict[str, Path], heldout: np.ndarray, counts, measured: dict, assets: Path, log,
           prior_build: dict | None = None, stage_record: dict | None = None, prior_heldout: Path | None = None,
           ) -> None:
    """The final models (fp16, stock folders), the held-out questions with their landmark losses, the curve and
    the Table 5 files, into ``assets`` (a stage's: with the ``build.json`` it continued, ``prior_build``, and its
    ``stage.json``, ``stage_record``, and the held-out questions it asked again, ``prior_heldout``: shipped as they
    were, not recounted)."""
    import torch

    from bertdemo.explore.twins import heldout_landmarks

    recipe = json.loads((folders["mlm"] / "train_config.json").read_text(encoding="utf-8"))
    block_starts = recipe["data"].get("block_starts", "anywhere")  # how the runs' blocks, the held-out ones too, began
    for run, folder in folders.items():
        twin = load(folder, run)
        target = assets / EXPORT_NAMES[run]
        twin.model.to(torch.float16)
        fresh = target.with_name(f".{target.name}.new")
        shutil.rmtree(fresh, ignore_errors=True)
        with storage.atomic_folder(fresh) as tmp:
            twin.model.save_pretrained(str(tmp), safe_serialization=True)
            twin.tokenizer.save_pretrained(str(tmp))
            (tmp / "generation_config.json").unlink(missing_ok=True)
        _swap_in(fresh, target)
        log(f"exported {run} -> {target} ({(target / 'model.safetensors').stat().st_size / 1e6:.1f} MB)")
    if prior_heldout is not None:  # a stage asks the questions it continues (checked equal): the file as shipped
        with storage.atomic_path(assets / "heldout.npz") as tmp:
            shutil.copyfile(prior_heldout, tmp)
    else:
        twins = {run: load(folder, run) for run, folder in folders.items()}
        landmarks = heldout_landmarks(twins["mlm"].tokenizer, heldout, counts, block_starts)
        with storage.atomic_path(assets / "heldout.npz") as tmp, open(tmp, "wb") as fh:
            np.savez_compressed(fh, blocks=heldout.astype(np.uint16), block_starts=np.array(block_starts),
                                **landmarks)
    curve = measured["curve_export"]  # with the exported models asked after a [SEP] too (their fp16 weights)
    curve = {**curve, "text_start": text_start_record(assets, curve, block_starts)}
    storage.write_text(assets / "curve.json", json.dumps(curve, indent=1) + "\n")
    record = build_record(folders, measured, assets)
    if prior_build:
        record = stage_build_record(prior_build, record, stage_record or {})
    storage.write_text(assets / "build.json", json.dumps(record, indent=1) + "\n")
    if measured.get("table5"):
        storage.write_text(assets / "table5.json", json.dumps(measured["table5"], indent=1) + "\n")


def recipe_tokens_per_step(recipe: dict) -> int:
    """The tokens one step of a twin's run reads (its ``train_config.json``: a batch of blocks of one length)."""
    return int(recipe["optim"]["batch_size"]) * int(recipe["data"]["seq_len"])


def build_record(folders: dict[str, Path], measured: dict, assets: Path) -> dict:
    """What the build and the measurement did, beside the models (``build.json``): the commands, the sittings of
    the build, and each model's steps, tokens, training hours, speed, final held-out loss and size."""
    from bertdemo.pretrain.checkpoints import read_state

    work = next(iter(folders.values())).parents[2]
    build = json.loads((work / "build_record.json").read_text(encoding="utf-8")) if (
        work / "build_record.json").is_file() else {}
    last = measured["curve_export"]["checkpoints"][-1]
    models = {}
    for run, folder in folders.items():
        state = read_state(folder)
        history = state.get("history", {})
        recipe = json.loads((folder / "train_config.json").read_text(encoding="utf-8"))
        # tokens by the step, as the curve counts them (a history resumed by an older engine between two logs
        # counts from the earlier log)
        tokens, wall = state["step"] * recipe_tokens_per_step(recipe), (history.get("wall_s") or [0])[-1]
        pair = "controlled" if run != "ltr-all" else "paper"
        name = EXPORT_NAMES[run]
        models[name] = {"class": "BertLMHeadModel" if run != "mlm" else "BertForMaskedLM", "run": run,
                        "step": state.get("step"), "tokens": tokens, "training_hours": round(wall / 3600, 2),
                        "tokens_per_s": round(tokens / wall) if wall else None,
                        "heldout_loss": last[pair]["overall"][name],
                        "megabytes": round((assets / name / "model.safetensors").stat().st_size / 1e6, 1)}
    return {"build_command": build.get("command"), "measure_command": measured["curve_export"]["command"],
            "date": measured["curve_export"]["date"], "sittings": build.get("sittings", []),
            "corpus": build.get("corpus"), "landmarks": {k: v for k, v in last["controlled"]["overall"].items()
                                                       if k not in models}, "twins": models}


def stage_build_record(prior: dict, stage: dict, record: dict) -> dict:
    """The shipped ``build.json`` after a stage (``stage``: :func:`build_record` of its runs; ``record``: its
    ``stage.json``): each model's tokens and training hours the sum of the stages', its
    step and speed the stage's, and every stage's commands, sittings and corpus in ``stages`` (the first: the build
    the stages continue)."""
    stages = prior.get("stages") or [{key: prior.get(key) for key in
                                      ("script", "device", "build_command", "measure_command", "date", "sittings",
                                       "corpus")}]
    stages = stages + [{"build_command": record.get("command"), "measure_command": stage["measure_command"],
                        "date": stage["date"], "sittings": record.get("sittings", []),
                        "corpus": record.get("stage"), "from_sha256": record.get("from_sha256")}]
    twins = {}
    for name, model in stage["twins"].items():
        before = prior["twins"][name]
        twins[name] = {**model, "stage_tokens": model["tokens"], "tokens": before["tokens"] + model["tokens"],
                       "training_hours": round(before["training_hours"] + model["training_hours"], 2)}
    return {"date": stage["date"], "stages": stages, "landmarks": prior["landmarks"], "twins": twins}


def _renamed(value, names: dict[str, str] = EXPORT_NAMES):
    """``value`` with every run name (a dict key or a string) replaced by its asset folder's name (or by
    ``names``' other mapping)."""
    if isinstance(value, dict):
        return {names.get(k, k): _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def _swap_in(fresh: Path, target: Path) -> None:
    """Put the finished folder ``fresh`` at ``target``, the folder there before removed only afterwards."""
    old = storage.temp_name(target, "old")
    if target.exists():
        target.rename(old)
    fresh.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The command line; 0 on success."""
    from bertdemo.models.twins import TWINS_DIR

    parser = argparse.ArgumentParser(prog="python -m bertdemo.tools.measure_twin_pairs",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="runs/twin-pairs")
    parser.add_argument("--assets", default=str(TWINS_DIR))
    parser.add_argument("--table5", nargs="*", choices=list(RUNS), default=None,
                        help="fine-tune the final models (3 seeds, 2 tasks), every run or the runs named; cells "
                             "measured before are kept")
    parser.add_argument("--table5-steps", type=int, default=120)
    parser.add_argument("--cells-at", type=int, default=0,
                        help="only run the --table5 cells at this step of the runs named (no curve, no export)")
    parser.add_argument("--export", action="store_true", help="write the shipped pairs into --assets")
    parser.add_argument("--table5-shipped", action="store_true",
                        help="only fine-tune the models in --assets (a pair built elsewhere, e.g. on a GPU) and write "
                             "their table5.json there; the cells kept in --work")
    parser.add_argument("--table5-along", action="store_true",
                        help="only add to --assets' table5.json the Table 5 of every checkpoint whose cells are all kept "
                             "in --work (measure them with --cells-at STEP)")
    parser.add_argument("--text-start-shipped", action="store_true",
                        help="only ask the models in --assets as their training showed a text's start ([CLS] [SEP] "
                             "sentence [SEP]) beside as the page asks, and write it into their curve.json")
    parser.add_argument("--stage", action="store_true",
                        help="--work is a stage of bertdemo.tools.continue_twins: its checkpoints continue the shipped "
                             "curve (the same held-out words; tokens counted on from the shipped twins') and its export "
                             "adds the stage to the shipped record")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    work = Path(args.work)
    path = work / "measure.json"
    measured = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"steps": {}}
    runs = {run: step_folders(work / run) for run in RUNS}
    if args.cells_at:  # only Table 5 cells of the runs named, at their checkpoint of that step (while others train)
        settings = cell_settings(args.table5_steps)
        table5_cells({run: runs[run][args.cells_at] for run in args.table5 or RUNS}, args.cells_at, settings, SEEDS,
                     work / "table5_cells.json", log)
        return 0
    if args.table5_shipped:
        return table5_of_shipped(Path(args.assets), work, args, argv, log)
    if args.text_start_shipped:
        add_text_start(Path(args.assets), log)
        return 0
    if args.table5_along:
        return add_table5_along(Path(args.assets), work / "table5_cells.json", cell_settings(args.table5_steps), log)
    kept = sorted(set.intersection(*(set(found) for found in runs.values())))
    from bertdemo.pretrain.checkpoints import ended_schedule

    ends = {step for step in kept if ended_schedule(runs["mlm"][step])}
    common = log_spaced(kept, ends)
    if not common:
        log("error: no step kept by all three runs yet")
        return 2
    stage = json.loads((work / "stage.json").read_text(encoding="utf-8")) if args.stage else None
    prior, stages, prior_build = prior_curve(work) if stage else ([], [], {})
    offset = int(prior[-1]["tokens"]) if prior else 0  # a stage's tokens come after the shipped twins'
    recipe = json.loads((runs["mlm"][common[0]] / "train_config.json").read_text(encoding="utf-8"))
    block_starts = recipe["data"].get("block_starts", "anywhere")
    heldout, counts = stage_heldout_data(work, runs["mlm"][common[0]]) if stage else heldout_data(work, block_starts)
    tokens_per_step = recipe_tokens_per_step(recipe)  # every run's recipe
    for step in common:
        if str(step) in measured["steps"]:
            continue
        began = time.monotonic()
        record = measure_step({run: found[step] for run, found in runs.items()}, heldout, counts, block_starts)
        measured["steps"][str(step)] = {"step": step, "tokens": offset + step * tokens_per_step,
                                        **({"stage": len(stages)} if stage else {}), **record}
        storage.write_text(path, json.dumps(measured, indent=1) + "\n")
        c = record["controlled"]["overall"]
        p = record["paper"]["overall"]
        log(f"step {step}: mlm {c['mlm']:.3f} · ltr-masked {c['ltr-masked']:.3f} · ltr-all {p['ltr-all']:.3f} "
            f"(both neighbours {c['both neighbours']:.3f}) in {time.monotonic() - began:.0f} s")
    curve = prior + [measured["steps"][str(s)] for s in common]
    last = common[-1]
    finals = {run: found[last] for run, found in runs.items()}
    if args.table5 is not None:
        settings = cell_settings(args.table5_steps)
        which = args.table5 or list(RUNS)
        began, load = time.monotonic(), os.getloadavg()[0]
        cells = table5_cells({run: finals[run] for run in which}, last, settings, SEEDS, work / "table5_cells.json", log)
        if all_cells(cells, last):
            measured["table5"] = {**table5_record(cells, last, settings, args.threads, load, argv),
                                  "along": table5_along(cells, tokens_per_step, settings, offset)}
            storage.write_text(path, json.dumps(measured, indent=1) + "\n")
        log(f"table 5: {time.monotonic() - began:.0f} s this sitting")
    measured["curve_export"] = _renamed({  # the shipped record names each model by its asset folder
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "tokens_per_step": tokens_per_step,
        "command": "python -m bertdemo.tools.measure_twin_pairs " + " ".join(argv if argv is not None else sys.argv[1:]),
        "pairs": {pair: list(models) for pair, models in PAIRS.items()},
        "crossover": {pair: crossover(curve, pair) for pair in PAIRS},
        "schedule_restarts": (prior_restarts(work) if stage else []) + schedule_restarts(common, ends, offset,
                                                                                      tokens_per_step),
        **({"stages": stages + [{"stage": len(stages), "from_tokens": offset, "tokens_per_step": tokens_per_step,
                                 "corpus": stage["stage"], "command": stage.get("command")}]} if stage else {}),
        "checkpoints": curve})
    storage.write_text(path, json.dumps(measured, indent=1) + "\n")
    for pair in PAIRS:
        log(f"{pair}: {measured['curve_export']['crossover'][pair]}")
    if args.export:
        export(finals, heldout, counts, measured, Path(args.assets), log, prior_build, stage,
               work / "prior" / "heldout.npz" if stage else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

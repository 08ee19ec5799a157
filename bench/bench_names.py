"""Find the names: word-level F1 of NAME against wall time for each start (the embedded pretrained model,
random weights of the same shape), over seeds, beside the landmarks (every word O; per-word memory).

    python bench/bench_names.py                               # 3 seeds x {embedded, random}, 180 s each, CPU
    python bench/bench_names.py --device cuda --budget 60     # the same on a GPU
    python bench/bench_names.py --seeds 0 --epochs 1,2,3      # epochs chosen on validation, test reported

Prints one line per run: validation F1 at 60 / 120 / 180 s, the final validation and test F1 (word and
entity level), and a summary: test F1 per start (median and range over seeds), the gap (pretrained - random)
per seed, and the per-word-memory landmark on the same test split. With several ``--epochs``, each start and
seed runs once per value and the one with the best validation F1 is the one reported on test.
``--out`` writes every run's history as JSON lines. A machine without the app's data packages runs it from a
task exported here (``--export-task task.json``, then ``--task task.json``) and a model folder (``--model-dir``;
``--assemble DIR`` builds one from ``bertdemo/assets/embedded_mlm`` and a tokenizer folder, as in
``bench_finetune.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_finetune import assemble

from bertdemo.corpus.names import TaggedSentence, load_name_splits
from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.token_engine import WordTask, run_token_finetune, task_from_name_splits
from bertdemo.runs.control import RunControl

MARKS = (60, 120, 180)


def load_task(path: str | None, cache: Path) -> WordTask:
    if path:
        data = json.loads(Path(path).read_text())
        return WordTask(data["labels"], *([TaggedSentence(t, tuple(w), tuple(g)) for t, w, g in data[name]]
                                          for name in ("train", "validation", "test")))
    return task_from_name_splits(load_name_splits(cache))


def at(snap, seconds: float) -> float:
    """The last validation F1 measured by ``seconds`` from Start."""
    seen = [f for t, f in zip(snap.eval_wall_s, snap.val_macro_f1) if t <= seconds]
    return seen[-1] if seen else float("nan")


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} (range {min(values):.3f}–{max(values):.3f}, n={len(values)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inits", default="embedded,random")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--budget", type=float, default=FinetuneConfig.time_budget_s)
    ap.add_argument("--lr", type=float, default=FinetuneConfig.learning_rate)
    ap.add_argument("--batch", type=int, default=FinetuneConfig.batch_size)
    ap.add_argument("--epochs", default=str(FinetuneConfig.epochs), help="one value, or several chosen on validation")
    ap.add_argument("--eval-every", type=int, default=FinetuneConfig.eval_every)
    ap.add_argument("--eval-examples", type=int, default=FinetuneConfig.eval_examples)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--task")
    ap.add_argument("--export-task")
    ap.add_argument("--model-dir", default="")
    ap.add_argument("--assemble", default="", help="a tokenizer folder: build --model-dir from the repo's assets")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "bert-explorer"))
    ap.add_argument("--out")
    args = ap.parse_args()
    task = load_task(args.task, Path(args.cache))
    if args.export_task:
        Path(args.export_task).write_text(json.dumps({"labels": task.labels, **{
            name: [[s.title, s.words, s.tags] for s in getattr(task, name)] for name in ("train", "validation", "test")}}))
        print(f"task written: {len(task.train)} train, {len(task.validation)} validation, {len(task.test)} test sentences")
        return
    if args.assemble:
        assemble(args.assemble, Path(args.model_dir))
    seeds = [int(s) for s in args.seeds.split(",")]
    inits = args.inits.split(",")
    chosen: dict[tuple[str, int], object] = {}
    memory = None
    for seed in seeds:
        for init in inits:
            for epochs in [float(e) for e in args.epochs.split(",")]:
                cfg = FinetuneConfig(init=init, task="names", init_path=args.model_dir if init in ("embedded", "random")
                                     else init, learning_rate=args.lr, batch_size=args.batch, epochs=epochs,
                                     time_budget_s=args.budget, eval_every=args.eval_every, seed=seed,
                                     eval_examples=args.eval_examples,
                                     device=args.device, num_threads=args.threads)
                metrics = FinetuneMetrics()
                start = time.perf_counter()
                status = run_token_finetune(cfg, task, metrics, RunControl(), checkpoint_dir=None)
                snap = metrics.snapshot()
                memory = snap.names["landmarks"]["word_memory"]["test"]["f1"]
                marks = " ".join(f"{m}s {at(snap, m):.3f}" for m in MARKS)
                print(f"{init:9s} seed {seed} epochs {epochs:g} lr {args.lr:g} batch {args.batch} {args.device}: "
                      f"{status}, step {snap.step} (kept: step {snap.names['chosen']['step']}), "
                      f"{time.perf_counter() - start:.0f} s wall; val F1 at {marks}; final "
                      f"val F1 {snap.val_macro_f1_all:.3f}, test F1 {snap.test_macro_f1:.3f} (entity "
                      f"{snap.names['test_entity']['f1']:.3f}); per-word memory test F1 {memory:.3f}", flush=True)
                best = chosen.get((init, seed))
                if best is None or snap.val_macro_f1_all > best.val_macro_f1_all:
                    chosen[(init, seed)] = snap
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps({"init": init, "seed": seed, "epochs": epochs, "lr": args.lr,
                                             "batch": args.batch, "device": args.device, "steps": snap.step,
                                             "kept_step": snap.names["chosen"]["step"],
                                             "eval_wall_s": snap.eval_wall_s, "val_f1": snap.val_macro_f1,
                                             "val_f1_all": snap.val_macro_f1_all, "test_f1": snap.test_macro_f1,
                                             "test_entity_f1": snap.names["test_entity"]["f1"],
                                             "word_memory_test_f1": memory}) + "\n")
    for init in inits:
        print(f"{init}: test word-level F1 {spread([chosen[(init, s)].test_macro_f1 for s in seeds])}; entity-level "
              f"{spread([chosen[(init, s)].names['test_entity']['f1'] for s in seeds])}")
    print(f"per-word memory: test word-level F1 {memory:.3f}; every word O: 0.000")
    if "embedded" in inits and "random" in inits:
        gaps = [chosen[("embedded", s)].test_macro_f1 - chosen[("random", s)].test_macro_f1 for s in seeds]
        print(f"gap pretrained - random (test F1): {', '.join(f'{g:+.3f}' for g in gaps)}; "
              f"median {statistics.median(gaps):+.3f}")


if __name__ == "__main__":
    main()

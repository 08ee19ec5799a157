"""Fine-tuning on the topic task: validation accuracy against wall time for each start (the embedded
pretrained model, random weights of the same shape, optionally a pretraining run's checkpoint), over seeds.

    python bench/bench_finetune.py                              # 3 seeds x {embedded, random}, 180 s each, CPU
    python bench/bench_finetune.py --device cuda --budget 60    # the same on a GPU
    python bench/bench_finetune.py --lr 2e-4 --batch 16 --seeds 0 --inits embedded

Prints one line per evaluation and a summary: the accuracy each start reached at 60 / 120 / 180 s and at
the end, and the gap (pretrained − random) per seed. ``--out`` writes every run's history as JSON lines.
A machine without the app's data packages (a GPU machine with no network) runs it from a task exported
here (``--export-task task.json``, then ``--task task.json``) and a model folder (``--model-dir``;
``--assemble DIR`` builds one from ``bertdemo/assets/embedded_mlm`` and a tokenizer folder).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import TopicTask, run_finetune
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.runs.control import RunControl

MARKS = (60, 120, 180)


def load_task(path: str | None, cache: Path) -> TopicTask:
    if path:
        return TopicTask(**json.loads(Path(path).read_text()))
    from bertdemo.corpus.topics import load_topic_splits
    from bertdemo.finetune.engine import task_from_splits

    return task_from_splits(load_topic_splits(cache))


def assemble(tokenizer_dir: str, out: Path) -> Path:
    """A model folder of the embedded masked-LM from the repo's assets and a tokenizer folder."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from bertdemo.models.embedded import MLM_ASSETS_DIR, TRAINED_FILE

    model = BertForMaskedLM(BertConfig.from_pretrained(MLM_ASSETS_DIR))
    missing = model.load_state_dict({k: v.float() for k, v in load_file(MLM_ASSETS_DIR / TRAINED_FILE).items()},
                                    strict=False).missing_keys
    assert all("decoder" in k for k in missing), missing
    model.tie_weights()
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out)
    return out


def at(snap, seconds: float) -> float:
    """The last validation accuracy measured by ``seconds`` from Start."""
    seen = [a for t, a in zip(snap.eval_wall_s, snap.val_accuracy) if t <= seconds]
    return seen[-1] if seen else float("nan")


def write_reference(path: Path, results: dict, args) -> None:
    """The runs as reference curves the Fine-tune tab draws beside a live run (bertdemo.finetune.reference):
    when, where, which seeds and settings, and each run's curve and final scores."""
    import datetime
    import platform
    import subprocess

    import torch

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    threads = args.threads or torch.get_num_threads()
    machine = args.machine or f"{platform.processor() or platform.machine()}, {threads} CPU threads"
    cfg = FinetuneConfig(learning_rate=args.lr, batch_size=args.batch, epochs=args.epochs,
                         time_budget_s=args.budget, eval_every=args.eval_every)
    data = {"measured": datetime.date.today().isoformat(), "commit": commit, "machine": machine,
            "device": args.device, "clock": "CPU seconds / threads" if args.cpu_clock else "wall seconds",
            "command": "python bench/bench_finetune.py " + " ".join(sys.argv[1:]),
            "settings": {k: v for k, v in cfg.flat().items() if k in ("learning_rate", "batch_size", "epochs",
                                                                       "time_budget_s", "eval_every", "eval_examples",
                                                                       "max_seq_len", "warmup_fraction")},
            "source": "this command's output",
            "runs": [{"init": init, "seed": seed, "steps": snap.step, "total_steps": snap.total_steps,
                      "elapsed_s": round(snap.elapsed_s, 1), "eval_steps": snap.eval_steps,
                      "eval_wall_s": [round(t, 1) for t in snap.eval_wall_s],
                      "val_accuracy": [round(a, 4) for a in snap.val_accuracy],
                      "val_accuracy_end": round(snap.val_accuracy[-1], 4), "test_accuracy": round(snap.test_accuracy, 4)}
                     for (init, seed), snap in sorted(results.items())]}
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"reference written: {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inits", default="embedded,random")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--budget", type=float, default=180.0)
    ap.add_argument("--lr", type=float, default=FinetuneConfig.learning_rate)
    ap.add_argument("--batch", type=int, default=FinetuneConfig.batch_size)
    ap.add_argument("--epochs", type=float, default=FinetuneConfig.epochs)
    ap.add_argument("--eval-every", type=int, default=FinetuneConfig.eval_every)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--task")
    ap.add_argument("--export-task")
    ap.add_argument("--model-dir", default="")
    ap.add_argument("--assemble", default="", help="a tokenizer folder: build --model-dir from the repo's assets")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "bert-explorer"))
    ap.add_argument("--out")
    ap.add_argument("--reference", default="", help="write the runs as the tab's reference curves (a JSON file, "
                                                      "e.g. bertdemo/finetune/reference_runs.json)")
    ap.add_argument("--machine", default="", help="how the reference names the machine it was measured on")
    ap.add_argument("--cpu-clock", action="store_true",
                    help="count the budget in this process's CPU seconds / --threads (how a quiet machine with that "
                         "many cores counts it), not wall seconds: a measurement a busy machine does not distort")
    args = ap.parse_args()
    task = load_task(args.task, Path(args.cache))
    if args.export_task:
        Path(args.export_task).write_text(json.dumps(task.__dict__))
        print(f"task written: {len(task.train_texts)} train, {len(task.val_texts)} validation")
        return
    if args.assemble:
        assemble(args.assemble, Path(args.model_dir))
    results: dict[tuple[str, int], object] = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        for init in args.inits.split(","):
            cfg = FinetuneConfig(init=init, init_path=args.model_dir if init in ("embedded", "random") else init,
                                 learning_rate=args.lr, batch_size=args.batch, epochs=args.epochs,
                                 time_budget_s=args.budget, eval_every=args.eval_every, seed=seed,
                                 device=args.device, num_threads=args.threads)
            metrics = FinetuneMetrics()
            start = time.perf_counter()
            clock = (lambda: time.process_time() / max(1, args.threads)) if args.cpu_clock else time.monotonic
            status = run_finetune(cfg, task, metrics, RunControl(), checkpoint_dir=None, clock=clock)
            snap = metrics.snapshot()
            results[(init, seed)] = snap
            marks = " ".join(f"{m}s {at(snap, m):.3f}" for m in MARKS)
            print(f"{init:9s} seed {seed} lr {args.lr:g} batch {args.batch} {args.device}: {status}, step {snap.step}, "
                  f"{time.perf_counter() - start:.0f} s wall; val acc at {marks}; final {snap.val_accuracy[-1]:.3f}, "
                  f"test {snap.test_accuracy:.3f}; {snap.message}", flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps({"init": init, "seed": seed, "lr": args.lr, "batch": args.batch,
                                         "device": args.device, "eval_wall_s": snap.eval_wall_s,
                                         "val_accuracy": snap.val_accuracy, "test_accuracy": snap.test_accuracy,
                                         "steps": snap.step}) + "\n")
    if args.reference:
        write_reference(Path(args.reference), results, args)
    inits = args.inits.split(",")
    if "embedded" in inits and "random" in inits:
        gaps = [results[("embedded", s)].val_accuracy[-1] - results[("random", s)].val_accuracy[-1]
                for s in [int(s) for s in args.seeds.split(",")]]
        print(f"gap pretrained - random (final validation accuracy): {', '.join(f'{g:+.3f}' for g in gaps)}; "
              f"median {statistics.median(gaps):+.3f}")


if __name__ == "__main__":
    main()

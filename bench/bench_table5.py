"""BERT's Table 5 in miniature: the shipped twins (masked LM, left-to-right LM) fine-tuned on the sentence-level
topic task and the token-level "Find the names" task, over seeds, beside the paper's rows.

    python bench/bench_table5.py --threads 1                                # 2 twins x 2 tasks x 3 seeds, CPU
    python bench/bench_table5.py --steps 400 --eval-every 50 --out bertdemo/assets/twins/table5.json

Every cell is :func:`bertdemo.finetune.twin_finetune.finetune_twin`: the twin's shipped weights with a new head
drawn from the seed, ``--steps`` steps of batch ``--batch-size`` (the same batches in the same order for both
twins of a seed), the validation split scored every ``--eval-every`` steps and at the end, the best weights
scored on test (accuracy for topic, word-level F1 of NAME for names). The left-to-right twin keeps its causal
mask at fine-tuning; its sentence head reads the last piece. Prints one line per cell and the table (mean ± sd
over seeds, the per-seed differences, whether each gap is within seed noise); ``--out`` writes it as the JSON
the page shows (date, machine, settings, per-seed scores, mean, spread).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertdemo.finetune.table5 import SEEDS, TASKS, CellSettings, table_from_scores, write_table
from bertdemo.models.twins import TWIN_KINDS


def machine(threads: int) -> str:
    """The machine in words (the load average is added by the caller: it changes during the bench)."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, {threads} torch thread(s), no GPU"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    ap.add_argument("--steps", type=int, default=CellSettings.steps)
    ap.add_argument("--eval-every", type=int, default=CellSettings.eval_every)
    ap.add_argument("--batch-size", type=int, default=CellSettings.batch_size)
    ap.add_argument("--lr", type=float, default=CellSettings.learning_rate)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "bert-explorer"))
    ap.add_argument("--out", default="", help="write the table as JSON (the app ships bertdemo/assets/twins/table5.json)")
    args = ap.parse_args(argv)

    import torch

    from bertdemo.finetune.service import default_names_task, default_topic_task
    from bertdemo.finetune.twin_finetune import finetune_twin, mean_seconds, per_seed

    torch.set_num_threads(args.threads)
    settings = CellSettings(steps=args.steps, batch_size=args.batch_size, learning_rate=args.lr,
                            eval_every=args.eval_every).validate()
    loads = [os.getloadavg()[0]]
    began = time.monotonic()
    results = []
    for task in args.tasks:
        data = (default_topic_task if task == "topic" else default_names_task)(args.cache_dir)
        for seed in args.seeds:
            for twin in TWIN_KINDS:
                r = finetune_twin(twin, task, seed, data, settings)
                loads.append(os.getloadavg()[0])
                results.append(r)
                print(f"{task:>6} {twin} seed {seed}: test {r.test_score:.4f} (validation {r.val_score:.4f} at step "
                      f"{r.chosen_step} of {r.steps}) {r.seconds:.0f} s", flush=True)
    table = table_from_scores(per_seed(results), args.seeds)
    print(f"\n# Table 5 in miniature, {settings.steps} steps of {settings.batch_size}, seeds {args.seeds}")
    for pair, verdicts in table["comparisons"].items():
        for task in args.tasks:
            print(f"{pair}: " + verdicts[task]["sentence"].replace("**", ""))
    meta = {"date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
            "machine": f"{machine(args.threads)}, shared: load average {min(loads):.1f}–{max(loads):.1f} during the bench",
            "command": "python bench/bench_table5.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "torch": torch.__version__, "settings": settings.flat(), "wall_s": round(time.monotonic() - began, 1),
            "mean_cell_s": mean_seconds(results),
            "chosen": {f"{r.task}/{r.twin}/{r.seed}": {"step": r.chosen_step, "validation": r.val_score}
                       for r in results}}
    if args.out:
        write_table(args.out, table, meta)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

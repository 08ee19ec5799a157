"""The 20-sentence sentiment example fine-tuned and cross-validated with the default settings, as the Fine-tune
tab's own-data section runs it (embedded model, or random weights of the same shape with ``--init random``):
wall time, the process's CPU time, the machine's load, and the scores beside the landmarks.

    python bench/bench_own_data.py --threads 2 [--init random] [--seed 0] [--device cpu|cuda] [--budget 0] [--words]

The target: within 60 s on 2 cores. On a shared machine the wall time carries the other processes' load;
the CPU time (user + system, all threads) is the work itself: on 2 free cores the wall time is about half of it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--init", default="embedded", choices=("embedded", "random"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--budget", type=float, default=None,
                        help="the time budget in seconds (0: none, every planned step; default: the task's)")
    parser.add_argument("--words", action="store_true", help="the 20-sentence word-tag example instead")
    args = parser.parse_args()

    import torch

    from bertdemo.finetune.config import config_from_request
    from bertdemo.finetune.metrics import FinetuneMetrics
    from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE, parse_lines
    from bertdemo.finetune.own_eval import cross_validate
    from bertdemo.finetune.own_run import OWN_DEFAULTS
    from bertdemo.runs.control import RunControl

    torch.set_num_threads(args.threads)
    budget = {} if args.budget is None else {"time_budget_s": args.budget}
    cfg = config_from_request({**OWN_DEFAULTS, "init": args.init, "seed": args.seed, **budget}).replace(device=args.device)
    if args.words:
        from bertdemo.finetune.own_data import WORDS_EXAMPLE, parse_words

        data = parse_words(WORDS_EXAMPLE)
    else:
        data = parse_lines(SENTIMENT_EXAMPLE)
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        status, result = cross_validate(cfg, data, FinetuneMetrics(), RunControl(), Path(tmp) / "model")
    wall = time.monotonic() - began
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    print(json.dumps({"status": status, "data": data.source, "init": args.init, "seed": args.seed, "threads": args.threads,
                      "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "steps": result["steps"],
                      "load_before": load_before, "load_after": os.getloadavg(),
                      "summary": result["summary"], "kept": result.get("kept"), "comparisons": result["comparisons"],
                      "settings": {k: cfg.flat()[k] for k in ("batch_size", "epochs", "learning_rate", "time_budget_s")}},
                     indent=1))


if __name__ == "__main__":
    main()

"""What one own-data fine-tune spends its time on, before and after, measured alternately: a training step
(forward, backward, clipping, AdamW) of the embedded model on a batch of the 20-sentence sentiment example with
the unfused AdamW update (before) and the fused one (after), and a fresh model for a fold by building it from
disk (before: once a fold) or by copying the one built (after). CPU time of the process (all threads) and wall
time, median and spread (min–max) over the rounds.

    python bench/bench_own_step.py --threads 1 --rounds 5

A machine shared with other work slows the wall time; the CPU time is the work itself.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import torch

    from bertdemo.finetune.config import config_from_request
    from bertdemo.finetune.engine import batch_of, build_model, encode
    from bertdemo.finetune.own_data import SENTIMENT_EXAMPLE, parse_lines
    from bertdemo.finetune.own_run import OWN_DEFAULTS

    torch.set_num_threads(args.threads)
    cfg = config_from_request(dict(OWN_DEFAULTS))
    data = parse_lines(SENTIMENT_EXAMPLE)
    built = build_model(cfg, data.names)
    ids = encode(built.tokenizer, data.texts, cfg.max_seq_len)
    y = torch.tensor(data.labels)
    batch = batch_of(ids[:16], 0, torch.device("cpu"))

    def timed(work) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        work()
        return time.process_time() - cpu, time.perf_counter() - wall

    models = {fused: copy.deepcopy(built.model).train() for fused in (False, True)}
    optims = {fused: torch.optim.AdamW(m.parameters(), lr=2e-4, weight_decay=0.01, fused=fused)
              for fused, m in models.items()}

    def step(fused: bool) -> None:
        model = models[fused]
        loss = model(**batch, labels=y[:16]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optims[fused].step()
        optims[fused].zero_grad(set_to_none=True)

    for fused in (False, True):  # warm-up: the optimiser's state allocated
        step(fused)
    rows: dict[str, list[tuple[float, float]]] = {"step, unfused AdamW (before)": [], "step, fused AdamW (after)": [],
                                                   "a fold's model: built from disk (before)": [],
                                                   "a fold's model: copied (after)": []}
    for _ in range(args.rounds):
        rows["step, unfused AdamW (before)"].append(timed(lambda: step(False)))
        rows["step, fused AdamW (after)"].append(timed(lambda: step(True)))
        rows["a fold's model: built from disk (before)"].append(timed(lambda: build_model(cfg, data.names)))
        rows["a fold's model: copied (after)"].append(timed(lambda: copy.deepcopy(built.model)))

    def summary(values: list[float]) -> dict:
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}

    print(json.dumps({"threads": args.threads, "rounds": args.rounds, "load": os.getloadavg(),
                      **{name: {"cpu_s": summary([c for c, _ in v]), "wall_s": summary([w for _, w in v])}
                         for name, v in rows.items()}}, indent=1))


if __name__ == "__main__":
    main()

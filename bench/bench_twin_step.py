"""Where a twin's training step goes: tokens per second of one step (forward, backward, AdamW) of each objective at
two vocabulary sizes, on one CPU thread — the measurement behind the shipped twins' recipe (an 8,192-piece
vocabulary learned on their corpus instead of bert-base-uncased's 30,522).

    python bench/bench_twin_step.py                      # bert-tiny, batch 16 x 128, 1 thread, 5 rounds
    python bench/bench_twin_step.py --rounds 7 --steps 8

Each configuration is the engine's own objective (:class:`bertdemo.pretrain.model.PretrainObjective`, fused
projection and cross-entropy, the masked LM's last layer only at its masked positions) on batches from
:class:`~bertdemo.pretrain.model.BatchMaker`: ``mlm`` (15 % of the words, both sides read), ``ltr-masked`` (the same
words from the words before them) and ``ltr-all`` (every next word). The configurations take turns, round by round,
so a busy machine slows all of them alike; the report gives each one's median tokens/s and spread over the rounds,
and the ratios to the masked LM at 30,522 pieces measured in the same rounds. fp32 weights; bf16 autocast where the
engine uses it (``precision=auto``: CPUs with native bf16), said in the header.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIGS = {"mlm": {"objective": "mlm"}, "ltr-masked": {"objective": "ltr", "ltr_targets": "masked"},
           "ltr-all": {"objective": "ltr"}}


class Vocabulary:
    """A stand-in tokenizer of ``size`` entries with BERT's special ids (what the batch maker and model read)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pad_token_id, self.cls_token_id, self.sep_token_id, self.mask_token_id = 0, 2, 3, 4
        self.all_special_ids = [0, 1, 2, 3, 4]

    def __len__(self) -> int:
        return self.size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, nargs="+", default=[30522, 8423])
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=6, help="timed steps per configuration and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)

    import torch

    from bertdemo.pretrain.config import TrainConfig
    from bertdemo.pretrain.model import BatchMaker, PretrainObjective, build_model
    from bertdemo.pretrain.trainer import use_bf16

    torch.set_num_threads(args.threads)
    device = torch.device("cpu")
    bf16 = use_bf16(device, "auto")
    runs = {}
    for size in args.vocab:
        for name, setting in CONFIGS.items():
            cfg = TrainConfig.from_flat(**setting, batch_size=args.batch_size, seq_len=args.seq_len, locality_bias=0.0)
            vocab = Vocabulary(size)
            torch.manual_seed(0)
            model = build_model(cfg, vocab).train()
            objective = PretrainObjective(model)
            runs[(size, name)] = (objective, BatchMaker(cfg, vocab, device),
                                  torch.optim.AdamW(model.parameters(), lr=1e-3), [])
    generator = torch.Generator().manual_seed(0)
    blocks = torch.randint(5, min(args.vocab), (args.batch_size, args.seq_len))
    blocks[:, 0] = 2

    def step(objective, make, optimizer) -> None:
        batch = make(blocks, generator)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = objective(**batch)["loss"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for objective, make, optimizer, _ in runs.values():  # warm-up: first-call allocations
        step(objective, make, optimizer)
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for objective, make, optimizer, rates in runs.values():
            began = time.perf_counter()
            for _ in range(args.steps):
                step(objective, make, optimizer)
            rates.append(args.steps * args.batch_size * args.seq_len / (time.perf_counter() - began))
        loads.append(os.getloadavg()[0])
    print(f"# bert-tiny, batch {args.batch_size} x {args.seq_len}, {args.threads} thread(s), "
          f"{'bf16 autocast' if bf16 else 'fp32'}, {args.rounds} rounds of {args.steps} steps, torch "
          f"{torch.__version__}, load average {min(loads):.1f}-{max(loads):.1f}")
    base = statistics.median(runs[(args.vocab[0], "mlm")][3])
    print("| vocabulary | objective | tokens/s (median) | spread (min-max) | x the masked LM at "
          f"{args.vocab[0]:,} |\n|---|---|---|---|---|")
    for (size, name), (*_, rates) in runs.items():
        median = statistics.median(rates)
        print(f"| {size:,} | {name} | {median:,.0f} | {min(rates):,.0f}-{max(rates):,.0f} | {median / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

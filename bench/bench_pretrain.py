"""Pretraining throughput: our loop vs the reference (HF `Trainer` + `DataCollatorForLanguageModeling`
+ `BertForMaskedLM`) at the same model config, precision, batch size, sequence length and steps,
with the held-out loss of both after those same tokens (nothing traded for the speed).

    python bench/bench_pretrain.py --threads 2 --steps 30 --rounds 2               # fp32 for both on CPU
    python bench/bench_pretrain.py --device cuda --batch-size 256 --steps 200 --precision bf16

Each side runs in its own process, alternating ours / reference / reference / ours ... so that a
machine shared with other work slows both alike. Tokens/s is taken from every step after the first
3 of each run (evaluation and checkpointing excluded): the median over all rounds, and the
25th-75th percentile spread; also per CPU-second of the process (all its threads), which a
machine shared with other work disturbs much less than wall time. The held-out masked-LM loss
of both is measured with the same function, on the same held-out blocks with the same masks.
Prints its figures and, last, the ratio.

The reference needs `accelerate` (HF `Trainer` requires it): `pip install accelerate`. It is a
dependency of this benchmark only, not of the app.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SKIP = 3  # warm-up steps left out of the rate of each run


def make_config(args: argparse.Namespace):
    from bertdemo.pretrain.config import TrainConfig

    return TrainConfig.from_flat(
        preset=args.preset, corpus=args.corpus, seq_len=args.seq_len, batch_size=args.batch_size, steps=args.steps,
        warmup_steps=5, eval_every=10**9, eval_batches=args.eval_batches, checkpoint_every=0, device=args.device,
        num_threads=args.threads, compile=args.compile, cache_dir=args.cache_dir, precision=args.precision,
        dropout=args.dropout)


def heldout_loss(model, cfg, device, bf16: bool) -> float:
    """Held-out masked-LM loss of a BertForMaskedLM: the run's own evaluation (fixed held-out masks)."""
    import torch
    from transformers import AutoTokenizer

    from bertdemo.models.embedded import tokenizer_dir
    from bertdemo.pretrain.data import prepare_blocks
    from bertdemo.pretrain.evaluation import evaluate_heldout
    from bertdemo.pretrain.model import BatchMaker, PretrainObjective

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    blocks = prepare_blocks(cfg.data.corpus, tokenizer, cfg.data.seq_len, cfg.data.cache_dir,
                            cfg.data.max_corpus_tokens, cfg.data.heldout_fraction)
    heldout = torch.from_numpy(blocks.heldout.astype("int64")).to(device)
    objective = PretrainObjective(model.to(device))
    return evaluate_heldout(objective, heldout, BatchMaker(cfg, tokenizer, device), cfg, device, bf16)["loss"]


def run_ours(cfg, out_dir: Path) -> dict:
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training

    stamps: list[tuple[float, float]] = []
    metrics = MetricsBuffer()
    status = run_training(cfg, metrics=metrics, run_folder=out_dir / "ours",
                          on_step=lambda step: stamps.append((time.perf_counter(), time.process_time())))
    snap = metrics.snapshot()
    if status != "finished":
        raise RuntimeError(snap.message)
    # the run's own final evaluation: evaluate_heldout with the same blocks and masks as heldout_loss
    return {"stamps": stamps, "heldout_loss": snap.eval_loss[-1], "precision": "bf16" if "bf16" in snap.message
            else "fp32"}


def run_reference(cfg, out_dir: Path, bf16: bool) -> dict:
    import torch
    from transformers import (
        AutoTokenizer,
        BertForMaskedLM,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    from bertdemo.models.device import resolve_device
    from bertdemo.models.embedded import tokenizer_dir
    from bertdemo.pretrain.config import bert_config
    from bertdemo.pretrain.data import prepare_blocks

    device = resolve_device(cfg.system.device)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    blocks = prepare_blocks(cfg.data.corpus, tokenizer, cfg.data.seq_len, cfg.data.cache_dir,
                            cfg.data.max_corpus_tokens, cfg.data.heldout_fraction)
    n = cfg.optim.batch_size * (cfg.optim.steps + 2)
    train = [{"input_ids": row.astype("int64").tolist()} for row in blocks.train[:n]]
    torch.manual_seed(cfg.system.seed)
    model = BertForMaskedLM(bert_config(cfg, len(tokenizer)))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=cfg.objective.mlm_probability,
                                               mask_replace_prob=cfg.objective.mask_replace_prob,
                                               random_replace_prob=cfg.objective.random_replace_prob)
    stamps: list[tuple[float, float]] = []

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if device.type == "cuda":
                torch.cuda.synchronize()
            stamps.append((time.perf_counter(), time.process_time()))

    args = TrainingArguments(
        output_dir=str(out_dir / "reference"), per_device_train_batch_size=cfg.optim.batch_size,
        max_steps=cfg.optim.steps, learning_rate=cfg.optim.lr, warmup_steps=cfg.optim.warmup_steps,
        weight_decay=cfg.optim.weight_decay, max_grad_norm=cfg.optim.grad_clip, lr_scheduler_type="linear",
        logging_steps=10, save_strategy="no", report_to=[], dataloader_num_workers=0,
        use_cpu=device.type == "cpu", disable_tqdm=True, seed=cfg.system.seed, bf16=bf16,
    )
    Trainer(model=model, args=args, train_dataset=train, data_collator=collator, callbacks=[Stamp()]).train()
    return {"stamps": stamps, "heldout_loss": heldout_loss(model, cfg, device, bf16),
            "precision": "bf16" if bf16 else "fp32"}


def side_main(args: argparse.Namespace) -> None:
    """One side, one run, in this process: prints one JSON line."""
    import torch

    from bertdemo.models.device import resolve_device
    from bertdemo.pretrain.hardware import keep_freed_memory, use_bf16

    torch.set_num_threads(args.threads)
    cfg = make_config(args)
    if args.side == "reference" and args.ref_keep_freed:
        keep_freed_memory()
    with tempfile.TemporaryDirectory() as tmp:
        if args.side == "ours":
            result = run_ours(cfg, Path(tmp))
        else:
            device = resolve_device(args.device)
            result = run_reference(cfg, Path(tmp), use_bf16(device, args.precision))
    stamps = result.pop("stamps")
    result["step_s"] = [b[0] - a[0] for a, b in pairwise(stamps)][SKIP:]
    result["cpu_step_s"] = [b[1] - a[1] for a, b in pairwise(stamps)][SKIP:]  # CPU seconds, all threads
    print("RESULT " + json.dumps(result), flush=True)


def run_side(side: str, argv: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--side", side, *argv], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode or not lines:
        raise RuntimeError(f"{side} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def plot(per_side: dict[str, list[float]], path: Path, title: str) -> None:
    import plotly.graph_objects as go

    from bench.plot import save_png

    fig = go.Figure([go.Box(y=v, name=name, boxpoints="all", jitter=0.4) for name, v in per_side.items()])
    fig.update_layout(title=title, yaxis_title="tokens/s per training step", yaxis_type="log", showlegend=False)
    save_png(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="bert-tiny")
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--dropout", type=float, default=0.1, help="both models (BERT's 0.1)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side, alternating")
    parser.add_argument("--eval-batches", type=int, default=5, help="held-out batches for the final loss")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="CPU threads for both")
    parser.add_argument("--compile", action="store_true", help="torch.compile our loop (CUDA)")
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--precision", default="fp32", choices=["auto", "bf16", "fp32"],
                        help="both sides: fp32, or bf16 autocast for both ('auto': bf16 where the device has it)")
    parser.add_argument("--ref-keep-freed", action="store_true",
                        help="give the reference our allocator setting too (hardware.keep_freed_memory)")
    parser.add_argument("--plot", default="", help="write a PNG of the per-step rates here")
    parser.add_argument("--side", choices=["ours", "reference"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side_main(args)
        return
    argv = [a for a in sys.argv[1:] if not a.startswith("--plot")]
    if args.plot:
        argv = [a for a in argv if a != args.plot]
    import torch

    tokens_per_step = args.batch_size * args.seq_len
    print(f"device={args.device} threads={args.threads} torch={torch.__version__} cpus={os.cpu_count()} "
          f"preset={args.preset} seq_len={args.seq_len} batch={args.batch_size} steps={args.steps} "
          f"rounds={args.rounds} precision={args.precision} dropout={args.dropout} ref_keep_freed={args.ref_keep_freed}",
          flush=True)
    results: dict[str, list[dict]] = {"ours": [], "reference": []}
    for r in range(args.rounds):
        order = ("ours", "reference") if r % 2 == 0 else ("reference", "ours")
        for side in order:
            res = run_side(side, argv)
            results[side].append(res)
            rate = tokens_per_step / statistics.median(res["step_s"])
            print(f"round {r + 1} {side:9s} {rate:10,.0f} tokens/s  held-out loss {res['heldout_loss']:.3f} "
                  f"({res['precision']})", flush=True)
    rates = {side: [tokens_per_step / s for res in runs for s in res["step_s"]] for side, runs in results.items()}
    summary = {}
    for side, runs in results.items():
        med = tokens_per_step / statistics.median([s for res in runs for s in res["step_s"]])
        losses = [res["heldout_loss"] for res in runs]
        summary[side] = med
        print(f"{side:9s}: {med:10,.0f} tokens/s median (p25-p75 {percentile(rates[side], 0.25):,.0f}-"
              f"{percentile(rates[side], 0.75):,.0f}); held-out loss after {args.steps * tokens_per_step:,} tokens: "
              + ", ".join(f"{x:.3f}" for x in losses) + f"  [{runs[0]['precision']}]")
        cpu = tokens_per_step / statistics.median([s for res in runs for s in res["cpu_step_s"]])
        summary[side + " cpu"] = cpu
        print(f"{'':9s}  {cpu:10,.0f} tokens per CPU-second (median; less sensitive to a shared machine)")
    print(f"ratio per CPU-second: {summary['ours cpu'] / summary['reference cpu']:.2f}x")
    if args.plot:
        plot({f"ours ({results['ours'][0]['precision']})": rates["ours"],
              f"HF Trainer ({results['reference'][0]['precision']})": rates["reference"]}, Path(args.plot),
             f"{args.preset}, T={args.seq_len}, B={args.batch_size}, {args.threads} thread(s): "
             f"ratio {summary['ours'] / summary['reference']:.2f}x "
             f"({summary['ours cpu'] / summary['reference cpu']:.2f}x per CPU-second)")
    print(f"ratio:     {summary['ours'] / summary['reference']:10.2f}x")


if __name__ == "__main__":
    main()

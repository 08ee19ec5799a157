"""Pretraining throughput: our loop vs the reference (HF `Trainer` + `DataCollatorForLanguageModeling`
+ `BertForMaskedLM`) at the same model config, batch size and sequence length.

    python bench/bench_pretrain.py --preset bert-tiny --seq-len 128 --batch-size 32 --steps 40
    python bench/bench_pretrain.py --device cuda --batch-size 256 --steps 200   # bf16 for both

Prints tokens/s (median over steps after warmup) of both and their ratio. Both run in this
process with the same number of CPU threads; the reference uses bf16 on CUDA as we do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from bertdemo.models.embedded import tokenizer_dir  # noqa: E402
from bertdemo.pretrain.blocks import prepare_blocks  # noqa: E402
from bertdemo.pretrain.config import TrainConfig, bert_config  # noqa: E402
from bertdemo.models.device import resolve_device  # noqa: E402
from bertdemo.pretrain.hardware import use_bf16  # noqa: E402
from bertdemo.pretrain.loop import run_training  # noqa: E402
from bertdemo.pretrain.metrics import MetricsBuffer  # noqa: E402


def median_tokens_per_s(stamps: list[float], tokens_per_step: int, skip: int) -> float:
    durations = [b - a for a, b in zip(stamps, stamps[1:])][skip:]
    return tokens_per_step / statistics.median(durations)


def bench_ours(cfg: TrainConfig, out_dir: Path) -> float:
    stamps: list[float] = []
    metrics = MetricsBuffer()
    status = run_training(cfg, metrics=metrics, checkpoint_dir=out_dir / "ours",
                          on_step=lambda step: stamps.append(time.perf_counter()))
    if status != "finished":
        raise RuntimeError(metrics.snapshot().message)
    return median_tokens_per_s(stamps, cfg.optim.batch_size * cfg.data.seq_len, skip=3)


def bench_reference(cfg: TrainConfig, out_dir: Path, device: torch.device, ref_bf16: bool) -> float:
    from transformers import (BertForMaskedLM, DataCollatorForLanguageModeling, Trainer, TrainerCallback,
                              TrainingArguments)

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    blocks = prepare_blocks(cfg.data.corpus, tokenizer, cfg.data.seq_len, cfg.data.cache_dir, cfg.data.max_corpus_tokens)
    train = [{"input_ids": row.astype("int64").tolist()} for row in blocks.train[: cfg.optim.batch_size * (cfg.optim.steps + 2)]]
    torch.manual_seed(cfg.system.seed)
    model = BertForMaskedLM(bert_config(cfg, len(tokenizer)))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=cfg.objective.mlm_probability,
                                               mask_replace_prob=cfg.objective.mask_replace_prob,
                                               random_replace_prob=cfg.objective.random_replace_prob)
    stamps: list[float] = []

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if device.type == "cuda":
                torch.cuda.synchronize()
            stamps.append(time.perf_counter())

    args = TrainingArguments(
        output_dir=str(out_dir / "reference"), per_device_train_batch_size=cfg.optim.batch_size, max_steps=cfg.optim.steps,
        learning_rate=cfg.optim.lr, warmup_steps=cfg.optim.warmup_steps, weight_decay=cfg.optim.weight_decay,
        max_grad_norm=cfg.optim.grad_clip, lr_scheduler_type="linear", logging_steps=10, save_strategy="no",
        report_to=[], dataloader_num_workers=0, use_cpu=device.type == "cpu",
        disable_tqdm=True, seed=cfg.system.seed, bf16=ref_bf16 or device.type == "cuda",
    )
    Trainer(model=model, args=args, train_dataset=train, data_collator=collator, callbacks=[Stamp()]).train()
    return median_tokens_per_s(stamps, cfg.optim.batch_size * cfg.data.seq_len, skip=3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="bert-tiny")
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="CPU threads for both")
    parser.add_argument("--compile", action="store_true", help="torch.compile our loop (CUDA)")
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--precision", default="auto", choices=["auto", "bf16", "fp32"], help="our loop")
    parser.add_argument("--ref-bf16", action="store_true", help="also give the reference bf16 autocast on CPU")
    args = parser.parse_args()
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    cfg = TrainConfig(preset=args.preset, corpus=args.corpus, seq_len=args.seq_len, batch_size=args.batch_size,
                      steps=args.steps, warmup_steps=5, eval_every=10**9, eval_batches=1, checkpoint_every=0,
                      device=str(device), num_threads=args.threads, compile=args.compile, cache_dir=args.cache_dir,
                      precision=args.precision)
    ours_bf16 = use_bf16(device, cfg.system.precision)
    ref_bf16 = args.ref_bf16 or device.type == "cuda"
    print(f"device={device} threads={args.threads} torch={torch.__version__} preset={cfg.model.preset} "
          f"seq_len={cfg.data.seq_len} batch={cfg.optim.batch_size} steps={cfg.optim.steps} "
          f"ours={'bf16' if ours_bf16 else 'fp32'} reference={'bf16' if ref_bf16 else 'fp32'}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        ours = bench_ours(cfg, Path(tmp))
        print(f"ours:      {ours:12,.0f} tokens/s", flush=True)
        ref = bench_reference(cfg, Path(tmp), device, ref_bf16)
        print(f"reference: {ref:12,.0f} tokens/s  (HF Trainer + DataCollatorForLanguageModeling + BertForMaskedLM)")
    print(f"ratio:     {ours / ref:12.2f}x")


if __name__ == "__main__":
    main()

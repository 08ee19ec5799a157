"""Masked LM vs left-to-right LM twins: held-out loss by position in the sentence and right-context cloze
ranks against wall time, for several seeds.

    python bench/bench_twins.py --steps 300 --eval-every 100 --seeds 0 1 2            # CPU, a few minutes
    python bench/bench_twins.py --device cuda --steps 3000 --eval-every 500 --batch-size 128 --hidden 256

Each seed builds the twins from the same initial weights (``BertForMaskedLM`` and ``BertLMHeadModel`` with
``is_decoder=True`` have the same parameters; the causal mask is the only difference) and trains them on the
same blocks in the same order (the embedded Wikipedia summaries' training split, 128 tokens), interleaved
step by step: the masked LM on BERT's masking (:func:`bertdemo.pretrain.masking.mask_tokens`, 15 %,
80/10/10), the left-to-right LM on the next token. Each twin's wall time is its own steps' time. At every
evaluation both are measured with the app's own functions (:mod:`bertdemo.explore.twins`): the loss on the
same held-out words by position (the masked LM with that word alone hidden, the left-to-right LM from the
words before it) beside the n-gram landmarks, and the rank of the right word on the right-context cloze set.
Prints one line per evaluation and, last, the final figures as median and range over the seeds; ``--out``
writes every number as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--heldout-blocks", type=int, default=16)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--cache-dir", default="", help="block cache (default: the app's)")
    p.add_argument("--out", default="", help="write every measurement here as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertLMHeadModel

    from bertdemo.explore import twins
    from bertdemo.models.embedded import tokenizer_dir
    from bertdemo.pretrain.data import default_cache_dir, prepare_blocks
    from bertdemo.pretrain.landmarks import count_ngrams
    from bertdemo.pretrain.masking import mask_tokens

    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but no CUDA device is available", file=sys.stderr)
        return 2
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
    blocks = prepare_blocks("wiki", tok, args.seq_len, args.cache_dir or default_cache_dir())
    counts = count_ngrams(blocks.train, len(tok), tok.all_special_ids)
    train = torch.from_numpy(blocks.train.astype("int64"))
    special = torch.tensor(sorted(set(tok.all_special_ids)), device=device)
    cloze = twins.read_right_context_cloze()
    machine = (torch.cuda.get_device_name(device) if device.type == "cuda"
               else f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads")
    print(f"# twins: {args.layers} layers x {args.hidden}, {args.steps} steps of {args.batch_size} x {args.seq_len}, "
          f"seeds {args.seeds}, on {machine}")
    records = []
    for seed in args.seeds:
        shape = dict(vocab_size=len(tok), hidden_size=args.hidden, num_hidden_layers=args.layers,
                     num_attention_heads=args.heads, intermediate_size=4 * args.hidden, max_position_embeddings=512)
        models = {}
        for objective, cls, extra in (("mlm", BertForMaskedLM, {}), ("ltr", BertLMHeadModel, {"is_decoder": True})):
            torch.manual_seed(seed)  # the same initial weights for both
            models[objective] = cls(BertConfig(**shape, **extra)).to(device)
        optims = {k: torch.optim.AdamW(m.parameters(), lr=args.lr, weight_decay=0.01) for k, m in models.items()}
        sched = {k: torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / args.warmup)
                                                       * max(0.0, 1 - s / args.steps)) for k, o in optims.items()}
        order = torch.Generator().manual_seed(seed)
        masking = torch.Generator(device=device).manual_seed(seed)
        perm, cursor = torch.randperm(len(train), generator=order), 0
        wall = {"mlm": 0.0, "ltr": 0.0}
        n_params = sum(p.numel() for p in models["mlm"].parameters())

        def evaluate(step: int, *, seed=seed, models=models, wall=wall, n_params=n_params) -> None:
            pair = [twins.Twin(f"{k} seed {seed}", models[k].eval(), tok) for k in ("mlm", "ltr")]
            held = twins.heldout_by_position(pair[0], pair[1], blocks.heldout, counts, args.heldout_blocks)
            ranks = twins.cloze_ranks(pair, cloze)
            for m in models.values():
                m.train()
            rec = {"seed": seed, "step": step, "tokens": step * args.batch_size * args.seq_len, "params": n_params,
                   "wall_s": dict(wall), "buckets": held.buckets, "counts": held.counts, "questions": held.questions,
                   "loss": {k: held.overall[t.name] for k, t in zip(("mlm", "ltr"), pair)},
                   "by_position": {k: held.loss[t.name] for k, t in zip(("mlm", "ltr"), pair)},
                   "landmarks": {name: held.overall[name] for name in twins.LANDMARK_SERIES.values()},
                   "cloze": {k: ranks.summary(t.name) for k, t in zip(("mlm", "ltr"), pair)}}
            records.append(rec)
            if args.out:  # written at every evaluation: a run cut short keeps what it measured
                Path(args.out).write_text(json.dumps({"args": vars(args), "machine": machine, "records": records}, indent=1))
            print(f"seed {seed} step {step:>6}: loss mlm {rec['loss']['mlm']:.3f} ltr {rec['loss']['ltr']:.3f} | "
                  f"first word mlm {rec['by_position']['mlm'][0]:.2f} ltr {rec['by_position']['ltr'][0]:.2f} | "
                  f"cloze MRR mlm {rec['cloze']['mlm']['mrr']:.3f} ltr {rec['cloze']['ltr']['mrr']:.3f} | "
                  f"wall mlm {wall['mlm']:.1f}s ltr {wall['ltr']:.1f}s", flush=True)

        evaluate(0)
        for step in range(1, args.steps + 1):
            if cursor + args.batch_size > len(perm):
                perm, cursor = torch.randperm(len(train), generator=order), 0
            batch = train[perm[cursor : cursor + args.batch_size]].to(device)
            cursor += args.batch_size
            for objective, model in models.items():
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
                if objective == "mlm":
                    masked = mask_tokens(batch, special, mask_token_id=tok.mask_token_id, vocab_size=len(tok),
                                         generator=masking)
                    logits = model(input_ids=masked.input_ids).logits
                    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), masked.labels.view(-1), ignore_index=-100)
                else:
                    logits = model(input_ids=batch, use_cache=False).logits[:, :-1]
                    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optims[objective].step()
                sched[objective].step()
                optims[objective].zero_grad(set_to_none=True)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                wall[objective] += time.perf_counter() - start
                if not math.isfinite(loss.item()):
                    print(f"error: {objective} loss is not finite at step {step}", file=sys.stderr)
                    return 1
            if step % args.eval_every == 0 or step == args.steps:
                evaluate(step)
    final = [r for r in records if r["step"] == args.steps]

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"

    print(f"\n# after {args.steps} steps, median [min, max] over {len(final)} seeds, on {machine}")
    for k, label in (("mlm", "masked LM"), ("ltr", "left-to-right")):
        print(f"{label:>14}: held-out loss {spread([r['loss'][k] for r in final])} nats; first word "
              f"{spread([r['by_position'][k][0] for r in final])}; cloze MRR {spread([r['cloze'][k]['mrr'] for r in final])}, "
              f"top-5 {spread([r['cloze'][k]['top5'] for r in final])}; wall {spread([r['wall_s'][k] for r in final])} s")
    for name in twins.LANDMARK_SERIES.values():
        print(f"{'landmark':>14}: {name}: {spread([r['landmarks'][name] for r in final])} nats")
    buckets = final[0]["buckets"]
    print("by position (median over seeds): " + "; ".join(
        f"{b}: mlm {statistics.median(r['by_position']['mlm'][i] for r in final):.2f} / ltr "
        f"{statistics.median(r['by_position']['ltr'][i] for r in final):.2f}" for i, b in enumerate(buckets)))
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "machine": machine, "records": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Train on a cluster, rehearsed on one machine: two torchrun agents acting as two nodes.

    python bench/bench_torchrun.py --steps 60                 # bert-tiny, 1 CPU thread per process

Runs the README's "Train on a cluster" command twice at once, each agent a "node" with one
process (``--nnodes=2 --nproc-per-node=1 --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:PORT``,
gloo on CPU), and the same training as one plain process, with the same per-process batch and
threads. Tokens/s (all processes together) comes from each run's metrics.csv over the steps after
the first log (evaluation excluded). Prints both, the held-out losses and, last, the scaling.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from app_harness import free_port  # bench/ is on sys.path when a bench script runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bertdemo.models.checkpoint_layout import latest_checkpoint


def train_args(args: argparse.Namespace, out: Path) -> list[str]:
    return ["-m", "bertdemo.pretrain", "--out", str(out), "--preset", args.preset, "--corpus", args.corpus,
            "--seq-len", str(args.seq_len), "--batch-size", str(args.batch_size), "--steps", str(args.steps),
            "--log-every", "10", "--eval-every", str(args.steps), "--checkpoint-every", "0",
            "--num-threads", str(args.threads), "--device", "cpu", "--precision", "fp32", "--no-progress"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false"}


def two_node_commands(args: argparse.Namespace, out: Path) -> list[list[str]]:
    """The same command for each "node": only the rendezvous decides who is rank 0."""
    port = free_port()
    agent = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--nproc-per-node={args.nproc_per_node}",
             "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-id=bench-{port}",
             "--max-restarts=0"]
    return [agent + train_args(args, out) for _ in range(2)]


def rate(out: Path) -> tuple[float, float]:
    """(tokens/s over the logged steps after the first, final held-out loss) from the run's latest checkpoint's
    metrics.csv (``out`` is the run folder: steps/step-<n>/ with its metrics, LATEST naming the latest)."""
    latest = latest_checkpoint(out)
    if latest is None:
        raise RuntimeError(f"The run in {out} saved no checkpoint.")
    with open(latest / "metrics.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    train = [r for r in rows if r["train_loss"]]
    first, last = train[0], train[-1]
    tokens = float(last["tokens"]) - float(first["tokens"])
    seconds = float(last["wall_s"]) - float(first["wall_s"])
    loss = [float(r["eval_loss"]) for r in rows if r["eval_loss"]][-1]
    return tokens / seconds, loss


def run_single(args: argparse.Namespace, out: Path) -> tuple[float, float, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *train_args(args, out)], cwd=ROOT, env=env(), capture_output=True,
                          text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return (*rate(out), time.perf_counter() - start)


def run_two_nodes(args: argparse.Namespace, out: Path) -> tuple[float, float, float]:
    start = time.perf_counter()
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for cmd in two_node_commands(args, out)]
    logs = [p.communicate(timeout=args.timeout)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("\n\n".join(log[-3000:] for log in logs))
    finished = sum(log.count("finished: step") for log in logs)
    if finished != 1:
        raise RuntimeError(f"expected one rank-0 report, got {finished}")
    return (*rate(out), time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="bert-tiny")
    parser.add_argument("--corpus", default="wiki")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per process")
    parser.add_argument("--nproc-per-node", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="alternating single / two-node runs")
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()} preset={args.preset} seq_len={args.seq_len} batch/process={args.batch_size} "
          f"steps={args.steps} threads/process={args.threads} nodes=2 x {args.nproc_per_node} process(es)",
          flush=True)
    print("each node runs: torchrun " + " ".join(two_node_commands(args, Path("RUNS/job"))[0][3:]), flush=True)
    results: dict[str, list[tuple[float, float, float]]] = {"1 process": [], "2 nodes": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in (("1 process", "2 nodes") if r % 2 == 0 else ("2 nodes", "1 process")):
                out = Path(tmp) / f"{name.replace(' ', '-')}-{r}"
                res = (run_single if name == "1 process" else run_two_nodes)(args, out)
                results[name].append(res)
                print(f"round {r + 1} {name:9s}: {res[0]:8,.0f} tokens/s, held-out loss {res[1]:.3f} after "
                      f"{args.steps} steps, {res[2]:.0f} s wall", flush=True)
    best = {name: statistics.median(x[0] for x in runs) for name, runs in results.items()}
    for name, runs in results.items():
        print(f"{name:9s}: median {best[name]:,.0f} tokens/s (runs: {', '.join(f'{x[0]:,.0f}' for x in runs)}); "
              f"held-out loss {', '.join(f'{x[1]:.3f}' for x in runs)}")
    print(f"scaling 1 -> 2 processes: {best['2 nodes'] / best['1 process']:.2f}x")


if __name__ == "__main__":
    main()

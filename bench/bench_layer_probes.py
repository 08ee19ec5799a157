"""Which layer knows what, timed: probe every layer of a model for the three tasks, with the controls.

    python bench/bench_layer_probes.py [--model embedded/bert-explorer-mlm] [--threads 2] [--repeats 1]
    python bench/bench_layer_probes.py --baselines   # also the topic task's majority / bag-of-words / frozen probe

Prints, per task, the test accuracy of the mean-pooled and [CLS] probes of every layer for the model and
for the random-weight control, the majority class, and the time from nothing cached to all results
(wall and CPU seconds: on a shared machine the CPU seconds say more about the work than the wall time).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bertdemo.finetune.features import ActivationCache
from bertdemo.finetune.layer_probes import probe_layers
from bertdemo.models.embedded import EMBEDDED_MLM_NAME
from bertdemo.models.store import load_masked_lm


def _row(label: str, values: tuple[float, ...]) -> str:
    return f"  {label:<18}" + " ".join(f"{v * 100:5.1f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=EMBEDDED_MLM_NAME)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--baselines", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_masked_lm(args.model, "cpu")
    walls, cpus = [], []
    for _ in range(args.repeats):
        cache = ActivationCache()
        wall, cpu = time.perf_counter(), time.process_time()
        results = probe_layers(args.model, loaded.model, loaded.tokenizer, cache)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    for r in results:
        print(f"{r.task} ({r.kind}): {r.n_train} train / {r.n_test} test, majority {r.majority_accuracy * 100:.1f} %")
        print("  layer             " + " ".join(f"{i:5d}" for i in range(len(r.model.mean))))
        print(_row("model mean", r.model.mean))
        print(_row("model [CLS]", r.model.cls))
        print(_row("random mean", r.random.mean))
        print(_row("random [CLS]", r.random.cls))
    print(f"{args.threads} threads, {args.repeats} run(s): wall {sorted(walls)} s, CPU {sorted(cpus)} s")
    if args.baselines:
        from bertdemo.corpus.topics import load_topic_splits
        from bertdemo.finetune.baselines import bag_of_words_baseline, frozen_probe, majority_baseline

        splits = load_topic_splits(Path(tempfile.mkdtemp()))
        for b in (majority_baseline(splits), bag_of_words_baseline(splits)):
            print(f"{b.name}: val {b.val_accuracy * 100:.1f} % test {b.test_accuracy * 100:.1f} % "
                  f"(macro-F1 {b.test_macro_f1 * 100:.1f} %) — {b.note}")
        for pooling, probe in frozen_probe(args.model, loaded.model, loaded.tokenizer, splits,
                                            ActivationCache()).items():
            print(f"frozen probe ({pooling}), {probe.n_train} train: val / test accuracy per layer")
            print(_row("val", probe.val_accuracy))
            print(_row("test", probe.test_accuracy))


if __name__ == "__main__":
    main()

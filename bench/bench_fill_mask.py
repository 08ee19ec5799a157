"""Fill-Mask latency: our `fill_mask.predict` vs the Hugging Face fill-mask pipeline, same model.

    python bench/bench_fill_mask.py [--layers 12 --hidden 768] [--repeats 20] [--threads 1]

Both run a bert-base-shaped BertForMaskedLM (random weights, built here: no hub needed)
in eval mode on the CPU. Ours projects onto the vocabulary only at the masked positions;
the pipeline projects every position. Prints the median latency per input and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, pipeline  # noqa: E402

from bertdemo.models import embedded  # noqa: E402

from bertdemo.explore import fill_mask  # noqa: E402
from bertdemo.models.store import load_masked_lm  # noqa: E402

INPUTS = {
    "short (1 mask)": "Nice to [MASK] you.",
    "medium (2 masks)": "The [MASK] barked at the mailman while the children played in the [MASK] after school.",
    "long (1 mask, ~120 tokens)": " ".join(["The river flows through the old town and past the market."] * 9)
    + " The capital of France is [MASK].",
}


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = BertConfig(hidden_size=args.hidden, num_hidden_layers=args.layers,
                        num_attention_heads=args.hidden // 64, intermediate_size=4 * args.hidden)
    with tempfile.TemporaryDirectory() as folder:
        BertForMaskedLM(config).save_pretrained(folder)
        AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir())).save_pretrained(folder)
        ours = load_masked_lm(folder, "cpu")
        reference = pipeline("fill-mask", model=folder, device="cpu", top_k=5)
        print(f"model: {args.layers} layers, hidden {args.hidden}; torch threads {torch.get_num_threads()}")
        print(f"{'input':28s} {'ours ms':>9s} {'pipeline ms':>12s} {'speed-up':>9s}")
        for name, text in INPUTS.items():
            ref_text = text.replace("[MASK]", reference.tokenizer.mask_token)
            ours_ms = median_ms(lambda: fill_mask.predict(ours, text, top_k=5), args.repeats)
            ref_ms = median_ms(lambda: reference(ref_text), args.repeats)
            print(f"{name:28s} {ours_ms:9.1f} {ref_ms:12.1f} {ref_ms / ours_ms:8.2f}x")


if __name__ == "__main__":
    main()

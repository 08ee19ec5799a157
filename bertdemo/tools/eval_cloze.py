"""Cloze evaluation: how often a masked-LM's top-1 / top-5 guesses hit an acceptable answer.

    python -m bertdemo.tools.eval_cloze --file data/cloze_everyday.tsv [--model NAME_OR_PATH]

The file holds ``sentence<TAB>answer,answer,...`` lines with exactly one ``[MASK]`` each;
``#`` lines are comments. Prints one line per sentence and, last, ``top1=0.xx top5=0.xx n=N``.
Without ``--model`` it evaluates the app's default model (the embedded one when offline).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bertdemo.explore import fill_mask
from bertdemo.explore.encoding import normalise_masks
from bertdemo.models.store import DEFAULT_MODEL, LoadedModel, ModelStore


@dataclass
class ClozeItem:
    """One cloze sentence (exactly one ``[MASK]``), its acceptable answers, and its line in the file."""

    sentence: str
    answers: list[str]
    line: int


@dataclass
class ClozeScore:
    """Fractions of the sentences whose top-1 / top-5 guesses hold an acceptable answer, out of ``n``."""

    top1: float
    top5: float
    n: int


def read_cloze(path: str | Path) -> list[ClozeItem]:
    """Parse a cloze TSV; ValueError naming the line for anything malformed."""
    items = []
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "\t" not in line:
            raise ValueError(f"{path}:{number}: expected 'sentence<TAB>answers', got {line!r}")
        sentence, answers = line.split("\t", 1)
        if normalise_masks(sentence, "[MASK]").count("[MASK]") != 1:
            raise ValueError(f"{path}:{number}: the sentence needs exactly one [MASK]")
        words = [a.strip().lower() for a in answers.split(",") if a.strip()]
        if not words:
            raise ValueError(f"{path}:{number}: no answers given")
        items.append(ClozeItem(sentence.strip(), words, number))
    if not items:
        raise ValueError(f"{path}: no cloze sentences found")
    return items


def score_cloze(loaded: LoadedModel, items: list[ClozeItem], out: TextIO | None = None) -> ClozeScore:
    """Score every item, printing one line each (to `out`, default stdout); returns the hit rates."""
    out = out if out is not None else sys.stdout  # looked up now, so redirected stdout is honoured
    hits1 = hits5 = 0
    for item in items:
        result = fill_mask.predict(loaded, item.sentence, top_k=5)
        guesses = [c.text.lower() for c in result.masks[0].candidates]
        hit1, hit5 = guesses[0] in item.answers, any(g in item.answers for g in guesses)
        hits1 += hit1
        hits5 += hit5
        mark = "1" if hit1 else ("5" if hit5 else "-")
        print(f"[{mark}] {item.sentence}  ->  {', '.join(guesses)}   (answers: {', '.join(item.answers[:6])})", file=out)
    n = len(items)
    return ClozeScore(hits1 / n, hits5 / n, n)


def main(argv: list[str] | None = None) -> int:
    """The command line: score a cloze file, print the hit rates last; 0 on success, 2 on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", required=True, help="TSV of sentence<TAB>answer,answer,...")
    parser.add_argument("--model", default=None, help="hub id or folder (default: the app's default model)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    try:
        items = read_cloze(args.file)
        loaded = ModelStore(default=args.model or DEFAULT_MODEL, device=args.device).get()
        print(f"# model: {loaded.name} ({loaded.source}) {loaded.note}".rstrip())
        score = score_cloze(loaded, items)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"top1={score.top1:.2f} top5={score.top5:.2f} n={score.n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

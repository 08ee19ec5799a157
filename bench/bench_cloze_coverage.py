"""What the twins' training text teaches of the right-context cloze: for each item, how many training documents hold
its answer beside a word that follows the blank, against the masked twin's rank of that answer.

    python bench/bench_cloze_coverage.py --corpus runs/twin-pairs/corpus.jsonl

The corpus is the twins' training text (``python -m bertdemo.tools.build_twin_pairs --work runs/twin-pairs
--prepare`` writes it; it stays out of git). For each item of ``data/right_context_cloze.tsv``: the content words
after the blank (lower-cased, a short stop list left out), and for each the number of documents that hold both it and
the answer, words compared by a crude stem (barked, barks, barking: bark; dogs: dog); the item's figure is its
best-taught word. The ranks are the shipped masked twin's at its last checkpoint (``bertdemo/assets/twins/curve.json``).
Prints one line per item, best-taught last, then the median rank of the items taught in at most 3 documents against
those taught in 10 or more, and Spearman's rho between the two columns: whether the right word's rank follows what
the text taught, which more training of the same text cannot change.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scipy.stats import spearmanr  # scipy comes with scikit-learn (requirements.txt)

from bertdemo.tools.eval_cloze import read_cloze

WORD = re.compile(r"[a-z]+")
STOP = set("the a an and of to in its it his her their on at by for with from into over all was were is be as that "
           "this then out up down back round so we he she i my me our s t".split())


def stem(word: str) -> str:
    """A crude stem (barked, barks, barking -> bark; dogs -> dog): a suffix stripped where three letters stay."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def right_words(sentence: str) -> list[str]:
    """The stems of the content words after the blank, in order, each once."""
    after = sentence.split("[MASK]", 1)[1].lower()
    return list(dict.fromkeys(stem(w) for w in WORD.findall(after) if w not in STOP))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(ROOT / "runs/twin-pairs/corpus.jsonl"))
    parser.add_argument("--cloze", default=str(ROOT / "data/right_context_cloze.tsv"))
    parser.add_argument("--curve", default=str(ROOT / "bertdemo/assets/twins/curve.json"))
    args = parser.parse_args()
    with open(args.corpus, encoding="utf-8") as f:
        docs = [{stem(w) for w in WORD.findall(json.loads(line)["text"].lower())} for line in f]
    items = read_cloze(args.cloze)
    ranks = json.loads(Path(args.curve).read_text())["checkpoints"][-1]["cloze"]["models"]["mlm"]["ranks"]
    rows = []
    for item, rank in zip(items, ranks, strict=True):
        answer = stem(item.answers[0].lower())
        with_answer = [d for d in docs if answer in d]
        taught = {w: sum(w in d for d in with_answer) for w in right_words(item.sentence)}
        best = max(taught, key=taught.get, default="")
        rows.append((taught.get(best, 0), rank, item.answers[0], best, item.sentence))
    print(f"{len(docs):,} training documents, {len(rows)} cloze items")
    print(f"{'docs':>5} {'rank':>5}  answer / the stem of its best-taught word after the blank")
    for taught, rank, answer, best, sentence in sorted(rows):
        print(f"{taught:5d} {rank:5d}  {answer} / {best}   {sentence}")
    for label, group in (("<= 3", [r for t, r, *_ in rows if t <= 3]), (">= 10", [r for t, r, *_ in rows if t >= 10])):
        median = f"median rank {statistics.median(group):.0f}" if group else "no median"  # a wide text leaves none few
        print(f"taught in {label} documents: {len(group)} items, {median}, top 5: {sum(r <= 5 for r in group)}")
    rho = spearmanr([t for t, *_ in rows], [r for _, r, *_ in rows]).statistic
    print(f"Spearman rho (documents, rank): {rho:+.2f}")


if __name__ == "__main__":
    main()

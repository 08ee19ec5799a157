"""Continue shipped twins whose blocks were cut anywhere on wider everyday text: a next stage of all three, from
their shipped weights, on the same batches — a build that fits a CPU, a stage per sitting.

    python -m bertdemo.tools.continue_twins --work runs/twin-stage --tatoeba PAIRS/*.txt --prepare
    python -m bertdemo.tools.continue_twins --work runs/twin-stage --tatoeba PAIRS/*.txt --steps 2500
    python -m bertdemo.tools.continue_twins --work runs/twin-stage --status

It serves twins whose training blocks were cut anywhere in the text stream (the builds shipped until 2026-12-07).
Twins packed at text starts (``--block-starts text``, as shipped now) are refused: they run on in their own build
folder instead (:mod:`bertdemo.tools.build_twin_pairs` with a larger ``--steps``). This tool adds tokens to shipped
twins on other text: each of the three runs warm-starts from its shipped folder
(``bertdemo/assets/twins/<kind>``), with the shipped tokenizer, and all three read the same batches in the same order
(one seed), so both pairs stay pairs in which only the objective differs. Its checkpoints are measured and exported
by :mod:`bertdemo.tools.measure_twin_pairs` like a build's (``--stage``), and the next stage starts from what was
exported: the repository carries a long build from one sitting to the next.

Stages of one sitting, each skipped when its output is already there (the same command resumes):

1. ``WORK/base.jsonl``: the shipped twins' own corpus, rebuilt (:func:`build_twin_pairs.build_corpus`, no Tatoeba),
   and checked: tokenized with the shipped tokenizer, its held-out blocks must be the shipped ``heldout.npz``'s.
2. ``WORK/corpus.jsonl``: the base corpus's training documents, ``--copies`` copies of Tatoeba's English sentences
   and ``--story-copies`` copies of the ``--stories`` (plain text, a story a line: TinyStories), each decontaminated
   against both cloze sets and without any text equal to a held-out document or one of its sentences (each copy in
   its own shuffled order), shuffled together, then the base
   corpus's held-out documents, last and in order. The engine holds out the last ``--heldout-fraction`` of the blocks;
   the tool checks that this covers every held-out document (so no held-out word is ever trained on) and writes that
   fraction to ``stage.json``; the shipped records the stage continues (curve, build, Table 5, held-out questions)
   are copied to ``WORK/prior/``, since exporting the stage replaces them.
3. The three runs at once, one CPU thread each (``--auto-resume``), logs in ``WORK/<run>.log``; the sitting's
   command and start written to ``stage.json`` before they begin, its end after — or, stopped (Ctrl-C, SIGTERM),
   that it was stopped, each run having saved where it stood (:func:`build_twin_pairs.run_sitting`).

Then ``python -m bertdemo.tools.measure_twin_pairs --work WORK --stage --table5 --export`` measures the stage's
log-spaced checkpoints on the shipped held-out words and cloze sets, runs Table 5 on its last one, and ships it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bertdemo import storage
from bertdemo.tools.build_twin_pairs import (
    CLOZE_FILES,
    MAX_CORPUS_TOKENS,
    ROOT,
    RUNS,
    build_corpus,
    corpus_texts,
    recorded_command,
    run_sitting,
    status,
    worker_script,
)
from bertdemo.tools.measure_twin_pairs import EXPORT_NAMES, SEQ_LEN, base_blocks

SHIPPED = ROOT / "bertdemo" / "assets" / "twins"
PRIOR_FILES = ("build.json", "curve.json", "table5.json", "heldout.npz")


def doc_lengths(docs: list[str], tokenizer) -> np.ndarray:
    """Tokens each document takes in the engine's stream (its pieces and the [SEP] after it)."""
    from bertdemo.pretrain.data import tokenize

    lengths = []
    for i in range(0, len(docs), 1024):
        lengths += [len(ids) + 1 for ids in tokenize(tokenizer, docs[i:i + 1024], add_special_tokens=False)["input_ids"]]
    return np.asarray(lengths)


def heldout_start(lengths: np.ndarray, heldout_fraction: float = 0.02, seq_len: int = SEQ_LEN) -> int:
    """The index of the first document the engine's held-out split touches (the blocks are cut from the stream of all
    documents, the held-out ones its last)."""
    from bertdemo.pretrain.data import split_heldout

    body = seq_len - 2
    n_blocks = int(min(lengths.sum(), MAX_CORPUS_TOKENS)) // body
    first_heldout_token = (n_blocks - split_heldout(n_blocks, heldout_fraction)) * body
    return int(np.searchsorted(np.cumsum(lengths), first_heldout_token, side="right"))


def normalised(text: str) -> str:
    """A text's words, lowercased, one space apart (how two texts are compared)."""
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def held_out_sentences(docs: list[str]) -> set[str]:
    """Every held-out document and each of its sentences, :func:`normalised`: a Tatoeba sentence equal to one of
    them ("Step aside.") would put a held-out text in training."""
    found = {normalised(part) for doc in docs for part in [doc, *re.split(r"(?<=[.!?])\s+", doc)]}
    found.discard("")
    return found


def stage_corpus(base: Path, out: Path, tatoeba: list[str], copies: int, tokenizer, seed: int,
                 seq_len: int = SEQ_LEN, stories: Sequence[str] = (), story_copies: int = 1) -> dict:
    """Stage 2: the mixed corpus (training documents, Tatoeba and the stories shuffled, the base's held-out documents
    last), written atomically; returns the stage's record (documents, tokens, the engine's held-out fraction)."""
    from bertdemo.pretrain.data import split_heldout
    from bertdemo.tools import everyday_text

    docs = list(corpus_texts(base))
    lengths = doc_lengths(docs, tokenizer)
    cut = heldout_start(lengths, seq_len=seq_len)
    train, held = docs[:cut], docs[cut:]
    windows = set().union(*(everyday_text.cloze_windows(f) for f in CLOZE_FILES))
    heldout_texts = held_out_sentences(held)

    def clean(texts: list[str]) -> tuple[list[str], int, int]:
        """The texts less those holding a filled-in cloze window or equal to a held-out text; (kept, both counts)."""
        texts, for_cloze = everyday_text.decontaminate(texts, windows)
        kept = [t for t in texts if normalised(t) not in heldout_texts]  # no held-out text is ever trained on
        return kept, for_cloze, len(texts) - len(kept)

    sentences, dropped, held_out_dropped = clean(everyday_text.tatoeba_docs(tatoeba))
    tales, tales_for_cloze, tales_as_heldout = clean(everyday_text.story_docs(stories))
    rng = random.Random(seed)
    mixed, mixed_tokens = list(train), int(lengths[:cut].sum())
    for texts, times in ((sentences, copies), (tales, story_copies)):
        mixed_tokens += times * int(doc_lengths(texts, tokenizer).sum())
        for _ in range(times):
            copy = list(texts)
            rng.shuffle(copy)
            mixed += copy
    rng.shuffle(mixed)
    held_tokens = int(lengths[cut:].sum())
    if mixed_tokens + held_tokens > MAX_CORPUS_TOKENS:
        raise SystemExit(f"The mixed corpus ({mixed_tokens + held_tokens:,} tokens) is over the engine's "
                         f"{MAX_CORPUS_TOKENS:,}: fewer --copies.")
    body = seq_len - 2
    n_blocks = (mixed_tokens + held_tokens) // body
    n_held = -(-held_tokens // body) + 1  # every held-out document inside the held-out blocks, with one to spare
    fraction = round(n_held / n_blocks + 1e-6, 6)
    if n_blocks * body - split_heldout(n_blocks, fraction) * body > mixed_tokens:
        raise SystemExit("The held-out split would not cover the held-out documents.")
    with storage.atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"text": text}) + "\n" for text in mixed + held)
    return {"base_train_documents": len(train), "base_heldout_documents": len(held),
            "tatoeba_sentences": len(sentences), "tatoeba_dropped_for_cloze": dropped,
            "tatoeba_dropped_as_heldout": held_out_dropped, "tatoeba_copies": copies,
            "tatoeba_files": [Path(f).name for f in tatoeba],
            **({"stories": len(tales), "stories_dropped_for_cloze": tales_for_cloze,
                "stories_dropped_as_heldout": tales_as_heldout, "story_copies": story_copies,
                "story_files": [Path(f).name for f in stories]} if stories else {}),
            "training_tokens": mixed_tokens, "heldout_tokens": held_tokens, "heldout_fraction": fraction}


def engine_command(run: str, args: argparse.Namespace, stage: dict) -> list[str]:
    """The ``python -m bertdemo.pretrain`` command of one run: the shipped twin's weights, the shipped tokenizer,
    the stage's corpus; its schedule ends at ``--steps`` (no time budget, so the three end on the same step);
    resumable (``--auto-resume``)."""
    work = Path(args.work)
    return [sys.executable, "-m", "bertdemo.pretrain", *RUNS[run], "--init-from", str(SHIPPED / EXPORT_NAMES[run]),
            "--tokenizer", str(SHIPPED / "mlm"), "--corpus", str(work / "corpus.jsonl"),
            "--heldout-fraction", str(stage["heldout_fraction"]), "--max-corpus-tokens", str(MAX_CORPUS_TOKENS),
            "--steps", str(args.steps), "--time-budget-s", "0", "--batch-size", str(args.batch_size), "--lr", str(args.lr),
            "--warmup-steps", str(args.warmup_steps), "--locality-bias", "0", "--seed", str(args.seed),
            "--num-threads", "1", "--device", "cpu", "--dropout", str(args.dropout),
            "--eval-every", str(2 * args.checkpoint_every), "--checkpoint-every", str(args.checkpoint_every),
            "--keep-milestones", "8", "--no-progress", "--auto-resume", "--out", str(work / run)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's settings."""
    parser = argparse.ArgumentParser(prog="python -m bertdemo.tools.continue_twins",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--work", default="runs/twin-stage", help="folder of the stage's corpus and runs")
    parser.add_argument("--tatoeba", nargs="+", default=[], metavar="FILE",
                        help="manythings.org sentence-pair files whose English sentences join the corpus")
    parser.add_argument("--copies", type=int, default=2, help="copies of Tatoeba's sentences in the mix")
    parser.add_argument("--stories", nargs="+", default=[], metavar="FILE",
                        help="plain-text files of short stories (one per line, e.g. TinyStories) that join the corpus")
    parser.add_argument("--story-copies", type=int, default=1, help="copies of the stories in the mix")
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--dropout", type=float, default=0.1, help="the shipped twins' own")
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--prepare", action="store_true", help="only build and check the corpus, and stop")
    parser.add_argument("--status", action="store_true", help="print how far each run is, and stop")
    return parser.parse_args(argv)


def check_packed_anywhere(shipped: Path = SHIPPED) -> None:
    """SystemExit unless the shipped twins' blocks were cut anywhere in one stream of texts (their record's
    ``text_start.blocks_began``; none: the first builds'): a stage's held-out split (:func:`heldout_start`) and its
    check against the shipped held-out blocks are worked out for that packing."""
    curve = shipped / "curve.json"
    record = json.loads(curve.read_text(encoding="utf-8")).get("text_start") if curve.is_file() else None
    began = (record or {}).get("blocks_began", "anywhere")
    if began != "anywhere":
        raise SystemExit(f"The shipped twins' training blocks began {began!r} (--block-starts {began}); a stage continues "
                         "only twins whose blocks were cut anywhere, for which its held-out split is worked out. Such a "
                         "build runs on in its own folder: the same build_twin_pairs command with a larger --steps.")


def main(argv: list[str] | None = None) -> int:
    """The command line: the corpus (rebuilt, checked, mixed), then the three runs; 0 on success."""
    args = parse_args(argv)
    work = Path(args.work)
    if args.status:
        print(json.dumps(status(argparse.Namespace(work=args.work, steps=args.steps)), indent=1))
        return 0
    check_packed_anywhere()
    from transformers import AutoTokenizer

    work.mkdir(parents=True, exist_ok=True)
    record_path = work / "stage.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {"sittings": []}
    tokenizer = AutoTokenizer.from_pretrained(str(SHIPPED / "mlm"))
    if not (work / "base.jsonl").is_file():
        record["base_corpus"] = build_corpus(work / "base.tmp.jsonl")
        base_blocks(work / "base.tmp.jsonl", tokenizer, work / "cache", SHIPPED / "heldout.npz")
        (work / "base.tmp.jsonl").rename(work / "base.jsonl")
    if not (work / "corpus.jsonl").is_file():
        if not args.tatoeba and not args.stories:
            raise SystemExit("--tatoeba FILE... or --stories FILE... is needed to build the stage's corpus.")
        record["stage"] = stage_corpus(work / "base.jsonl", work / "corpus.jsonl", args.tatoeba, args.copies,
                                       tokenizer, args.seed, stories=args.stories, story_copies=args.story_copies)
        prior = work / "prior"  # what the stage starts from: exporting the stage replaces the shipped files
        prior.mkdir(exist_ok=True)
        for name in PRIOR_FILES:
            shutil.copy2(SHIPPED / name, prior / name)
        record["from_sha256"] = {kind: hashlib.sha256((SHIPPED / kind / "model.safetensors").read_bytes()).hexdigest()
                                 for kind in EXPORT_NAMES.values()}
        storage.write_text(record_path, json.dumps(record, indent=1) + "\n")
    if args.prepare:
        return 0
    command = recorded_command("continue_twins", argv if argv is not None else sys.argv[1:],
                               args.tatoeba + args.stories)
    codes = run_sitting(record_path, record, command, "cpu",
                        [worker_script([(run, engine_command(run, args, record["stage"]))], work) for run in RUNS],
                        after=lambda rec: rec.update(runs=status(argparse.Namespace(work=args.work, steps=args.steps))))
    return max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main())

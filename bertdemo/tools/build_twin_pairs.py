"""Build the twin pairs past the crossover: one masked LM and two left-to-right LMs, trained long on this machine.

    python -m bertdemo.tools.build_twin_pairs --work runs/twin-pairs            # start, or continue where it stopped
    python -m bertdemo.tools.build_twin_pairs --work runs/twin-pairs --status   # how far each run is

Three runs of the project's own engine (``python -m bertdemo.pretrain``), one recipe, one seed, so the same
batches in the same order and the same masked positions on every step, however each run was stopped and resumed (the
engine draws a step's batch and masks from the seed and the step; before 2026-12-07 a resumed run drew them afresh
from the step it resumed at, as the shipped build's runs did); only the objective differs:

* ``mlm``: a ``BertForMaskedLM`` (BERT: 15 % of the words hidden, each predicted from both sides);
* ``ltr-masked``: a ``BertLMHeadModel`` (``is_decoder=True``) predicting **the same 15 %** of the words, each
  from the true words before it (``--ltr-targets masked``): the controlled pair with ``mlm`` — the same data, the
  same number of predictions per step, only what each prediction may read differs;
* ``ltr-all``: a ``BertLMHeadModel`` predicting every next word (GPT): the paper's setting with ``mlm``.

Stages, each skipped when its output is already there (so the same command resumes a build cut off anywhere):

1. ``WORK/corpus.jsonl``: the embedded Wikipedia summaries (less the topic task's validation and test) mixed with
   everyday English (:mod:`bertdemo.tools.everyday_text`; with ``--tatoeba FILE...`` Tatoeba's sentences too, with
   ``--stories FILE...`` short stories too), each text once (so the engine's held-out split, the
   corpus's last blocks, holds no text that is also trained on), every text holding a filled-in sentence of either
   cloze set dropped (no evaluation sentence in the pretraining text).
2. ``WORK/tokenizer/``: an uncased WordPiece vocabulary of ``--vocab-size`` pieces learned on that corpus (a
   twin's step is mostly its projection onto the vocabulary: 8,192 pieces instead of 30,522 make a step ~3x
   cheaper on a CPU, docs/benchmarks.md), then every answer word of the two cloze sets that it would split added
   as one whole-word piece (as each is in bert-base-uncased's vocabulary), so that a blank is one prediction.
3. The three runs (or those ``--runs`` names), on a CPU two at a time on one core each (``mlm`` then ``ltr-masked`` on
   one, ``ltr-all`` on the other: about equal work; two runs left, one on each core; one left, on all), with
   ``--device cuda`` all at once on the GPU (the shipped twins: ``bertdemo/tools/build_twin_pairs_gpu.sh``), each with ``--auto-resume``, its log in ``WORK/<run>.log``; checkpoints every
   ``--checkpoint-every`` steps, the log-spaced ones kept (1x, 2x, 4x… the first) for the crossover curve.
   The sitting's command and start are written to ``WORK/build_record.json`` before the runs begin, its end
   after; stopped (Ctrl-C, SIGTERM), each run saves where it stood and the record says the sitting was stopped.

A finished build runs on with a larger ``--steps`` (the same command otherwise): each run continues from its last
checkpoint, its learning rate warming up again over ``--warmup-steps`` and decaying
to 0 at the new end (the engine's ``lr_at``), and the checkpoint that ended the first schedule is kept and measured
beside the log-spaced ones.

Checkpoints stay out of git (``runs/`` is ignored); :mod:`bertdemo.tools.measure_twin_pairs` measures them and
exports the shipped pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bertdemo import storage

RUNS = {  # run -> the engine flags that differ
    "mlm": ["--objective", "mlm"],
    "ltr-masked": ["--objective", "ltr", "--ltr-targets", "masked"],
    "ltr-all": ["--objective", "ltr", "--ltr-targets", "all"],
}
WORKERS = (("mlm", "ltr-masked"), ("ltr-all",))  # one core each: about equal work
ROOT = Path(__file__).resolve().parents[2]
CLOZE_FILES = (ROOT / "data" / "cloze_everyday.tsv", ROOT / "data" / "right_context_cloze.tsv")
VOCAB_SIZE = 8192
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
STOP_WAIT_S = 300.0  # how long a stopped sitting waits for its runs to save and end
MAX_CORPUS_TOKENS = 50_000_000  # the engine's --max-corpus-tokens of every twin run (the corpora are far smaller)


def build_corpus(out: Path, tatoeba: list[str] | None = None, stories: list[str] | None = None) -> dict[str, int]:
    """Stage 1: the decontaminated mix of Wikipedia summaries (less the topic task's held-out ones) and everyday
    text (with ``tatoeba``'s sentence-pair files: their English sentences too; with ``stories``' files: their short
    stories too), written atomically; documents per source."""
    from bertdemo.corpus.topics import held_out_titles
    from bertdemo.models.embedded import wiki_summaries
    from bertdemo.tools import everyday_text

    wiki = list(wiki_summaries(exclude_titles=held_out_titles()))
    once = {name: 1 for name in everyday_text.DEFAULT_WEIGHTS}  # every text once: the held-out split is unseen
    return everyday_text.build(out, CLOZE_FILES, weights=once, wiki=wiki, unique=True,
                               log=lambda m: print(m, file=sys.stderr), tatoeba=tatoeba or (),
                               stories=stories or ())


def corpus_texts(corpus: Path):
    """The documents of a ``.jsonl`` corpus, one at a time."""
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)["text"]


def answer_words() -> list[str]:
    """The single-word answers of both cloze sets, in file order (each once)."""
    from bertdemo.tools.eval_cloze import read_cloze

    words = [a for f in CLOZE_FILES for item in read_cloze(f) for a in item.answers if " " not in a]
    return list(dict.fromkeys(words))


def learn_tokenizer(corpus: Path, out: Path, vocab_size: int = VOCAB_SIZE):
    """Stage 2: an uncased WordPiece tokenizer (bert-base-uncased's normaliser and pre-tokeniser) of
    ``vocab_size`` pieces learned on ``corpus``, saved as a stock ``BertTokenizerFast`` folder (atomically)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS,
                                        continuing_subword_prefix="##", limit_alphabet=200)
    tok.train_from_iterator(corpus_texts(corpus), trainer=trainer)
    vocab = tok.get_vocab()
    for word in answer_words():  # every cloze answer one piece, as in bert-base-uncased's vocabulary
        vocab.setdefault(word, len(vocab))
    tok.model = models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = BertTokenizerFast(tokenizer_object=tok, do_lower_case=True, unk_token="[UNK]", sep_token="[SEP]",
                             pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]", model_max_length=512)
    with storage.atomic_folder(out) as tmp:
        fast.save_pretrained(str(tmp))
    return fast


def engine_command(run: str, args: argparse.Namespace, threads: int = 1) -> list[str]:
    """The ``python -m bertdemo.pretrain`` command of one run (resumable: ``--auto-resume``) on ``threads`` CPU
    threads (not part of its experiment: a run may continue on another count)."""
    work = Path(args.work)
    return [sys.executable, "-m", "bertdemo.pretrain", *RUNS[run], "--corpus", str(work / "corpus.jsonl"),
            "--tokenizer", str(work / "tokenizer"), "--steps", str(args.steps), "--time-budget-s", str(args.time_budget_s),
            "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--warmup-steps", str(args.warmup_steps),
            "--locality-bias", "0", "--seed", str(args.seed), "--num-threads", str(threads), *shape_flags(args.preset),
            "--device", args.device, "--dropout", str(args.dropout), "--block-starts", args.block_starts,
            "--eval-every", str(2 * args.checkpoint_every), "--checkpoint-every", str(args.checkpoint_every),
            "--keep-milestones", "8", "--max-corpus-tokens", str(MAX_CORPUS_TOKENS), "--no-progress", "--auto-resume",
            "--out", str(work / run)]


def shape_flags(preset: str) -> list[str]:
    """The engine's shape flags for a preset name, or for ``layers,hidden,heads,ffn`` (a custom shape)."""
    if "," not in preset:
        return ["--preset", preset]
    layers, hidden, heads, ffn = (str(int(v)) for v in preset.split(","))
    return ["--preset", "custom", "--num-hidden-layers", layers, "--hidden-size", hidden, "--num-attention-heads",
            heads, "--intermediate-size", ffn]


def finished(run_folder: Path, steps: int) -> bool:
    """Whether the run's latest checkpoint is its last step."""
    from bertdemo.pretrain.checkpoints import latest_checkpoint, read_state

    latest = latest_checkpoint(run_folder)
    return latest is not None and int(read_state(latest).get("step") or 0) >= steps


def worker_groups(device: str) -> tuple[tuple[str, ...], ...]:
    """The runs each worker trains one after the other: on a CPU two workers of about equal work (one core each), on
    a GPU one worker per run (the three share the device at once)."""
    return WORKERS if device == "cpu" else tuple((run,) for run in RUNS)


def planned_runs(args: argparse.Namespace) -> list[tuple[str, ...]]:
    """Per worker, the runs it will train: those asked for (``--runs``) and not finished yet, in the device's
    groups (:func:`worker_groups`); on a CPU, when no more runs are left than it has workers, one run each (the
    controlled pair alone trains its two runs at once, not one after the other)."""
    work = Path(args.work)
    groups = [tuple(r for r in runs if r in args.runs and not finished(work / r, args.steps))
              for runs in worker_groups(args.device)]
    left = [run for runs in groups for run in runs]
    if args.device == "cpu" and len(left) <= len(WORKERS):
        return [(run,) for run in left]
    return groups


def threads_per_run(device: str, workers: int) -> int:
    """CPU threads each run takes: on a CPU its share of the cores (a run alone takes them all), on a GPU one."""
    return max(1, (os.cpu_count() or 1) // max(1, workers)) if device == "cpu" else 1


def worker_script(commands: list[tuple[str, list[str]]], work: Path) -> str:
    """The bash script of one worker: each ``(run, engine command)`` after the other, each appending to its log
    (``WORK/<run>.log``), the first failure ending it. Asked to stop (SIGINT), it lets the running engine finish its
    step and save, then ends without starting the next run. A worker starts a session of its own, and where the
    kernel groups a session's processes for the scheduler (autogroup), a nice value counts only inside its group: the
    worker sets its group's to the tool's, so that ``nice -n 19`` still leaves the machine to other work (a few tries:
    the kernel refuses a second such write within 100 ms to a process without privileges, and workers start
    together)."""
    lines = ["trap 'exit 130' INT",
             'for try in 1 2 3 4 5; do echo "$(nice)" 2>/dev/null > /proc/self/autogroup && break; sleep 0.3; done']
    for run, command in commands:
        lines.append(" ".join(_quote(c) for c in command) + f" >> {_quote(str(work / (run + '.log')))} 2>&1 || exit $?")
    return "\n".join(lines)


def worker(runs: tuple[str, ...], args: argparse.Namespace, threads: int = 1) -> str:
    """The script of one worker that trains ``runs`` one after the other, each on ``threads`` CPU threads."""
    return worker_script([(run, engine_command(run, args, threads)) for run in runs], Path(args.work))


def run_sitting(record_path: Path, record: dict, command: str, device: str, scripts: list[str],
                after: Callable[[dict], None] = lambda record: None, stop_wait_s: float = STOP_WAIT_S) -> list[int]:
    """One sitting: ``scripts`` (:func:`worker_script`) at once, each in a process group of its own, their exit codes.

    The record (``record_path``) gets the command and the sitting's start before the workers begin, and its end
    after, so a sitting that is stopped keeps its record too. Stopped (Ctrl-C, SIGTERM), it asks each worker to stop
    as the engine's own Ctrl-C does (finish the step, save a checkpoint, end), waits up to ``stop_wait_s`` for
    them, writes that the sitting was stopped, and returns (130 for a worker still running). ``after`` adds to the
    record before each write (the runs' steps). The workers live in sessions of their own: a hang-up or SIGKILL of
    this process leaves them training, and the record at its start. Another sitting may train other runs of the
    same folder at once (the third run beside the controlled pair): each write keeps the other's sitting."""
    def write() -> None:
        write_sitting(record_path, record, sitting, after)

    record["command"] = command
    sitting = {"started": _now(), "machine": _machine(device, "the start")}
    write()
    started = time.time()
    # Ctrl-C's signal taken here even where a shell started this in the background (which ignores it): the workers
    # then start with it handled as by default, so that their trap can take it (bash cannot trap what it was
    # started ignoring)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler), signal.signal(signal.SIGTERM, _stop_on_sigterm)
    workers: list[subprocess.Popen] = []
    try:
        for script in scripts:  # one by one: a stop while they start reaches those already running
            workers.append(subprocess.Popen(["bash", "-c", script], cwd=str(ROOT), start_new_session=True))
        codes = [w.wait() for w in workers]
    except (KeyboardInterrupt, SittingStopped):
        for number in (signal.SIGINT, signal.SIGTERM):  # the stop runs to its end: a second Ctrl-C cannot cut it
            signal.signal(number, signal.SIG_IGN)
        _ask_to_stop(workers)
        sitting.update(stopped=_now(), wall_s=round(time.time() - started))
        write()
        codes = _wait(workers, stop_wait_s)
        sitting.update(exit_codes=codes)
        write()
        print(f"Stopped: each run saved where it stood; the same command continues ({record_path.parent}).",
              file=sys.stderr)
        return [130 if code is None else code for code in codes]
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    sitting.update(ended=_now(), wall_s=round(time.time() - started), exit_codes=codes,
                   machine=_machine(device, "the end"))
    write()
    return codes


def write_sitting(record_path: Path, record: dict, sitting: dict, after: Callable[[dict], None] = lambda r: None,
                  ) -> dict:
    """Write ``sitting`` into the record at ``record_path`` as it is on disk now (under a lock: another sitting of
    the same folder may be writing its own), in its place if it is there (the same ``started`` and process), else
    after the others; the record's other entries from ``record``, then ``after``'s; the record written."""
    sitting.setdefault("process", os.getpid())
    mine = (sitting["started"], sitting["process"])

    def merged(current: dict) -> dict:
        sittings = current.get("sittings", [])
        at = next((i for i, s in enumerate(sittings) if (s.get("started"), s.get("process")) == mine), len(sittings))
        out = {**current, **{k: v for k, v in record.items() if k != "sittings"},
               "sittings": [*sittings[:at], sitting, *sittings[at + 1:]]}
        after(out)
        return out

    return storage.update_json(record_path, merged)


def _ask_to_stop(workers: list[subprocess.Popen]) -> None:
    """Ask each running worker's process group to stop as Ctrl-C does (its engine finishes the step and saves)."""
    for w in workers:
        if w.poll() is None:
            os.killpg(w.pid, signal.SIGINT)


def _wait(workers: list[subprocess.Popen], wait_s: float) -> list[int | None]:
    """Each worker's exit code, waiting up to ``wait_s`` in all; None for a worker still running then (it goes on
    alone: a run is never killed in the middle of a save)."""
    deadline = time.time() + wait_s
    codes: list[int | None] = []
    for w in workers:
        try:
            codes.append(w.wait(timeout=max(0.0, deadline - time.time())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    return codes


class SittingStopped(Exception):
    """A sitting was asked to stop (SIGTERM)."""


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as a stop of the sitting (:func:`run_sitting`)."""
    raise SittingStopped(f"signal {signum}")


def _now() -> str:
    """This moment in UTC, to the second, as a record writes it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def recorded_command(tool: str, argv: list[str], text_files: list[str]) -> str:
    """``tool``'s command as a record keeps it: each text file (Tatoeba's, the stories) by its name (where it lay is
    this machine's business)."""
    files = set(text_files)
    return f"python -m bertdemo.tools.{tool} " + " ".join(Path(a).name if a in files else a for a in argv)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _machine(device: str, when: str) -> str:
    """The machine a sitting trained on, in words, with its load average at ``when``."""
    where = f"{os.uname().machine}, {os.cpu_count()} CPU cores"
    if device != "cpu":
        import torch

        where += f", one {torch.cuda.get_device_name(0)} shared by the runs at once, torch {torch.__version__}"
    return f"{where}, load average {os.getloadavg()[0]:.1f} at {when}"


def status(args: argparse.Namespace) -> dict[str, dict]:
    """Each run's latest saved step and training seconds."""
    from bertdemo.pretrain.checkpoints import latest_checkpoint, read_state

    report = {}
    for run in RUNS:
        latest = latest_checkpoint(Path(args.work) / run)
        state = read_state(latest) if latest is not None else {}
        report[run] = {"step": state.get("step", 0), "of": args.steps, "training_s": round(state.get("elapsed_s", 0))}
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's settings (every default is the CPU build's recipe)."""
    parser = argparse.ArgumentParser(prog="python -m bertdemo.tools.build_twin_pairs",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--work", default="runs/twin-pairs", help="folder of the corpus, the vocabulary and the runs")
    parser.add_argument("--steps", type=int, default=7400, help="steps of each run (7,400 x 16 x 128 = 15.2 M tokens)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup-steps", type=int, default=150)
    parser.add_argument("--checkpoint-every", type=int, default=100,
                        help="steps between saves; the log-spaced ones (1x, 2x, 4x… this) are kept")
    parser.add_argument("--vocab-size", type=int, default=VOCAB_SIZE)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--preset", default="bert-tiny", help="the shape of all three models: a preset, or layers,hidden,heads,ffn")
    parser.add_argument("--dropout", type=float, default=0.0, help="hidden + attention dropout of all three")
    parser.add_argument("--block-starts", choices=["anywhere", "text"], default="anywhere",
                        help="where the engine's blocks begin: 'anywhere' in one stream of texts (the shipped twins), "
                             "or at a text's start, so that a sentence asked alone ([CLS] sentence [SEP]) reads as "
                             "in training")
    parser.add_argument("--device", default="cpu", help="'cpu' (two runs at a time, one core each) or 'cuda' (all "
                                                       "three at once on the one GPU)")
    parser.add_argument("--time-budget-s", type=int, default=0,
                        help="each run's wall-time budget (its schedule ends at whichever comes first); 0: none")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads of each run; 0: its share of the cores (a run alone takes them all)")
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS),
                        help="train only these runs (e.g. another seed of the controlled pair: mlm ltr-masked)")
    parser.add_argument("--tatoeba", nargs="+", default=[], metavar="FILE",
                        help="manythings.org sentence-pair files (tatoeba.org's sentences) whose English sentences join "
                             "the corpus (stage 1 only: a corpus already built is kept)")
    parser.add_argument("--stories", nargs="+", default=[], metavar="FILE",
                        help="plain-text files of short stories (one a line, e.g. TinyStories) that join the corpus "
                             "(stage 1 only)")
    parser.add_argument("--prepare", action="store_true", help="only build the corpus and the vocabulary, and stop")
    parser.add_argument("--status", action="store_true", help="print how far each run is, and stop")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The command line: build (or continue) the corpus, the vocabulary and the three runs; 0 on success."""
    args = parse_args(argv)
    work = Path(args.work)
    if args.status:
        print(json.dumps(status(args), indent=1))
        return 0
    work.mkdir(parents=True, exist_ok=True)
    record_path = work / "build_record.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {"sittings": []}
    if not (work / "corpus.jsonl").is_file():
        record["corpus"] = build_corpus(work / "corpus.jsonl", args.tatoeba, args.stories)
        if args.tatoeba:
            record["tatoeba_files"] = [Path(f).name for f in args.tatoeba]
        if args.stories:
            record["story_files"] = [Path(f).name for f in args.stories]
    if not (work / "tokenizer" / "tokenizer.json").is_file():
        learn_tokenizer(work / "corpus.jsonl", work / "tokenizer", args.vocab_size)
    if args.prepare:
        storage.write_text(record_path, json.dumps(record, indent=1) + "\n")
        return 0
    command = recorded_command("build_twin_pairs", argv if argv is not None else sys.argv[1:],
                               args.tatoeba + args.stories)
    plans = [runs for runs in planned_runs(args) if runs]
    threads = args.threads or threads_per_run(args.device, len(plans))
    codes = run_sitting(record_path, record, command, args.device, [worker(runs, args, threads) for runs in plans],
                        after=lambda rec: rec.update(runs=status(args)))
    return max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main())

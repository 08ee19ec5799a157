"""What more training gives, measured: the default recipe run for its 5 minutes and for 30, on one CPU thread.

The Pretrain tab quotes these figures when it says what a longer run or a faster device would give. They
come from ``bench/bench_time_to_insight.py`` (the commands, the machine and the date are in
docs/benchmarks.md), scored with the run's own held-out questions and landmark lines — the numbers a learner
sees on the page — and the rank of the page's probe word. A faster device makes more steps per second; the
page turns the steps measured here into minutes at the speed of the learner's own run. Re-measure when the
default recipe changes (tests/test_measured_runs.py checks they describe today's defaults). Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

PROBE = ("The capital of France is [MASK].", "paris")  # the Pretrain tab's own probe and its expected word
# what the embedded corpus (its Wikipedia summaries, lowercased, whole words) says of it
CORPUS_DOCUMENTS, CORPUS_WORDS = 10_033, 775_848  # documents; words split on white space
FACT_PHRASE, FACT_PHRASE_COUNT = "capital of France", 0  # counted in any case
WORD_COUNT = 73  # times PROBE's word appears in the corpus
MEASURED_ON = "one CPU thread of a 2-core AMD EPYC VM (AVX-512 with bf16, bf16 autocast), seed 1337, 2026-11-26"


@dataclass(frozen=True)
class MeasuredRun:
    """One run of the default recipe, ``time_budget_s`` set to ``budget_min`` minutes of training."""

    budget_min: float
    steps: int  # the steps it made (the default's 5,000-step cap may end it before its budget)
    minutes: float  # training minutes it ran (the training thread's CPU time)
    tokens: int
    below_left_min: float | None  # minutes until the held-out loss first went below "uses the word before"
    below_both_min: float | None  # ... below "uses both neighbours" (None: not in this run)
    final_loss: float  # the page's held-out loss at the end
    best_rank: int  # the best rank of PROBE's word at any evaluation (1 = first guess)
    best_rank_min: float
    final_rank: int
    top5_min: float | None  # minutes until PROBE's word first entered the top 5 (None: never)
    final_top5: tuple[str, ...]  # the model's top 5 at PROBE's [MASK] at the end


DEFAULT_RUN = MeasuredRun(budget_min=5, steps=4921, minutes=5.0, tokens=5039104, below_left_min=1.7,
                          below_both_min=None, final_loss=5.09, best_rank=311, best_rank_min=5.0, final_rank=311,
                          top5_min=None, final_top5=("well", "known", "africa", "located", "asia"))
LONGER_RUN = MeasuredRun(budget_min=30, steps=38940, minutes=30.0, tokens=39874560, below_left_min=2.0,
                         below_both_min=5.0, final_loss=4.17, best_rank=42, best_rank_min=8.0, final_rank=225,
                         top5_min=None, final_top5=("present", "s", "italy", "brazil", "china"))

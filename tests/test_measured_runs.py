"""What the Pretrain tab says more training gives: measured figures that describe today's defaults and corpus,
and the steps turned into minutes at the learner's own run's speed."""

from __future__ import annotations

import re

from bertdemo.pretrain import measured
from bertdemo.pretrain.budget import clock_text
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import RunSnapshot
from bertdemo.viz import run_curves


def test_the_measured_runs_describe_the_default_recipe_and_the_pages_probe():
    defaults = TrainConfig()
    assert measured.PROBE == (defaults.monitor.probe_text, defaults.monitor.probe_expected)
    assert measured.DEFAULT_RUN.budget_min * 60 == defaults.optim.time_budget_s
    assert 0 < measured.DEFAULT_RUN.steps <= defaults.optim.steps < measured.LONGER_RUN.steps
    assert measured.LONGER_RUN.budget_min > measured.DEFAULT_RUN.budget_min
    for run in (measured.DEFAULT_RUN, measured.LONGER_RUN):
        assert run.minutes <= run.budget_min and run.tokens > 0 and run.best_rank <= run.final_rank


def test_what_the_page_says_of_the_corpus_is_what_the_corpus_holds():
    from bertdemo.pretrain.data import wiki_summaries

    docs = wiki_summaries()
    text = " ".join(docs).lower()
    assert (len(docs), len(text.split())) == (measured.CORPUS_DOCUMENTS, measured.CORPUS_WORDS)
    assert text.count(measured.FACT_PHRASE.lower()) == measured.FACT_PHRASE_COUNT
    assert len(re.findall(rf"\b{measured.PROBE[1]}\b", text)) == measured.WORD_COUNT


def test_the_longer_runs_steps_are_turned_into_minutes_at_this_runs_own_speed():
    steps = measured.LONGER_RUN.steps
    # 8,192 tokens a second at 1,024 tokens a step (batch 8 x 128): 8 steps a second
    snap = RunSnapshot(steps=[10, 20], tokens=[10_240, 20_480], tokens_per_s=8_192.0)
    assert run_curves.steps_per_second(snap) == 8.0
    text = run_curves.more_training_markdown(snap)
    assert f"At this run's speed (8.0 steps a second) {steps:,} steps take {clock_text(steps / 8)} of training." in text
    before = run_curves.more_training_markdown(None)
    assert f"Once a run is under way, this says how long {steps:,} steps take at its speed." in before
    assert f"| 30 min | {steps:,} (" in before and "capital of France” 0 times" in before
    assert "What more training gives" in run_curves.timeline_markdown(None)

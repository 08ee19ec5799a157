"""An own-data run's preparation inside its time budget: reading every example's [CLS] vector from the frozen start
took 69 s of a 72-second budget for the heaviest legal CSV (5,000 texts), and the server's cap stopped the run
before fine-tuning with no model. Reading now takes at most READ_SHARE of the budget, in an order whose every
prefix keeps each label's share (copies of one text together); the examples read are the ones used, and the result
and the page say how many of how many. A stop (the cap's included) ends the preparation between two chunks."""

from __future__ import annotations

from collections import Counter

import torch
from transformers import BertModel

from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.own_eval import split_and_finetune
from bertdemo.finetune.own_reading import PREPARING_STOPPED, READ_CHUNK, READ_SHARE, reading_order
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status
from bertdemo.viz.own_data import result_markdown
from tests.helpers import FakeClock, tiny_finetune_config
from tests.test_own_finetune import word_data


def test_every_prefix_of_the_reading_order_keeps_each_labels_share_and_copies_together():
    labels = [0] * 300 + [1] * 100 + [2] * 20  # shares 5/7, 5/21, 1/21
    groups = [i - i % 2 if i < 300 else i for i in range(420)]  # label 0's texts come in pairs of copies
    order = reading_order(labels, groups, seed=3)
    assert sorted(row for rows in order for row in rows) == list(range(420))
    assert all(len(rows) == 2 for rows in order if rows[0] < 300)  # a pair of copies is read together
    read: list[int] = []
    for rows in order:
        read.extend(rows)
        counts = Counter(labels[i] for i in read)
        for label, share in ((0, 300 / 420), (1, 100 / 420), (2, 20 / 420)):
            assert abs(counts[label] - share * len(read)) <= 2, (len(read), counts)
    assert reading_order(labels, groups, seed=3) == order and reading_order(labels, groups, seed=4) != order


def _one_second_a_batch(clock: FakeClock):
    """Every forward of a BERT encoder in eval mode (a batch of [CLS] vectors read, or predicted) moves the clock 1 s."""
    def tick(module, args, output):
        if isinstance(module, BertModel) and not module.training:
            clock.now += 1.0
    return torch.nn.modules.module.register_module_forward_hook(tick)


def test_a_run_reads_the_examples_its_budget_has_time_for_and_says_how_many_of_how_many(tiny_mlm_dir, tmp_path):
    """A 10-second budget gives reading 3 s: a chunk of 128 examples is two batches (2 s), so two chunks are read
    (the first alone is under the 200 a split needs), 256 of the 800 examples, each label's half."""
    clock, metrics = FakeClock(), FinetuneMetrics()
    cfg = tiny_finetune_config(tiny_mlm_dir, batch_size=16, epochs=1, eval_every=1000, time_budget_s=10)
    hook = _one_second_a_batch(clock)
    try:
        status, result = split_and_finetune(cfg, word_data(400), metrics, RunControl(), tmp_path / "model",
                                            clock=clock)
    finally:
        hook.remove()
    assert READ_SHARE * 10 == 3.0 and READ_CHUNK == 128
    assert status == Status.FINISHED
    assert result["sample"] == {"used": 256, "given": 800, "read_s": 3.0, "budget_s": 10}
    assert result["examples"] == 256 and sum(result["sizes"].values()) == 256
    assert result["counts"] == {"fruit": 128, "vehicle": 128}
    said = "Used 256 of the 800 examples (a seeded sample keeping each label's share)"
    assert metrics.snapshot().message.startswith(said)
    shown = result_markdown(result, "r")
    assert "**Used 256 of the 800 examples** (a seeded sample keeping each label's share)" in shown
    # the split's table fits a phone: short row names, what each is (and its C) in a line under it
    assert "| frozen [CLS] + LR |" in shown and "| bag of words |" in shown
    assert f"regression (the paper's feature-based approach; C {result['frozen_features']['C']:g}, chosen" in shown


def test_without_a_time_budget_every_example_is_read(tiny_mlm_dir, tmp_path):
    cfg = tiny_finetune_config(tiny_mlm_dir, batch_size=16, epochs=1, eval_every=1000, time_budget_s=0)
    clock = FakeClock()
    hook = _one_second_a_batch(clock)
    try:
        _, result = split_and_finetune(cfg, word_data(150), FinetuneMetrics(), RunControl(), None, clock=clock)
    finally:
        hook.remove()
    assert result["sample"] is None and result["examples"] == 300 and sum(result["sizes"].values()) == 300


def test_a_stop_while_the_examples_are_read_ends_the_run_at_once_without_a_model(tiny_mlm_dir, tmp_path):
    """The cap's stop (or the learner's) comes after the first chunk: the run ends there, not after reading them all
    and scoring the landmarks, and says it stopped while preparing."""
    control, metrics, chunks = RunControl(), FinetuneMetrics(), []
    cfg = tiny_finetune_config(tiny_mlm_dir, batch_size=16, epochs=1, eval_every=1000)

    def tick(module, args, output):
        if isinstance(module, BertModel) and not module.training:
            chunks.append(1)
            if len(chunks) == 2:  # the first chunk's second batch
                control.stop_event.set()

    hook = torch.nn.modules.module.register_module_forward_hook(tick)
    try:
        status, result = split_and_finetune(cfg, word_data(400), metrics, control, tmp_path / "model")
    finally:
        hook.remove()
    assert status == Status.STOPPED and len(chunks) == 2  # 800 examples: 14 batches had it read them all
    assert result["prepared"] is False and result["kept"] is None and result["steps"] == 0
    assert not (tmp_path / "model").exists()
    assert metrics.snapshot().message == PREPARING_STOPPED
    assert PREPARING_STOPPED in result_markdown(result, "run-1")

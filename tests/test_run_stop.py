"""Stop takes effect within seconds, also in the middle of a long evaluation."""

from __future__ import annotations

import json
import time

from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain import TrainConfig
from bertdemo.pretrain.run import RunManager


def test_stop_during_a_long_first_evaluation_ends_the_run_within_seconds(tmp_path):
    corpus = tmp_path / "wiki.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:200]), encoding="utf-8")
    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                intermediate_size=64, corpus=str(corpus), seq_len=32, batch_size=8, steps=100,
                                eval_batches=1_000_000, checkpoint_every=0, cache_dir=str(tmp_path / "cache"),
                                runs_dir=str(tmp_path / "runs"), device="cpu", num_threads=1)
    run = RunManager(tmp_path / "runs").start(cfg)
    deadline = time.monotonic() + 60
    while run.status != "running":  # the first evaluation (a million batches) starts right after this
        assert time.monotonic() < deadline and run.active, run.snapshot().message
        time.sleep(0.02)
    time.sleep(0.5)
    run.stop()
    assert run.join(15), "Stop did not end a run that was evaluating"  # a full evaluation would take hours
    assert run.status == "stopped"
    assert run.snapshot().step == 0 and run.snapshot().eval_steps == []  # the cut evaluation is not reported

"""What the Pretrain tab calls a run in its curves and its compare list (issue 54, walk D11): runs are told apart
by what a learner can read — their objective in words and when they started — not by the last digits of their
id ("03-bert-tiny", "04-bert-tiny"); and a run that has ended is not called "live"."""

from __future__ import annotations

from pathlib import Path

from bertdemo.pretrain import checkpoints
from bertdemo.pretrain.budget import SpeedBook
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.metrics import RunSnapshot
from bertdemo.pretrain.run_folders import RunRecord, differing_labels
from bertdemo.settings import ServerSettings
from tests.helpers import run_services, wiki_corpus_file

SMALL = {"preset": "custom", "num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2,
         "intermediate_size": 64, "seq_len": 32, "batch_size": 8, "steps": 4, "log_every": 2, "eval_every": 2,
         "eval_batches": 1, "checkpoint_every": 0}


def _record(run_id: str, **settings: object) -> RunRecord:
    return RunRecord(run_id, Path(), TrainConfig.from_flat(preset="bert-tiny", **settings).flat(), RunSnapshot())


def test_the_twins_are_named_by_their_objective_and_start_not_by_two_digits_of_their_id():
    mlm = _record("20261201-222904-bert-tiny")
    ltr = _record("20261201-223003-bert-tiny", objective="ltr")
    labels = differing_labels([ltr, mlm])
    assert labels == {ltr.run_id: "left-to-right LM · started 22:30:03",
                      mlm.run_id: "masked LM · started 22:29:04"}
    # runs that differ in another setting say it as before, after their start; on different days, with the day
    fast, slow = _record("20261130-090000-bert-tiny", lr=0.003), _record("20261201-101500-bert-tiny", lr=0.001)
    assert differing_labels([fast, slow]) == {fast.run_id: "started 2026-11-30 09:00:00 (lr=0.003)",
                                              slow.run_id: "started 2026-12-01 10:15:00 (lr=0.001)"}
    # the compare list names the objective in words too
    assert checkpoints.experiment_label(ltr.settings) == "bert-tiny · left-to-right LM"


def test_a_run_that_has_ended_is_not_called_live(tmp_path):
    _, service, _ = run_services(ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache"),
                                    speeds=SpeedBook(lambda device: 1e9))
    corpus = wiki_corpus_file(tmp_path / "corpus")
    run = service.start({**SMALL, "corpus": corpus})
    assert run.join(120) and run.status == "finished", run.snapshot().message
    ((label, snap),) = service.compared([], "live run")
    assert "live" not in label and label.startswith("started ") and snap.run_id == run.run_id

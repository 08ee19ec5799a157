"""How a fine-tuning run ends: a run that says "finished" has its model in place already (a page or an API client
told so loads ``ft:<id>`` at once), and a run on a learner's own data that is stopped keeps what it has — the best
epoch scored on validation (with its test score; stopped while an epoch is scored, that epoch), or, stopped before
any epoch was scored, its data and a result that says there is no score; a cross-validation the folds it scored —
listed to its owner and kept when the server starts again."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.own_eval import split_and_finetune
from bertdemo.finetune.own_export import model_zip
from bertdemo.finetune.own_run import RESULT_FILE
from bertdemo.finetune.run import MODEL_DIRNAME
from bertdemo.runs.control import RunControl
from bertdemo.runs.status import Status
from bertdemo.settings import ServerSettings
from tests.helpers import name_task, run_services, tiny_finetune_config, word_task
from tests.test_own_finetune import word_data

SPLIT = dict(batch_size=16, epochs=3, eval_every=1000)  # 200 examples: 140 to train on, 8 steps an epoch


def _stopping_at(step: int) -> tuple[RunControl, Callable[[int], None]]:
    control = RunControl()
    return control, lambda at: control.stop_event.set() if at >= step else None


def test_a_split_run_stopped_after_an_epoch_keeps_that_epochs_weights_and_scores_them_on_test(tiny_mlm_dir, tmp_path):
    control, on_step = _stopping_at(11)  # epoch 1 scored at step 8; the stop comes in epoch 2
    status, result = split_and_finetune(tiny_finetune_config(tiny_mlm_dir, **SPLIT), word_data(100), FinetuneMetrics(),
                                        control, tmp_path / "model", on_step=on_step)
    assert status == Status.STOPPED and result["stopped"] is True
    chosen = result["chosen"]
    assert [e for e, _ in chosen["curve"]] == [1] and chosen["epoch"] == 1 and chosen["step"] == 8
    assert result["finetuned"]["validation"] == chosen["score"]  # the kept weights are epoch 1's
    assert 0 <= result["finetuned"]["test"] <= 1
    assert (tmp_path / "model" / "config.json").is_file()


def test_a_split_run_stopped_before_its_first_epoch_keeps_no_model_and_reports_no_score(tiny_mlm_dir, tmp_path):
    control, on_step = _stopping_at(3)
    metrics = FinetuneMetrics()
    status, result = split_and_finetune(tiny_finetune_config(tiny_mlm_dir, **SPLIT), word_data(100), metrics,
                                        control, tmp_path / "model", on_step=on_step)
    assert status == Status.STOPPED and result["chosen"] is None
    assert result["finetuned"] == {"validation": None, "test": None}
    assert not (tmp_path / "model").exists()
    assert "no score to report" in metrics.snapshot().message


def _stop_while_scoring(monkeypatch) -> RunControl:
    """A control whose stop comes while the run scores held-out examples (its first prediction): a signal that
    finds an own-data run evaluating."""
    from bertdemo.finetune import own_eval

    control, predict = RunControl(), own_eval.Sentences.predict

    def predicting(self, *args, **kwargs):
        control.stop_event.set()
        return predict(self, *args, **kwargs)

    monkeypatch.setattr(own_eval.Sentences, "predict", predicting)
    return control


def test_a_split_run_stopped_while_it_scores_an_epoch_keeps_that_epoch(tiny_mlm_dir, tmp_path, monkeypatch):
    control = _stop_while_scoring(monkeypatch)
    status, result = split_and_finetune(tiny_finetune_config(tiny_mlm_dir, **SPLIT), word_data(100), FinetuneMetrics(),
                                        control, tmp_path / "model")
    assert status == Status.STOPPED and result["stopped"] is True
    assert (result["chosen"]["epoch"], result["chosen"]["step"]) == (1, 8)  # the epoch being scored is kept
    assert 0 <= result["finetuned"]["test"] <= 1
    assert (tmp_path / "model" / "config.json").is_file()


def test_a_cross_validation_stopped_while_it_scores_a_fold_reports_that_fold(tiny_mlm_dir, tmp_path, monkeypatch):
    from bertdemo.finetune.own_eval import cross_validate

    control, metrics = _stop_while_scoring(monkeypatch), FinetuneMetrics()
    status, result = cross_validate(tiny_finetune_config(tiny_mlm_dir, batch_size=16, epochs=1), word_data(20),
                                    metrics, control, tmp_path / "model")
    assert status == Status.STOPPED and result["folds_done"] == 1 and len(result["accuracy"]["finetuned"]) == 1
    assert metrics.snapshot().message == f"Stopped after 1 of {result['folds']} folds; no model was kept."
    assert not (tmp_path / "model").exists()


def test_a_split_run_its_budget_ends_before_it_learned_keeps_the_frozen_classifier_and_says_so(tiny_mlm_dir, tmp_path):
    """The run's time budget holds the landmarks too (scored first): the heaviest legal paste under a public cap
    spent it before fine-tuning's first epoch and kept nothing. Fine-tuning that took too few steps is not scored;
    the frozen start's regression, trained and scored on the same split, is the model kept."""
    from bertdemo.viz.own_data import result_markdown

    metrics = FinetuneMetrics()
    status, result = split_and_finetune(tiny_finetune_config(tiny_mlm_dir, **SPLIT, time_budget_s=0.001),
                                        word_data(100), metrics, RunControl(), tmp_path / "model")
    assert status == Status.FINISHED and result["cut_short"]["of"] == 24 and result["cut_short"]["steps"] < 2
    assert result["finetuned"] == {"validation": None, "test": None} and result["chosen"] is None
    assert result["kept"] == "frozen_features" and 0 <= result["frozen_features"]["test"] <= 1
    assert (tmp_path / "model" / "config.json").is_file()
    message = metrics.snapshot().message
    assert "steps ran before the time budget ended: too few to mean anything" in message
    assert "Kept instead: the frozen start with a logistic regression" in message
    shown = result_markdown(result, "run-1")
    assert "**Fine-tuning took only" in shown and "of its 24 steps**" in shown and "fine-tuning was not scored" in shown
    assert "With this few examples that is usual" not in shown  # the budget cut it, not the number of examples


def test_a_stopped_own_run_stays_listed_to_its_owner_and_survives_a_restart(tiny_mlm_dir, tmp_path):
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", public=True,
                                    admin_token="admin-secret", offline=True, device="cpu")
    _runs, _, service = run_services(settings)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, **SPLIT), "tok-a", visitor="10.0.0.1", own=word_data(100))
    run.stop()  # at once: stopped before any epoch was scored
    assert run.join(300) and run.status == Status.STOPPED, run.snapshot().message
    assert json.loads((run.run_folder / RESULT_FILE).read_text())["chosen"] is None
    leftover = service.root / "20260101-000000-ft-own-x"  # a run that saved nothing at all
    leftover.mkdir()
    _, _, restarted = run_services(settings)
    assert restarted.clean_leftovers() == [leftover.name]
    assert restarted.own_ids("tok-a") == [run.run_id] and restarted.own_ids("tok-b") == []
    with pytest.raises(ValueError, match="kept no model"):
        model_zip(restarted.own_folder(run.run_id, "tok-a"), tmp_path / "out", run.run_id)
    assert not (run.run_folder / MODEL_DIRNAME).exists()


class _Watched(FinetuneMetrics):
    """Metrics that note, at the update saying the run finished, whether its saved model was in place."""

    def __init__(self) -> None:
        super().__init__()
        self.model_at_finish: list[bool] = []

    def update(self, **fields) -> None:
        if fields.get("status") == Status.FINISHED:
            checkpoint = self.snapshot().checkpoint
            self.model_at_finish.append(bool(checkpoint) and (Path(checkpoint) / "config.json").is_file())
        super().update(**fields)


@pytest.mark.parametrize("task", ["topic", "names", "own"])
def test_a_run_says_finished_only_once_its_model_is_saved(tiny_mlm_dir, tmp_path, monkeypatch, task):
    watched: list[_Watched] = []

    def made(*args, **kwargs):
        watched.append(_Watched())
        return watched[-1]

    monkeypatch.setattr("bertdemo.finetune.run.FinetuneMetrics", made)
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", offline=True,
                                    device="cpu")
    _runs, _, service = run_services(settings)
    cfg = tiny_finetune_config(tiny_mlm_dir, epochs=1, eval_every=1000, task=task if task != "own" else "topic")
    starts = {"topic": lambda: service.start(cfg, task_loader=lambda: word_task(20)),
              "names": lambda: service.start(cfg, task_loader=name_task),
              "own": lambda: service.start(cfg, own=word_data(4))}
    run = starts[task]()
    assert run.join(300) and run.status == Status.FINISHED, run.snapshot().message
    assert watched and watched[-1].model_at_finish == [True]


@pytest.mark.parametrize("task", ["topic", "names"])
def test_a_run_its_time_budget_ends_before_it_learned_says_so_and_reports_no_test_score(tiny_mlm_dir, task):
    """A fake clock moves 10 s for every forward in eval mode and 4 s for every training forward: a 30-second
    budget leaves room for a few steps of a 40-epoch run, under a quarter of one epoch."""
    from transformers import BertForSequenceClassification, BertForTokenClassification

    from bertdemo.finetune.engine import run_finetune
    from bertdemo.finetune.token_engine import run_token_finetune
    from tests.helpers import FakeClock

    clock = FakeClock()

    def tick(module, args, output):
        if isinstance(module, BertForSequenceClassification | BertForTokenClassification):
            clock.now += 4.0 if module.training else 10.0

    hook = torch.nn.modules.module.register_module_forward_hook(tick)
    try:
        metrics = FinetuneMetrics()
        cfg = tiny_finetune_config(tiny_mlm_dir, task=task, epochs=40, eval_every=1000, time_budget_s=30)
        run = run_token_finetune if task == "names" else run_finetune
        status = run(cfg, name_task(400) if task == "names" else word_task(200), metrics, RunControl(), None,
                     clock=clock)
    finally:
        hook.remove()
    snap = metrics.snapshot()
    assert status == Status.FINISHED and snap.step < snap.total_steps / 40 / 4, (snap.step, snap.total_steps)
    assert "too few to mean anything, so the run is not scored on the test split" in snap.message, snap.message
    assert math.isnan(snap.test_accuracy) and math.isnan(snap.test_macro_f1)
    assert "Test word-level F1" not in snap.message

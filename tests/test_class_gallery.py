"""The teacher's gallery draws the class's fine-tuning runs as curves too: a member's fine-tuning run, live and
once ended, overlaid under their nickname with its train loss and validation accuracy taken from the run's own
recorded history; a run of nobody in the class is not drawn."""

from __future__ import annotations

import json

from bertdemo.classroom.report import class_report
from bertdemo.context import AppContext
from bertdemo.ui.class_gallery import finetune_gallery_spec
from bertdemo.viz.finetune import gallery_spec
from tests.helpers import tiny_finetune_config, wait_until
from tests.test_finetune_engine import word_task


def _traces(spec: dict) -> dict:
    return {t["name"]: t for t in spec["data"]}


def test_a_members_fine_tuning_runs_are_drawn_in_the_teachers_gallery(tmp_path, tiny_mlm_dir):
    ctx = AppContext.for_tests(tmp_path, public=True)
    new = ctx.classes.store.create_class("Year 12")
    ada = ctx.classes.visitor_key(ctx.classes.store.join(new.join_code, "Ada").token)

    def start(token: str, visitor: str, epochs: int, examples: int = 40):
        cfg = tiny_finetune_config(tiny_mlm_dir, epochs=epochs, eval_every=5)
        return ctx.runs.start_or_queue(token, visitor, "fine-tuning run", lambda: ctx.finetune_runs.start(
            cfg, token, visitor=visitor, task_loader=lambda: word_task(examples)))

    try:
        assert finetune_gallery_spec(ctx, class_report(ctx.classes.store, new.teacher_key)) is None  # nothing yet
        live = start("ada-0", ada, epochs=20, examples=2000)  # stopped by the test
        wait_until(lambda: len(live.snapshot().eval_steps) >= 2 or not live.active, timeout=180,
                   what="two evaluations of the live run")
        report = class_report(ctx.classes.store, new.teacher_key)
        assert report.runs == [("Ada", live.run_id, "finetune")]
        drawn = _traces(finetune_gallery_spec(ctx, report))  # the live run, as it is now
        assert len(drawn[f"Ada: {live.run_id}"]["x"]) >= 2
        live.stop()
        assert live.join(120)

        ended = start("ada-1", ada, epochs=2)
        assert ended.join(180) and ended.status == "finished"
        walk_in = start("walk-in", "198.51.100.5", epochs=1)  # no member: recorded in no class
        assert walk_in.join(180)
        report = class_report(ctx.classes.store, new.teacher_key)
        spec = finetune_gallery_spec(ctx, report)
        traces = _traces(spec)
        saved = ctx.finetune_runs.load(ended.run_id)  # the run's own saved history
        assert saved.val_accuracy and saved.eval_steps[-1] == ended.snapshot().eval_steps[-1]
        score = traces[f"Ada: {ended.run_id}"]
        assert score["y"] == [round(v, 4) for v in saved.val_accuracy] and score["customdata"] == saved.eval_steps
        loss = traces[f"Ada: {ended.run_id}: train loss"]
        assert loss["y"] == [round(v, 4) for v in saved.train_loss_smooth] and len(loss["x"]) == len(saved.steps)
        assert f"Ada: {live.run_id}: train loss" in traces  # both of Ada's runs overlaid
        assert walk_in.run_id not in json.dumps(spec)
    finally:
        ctx.runs.shutdown(timeout=60)
        ctx.classes.close()


def test_a_names_run_is_drawn_by_its_f1_of_name():
    from bertdemo.finetune.metrics import FinetuneSnapshot

    snap = FinetuneSnapshot(task="names", steps=[5, 10], wall_s=[1.0, 2.0], train_loss=[0.9, 0.5],
                            eval_steps=[5, 10], eval_wall_s=[1.0, 2.0], val_accuracy=[0.95, 0.97],
                            val_macro_f1=[0.2, 0.6])
    score = _traces(gallery_spec([("Bob: n1", snap)]))["Bob: n1"]
    assert score["y"] == [0.2, 0.6] and "F1 of NAME" in score["hovertemplate"]  # not the flattering word accuracy

"""Fine-tuning as a run kind of the run service: one slot shared with pretraining, the owner's token, the
public caps and quota, names the pages use (``ft:<id>``), no server path in what a visitor sees."""

from __future__ import annotations

import pytest

from bertdemo.runs.service import NOT_YOURS, RunAction
from bertdemo.settings import ServerSettings
from bertdemo.viz.finetune import status_markdown
from tests.helpers import run_services, tiny_finetune_config, tiny_run_config, wait_until, word_task


def _service(tmp_path, public: bool = False):
    """(the shared run service, the pretraining kind, the fine-tuning kind)."""
    settings = ServerSettings.build(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", public=public,
                                    admin_token="admin-secret", offline=True, device="cpu")
    return run_services(settings)


def test_a_finetuning_run_holds_the_slot_and_saves_a_model_the_pages_name(tiny_mlm_dir, corpus, tmp_path):
    runs, pretraining, service = _service(tmp_path)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, epochs=20), task_loader=lambda: word_task(200))
    try:
        wait_until(lambda: run.snapshot().step >= 1 or not run.active, timeout=120, message=lambda: run.snapshot().message)
        with pytest.raises(ValueError, match="A fine-tuning run is already"):
            pretraining.start(tiny_run_config(corpus, tmp_path))  # pretraining waits for the slot
        with pytest.raises(ValueError, match="A fine-tuning run is already"):
            service.start(tiny_finetune_config(tiny_mlm_dir), task_loader=lambda: word_task(200))
        status = runs.status()
        assert status["kind"] == "finetune" and status["task"] == "topic"
        assert pretraining.snapshot() is None  # the Pretrain tab shows no fine-tuning run as its own
        runs.control(RunAction.STOP)
        assert run.join(120) and run.status == "stopped"
    finally:
        run.stop()
        run.join(60)
    status = service.status()
    assert status["checkpoint"] == f"ft:{run.run_id}"
    assert "init_path" not in status["settings"] and str(tmp_path) not in repr(status)  # no server path shown
    assert service.ids() == [run.run_id]
    assert service.model(f"ft:{run.run_id}").endswith("model")
    assert service.load(run.run_id).val_accuracy == status["val_accuracy"]
    with pytest.raises(ValueError, match="no fine-tuned model"):
        service.model("ft:../../etc")


def test_public_finetuning_obeys_the_owner_the_cap_and_the_quota(tiny_mlm_dir, tmp_path):
    runs, _, service = _service(tmp_path, public=True)
    caps = service.settings.public_limits
    with pytest.raises(ValueError, match="Unknown fine-tuning setting"):
        service.start({"init": "embedded", "init_path": "/etc"}, "secret-a")
    with pytest.raises(ValueError, match="There is no run 'nope/checkpoint' on this server"):
        service.start({"init": "run:nope/checkpoint"}, "secret-a")
    run = service.start(tiny_finetune_config(tiny_mlm_dir, epochs=20, time_budget_s=0), "secret-a", visitor="10.0.0.1",
                                 task_loader=lambda: word_task(200))
    try:
        # capped with room for loading, the last evaluation and saving; never a GPU by request
        assert run.cfg.time_budget_s == caps.training_budget_s < caps.max_seconds and run.cfg.device == "cpu"
        said = (f"Time budget {caps.training_budget_s:g} s (asked: none): this server stops a run at "
                f"{caps.max_minutes:g} minutes")  # the change is said, for the whole run
        assert service.status(run)["note"].startswith(said) and said in status_markdown(run.snapshot())
        wait_until(lambda: run.snapshot().step >= 1 or not run.active, timeout=120, message=lambda: run.snapshot().message)
        for action in RunAction:
            with pytest.raises(ValueError, match=NOT_YOURS):
                runs.control(action, "someone-else")
        with pytest.raises(ValueError, match="Only the browser that started"):
            service.delete(run.run_id, "someone-else")
        runs.control(RunAction.STOP, "admin-secret")
        assert run.join(120) and run.status == "stopped"
    finally:
        run.stop()
        run.join(60)
    for _ in range(caps.max_runs_per_visitor - 1):
        extra = service.start(tiny_finetune_config(tiny_mlm_dir, epochs=0.1), "secret-a", visitor="10.0.0.1",
                                       task_loader=lambda: word_task(200))
        assert extra.join(120)
    with pytest.raises(ValueError, match="the most one visitor may"):  # fine-tuning runs count in the quota
        service.start(tiny_finetune_config(tiny_mlm_dir), "another-token", visitor="10.0.0.1", task_loader=lambda: word_task(200))
    service.delete(run.run_id, "secret-a")
    assert run.run_id not in service.ids()


def test_a_fine_tuning_run_that_never_saved_is_cleaned_at_start_and_a_saved_one_kept(tiny_mlm_dir, tmp_path):
    runs, _, service = _service(tmp_path)
    run = service.start(tiny_finetune_config(tiny_mlm_dir, epochs=0.1), task_loader=lambda: word_task(20))
    assert run.join(120) and run.status == "finished"
    (service.runs_dir / ".finetune" / "20260101-000000-ft-embedded").mkdir()  # killed before its end: no model
    (service.runs_dir / ".finetune" / "my-notes").mkdir()  # a folder a person put there: not the server's
    assert runs.clean_leftovers() == ["20260101-000000-ft-embedded"]
    assert (service.runs_dir / ".finetune" / "my-notes").is_dir()
    assert service.ids() == [run.run_id]


def test_a_run_that_fails_on_the_disk_names_no_server_folder_in_its_shared_status(tiny_mlm_dir, tmp_path):
    _, _, service = _service(tmp_path, public=True)

    def full_disk():
        raise OSError(28, "No space left on device", str(tmp_path / "secret" / "model.safetensors"))

    run = service.start(tiny_finetune_config(tiny_mlm_dir), "token-a", task_loader=full_disk)
    assert run.join(60) and run.status == "failed"
    assert service.status()["message"] == (
        "Fine-tuning failed: OSError: [Errno 28] No space left on device: '<folder>'")

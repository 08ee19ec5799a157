"""The training thread runs at a lower CPU priority than the page's threads (Linux: per-thread nice)."""

import os
import sys
import threading

import pytest

from bertdemo.pretrain import priority, run as run_module

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_only_the_calling_thread_is_lowered():
    main_before = _nice(threading.get_native_id())
    seen = {}

    def body():
        tid = threading.get_native_id()
        before = _nice(tid)
        seen["changed"] = priority.lower_this_thread()
        seen["delta"] = _nice(tid) - before
        seen["expected"] = min(19, before + priority.BACKGROUND_NICE) - before

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen["changed"] is True and seen["delta"] == seen["expected"] > 0
    assert _nice(threading.get_native_id()) == main_before


def test_a_run_trains_at_the_lower_priority(tmp_path, monkeypatch):
    from tests.test_pretrain_run import tiny_cfg

    seen = {}

    def fake_training(cfg, **kwargs):
        seen["nice"] = _nice(threading.get_native_id())
        return "finished"

    monkeypatch.setattr(run_module, "run_training", fake_training)
    base = _nice(threading.get_native_id())
    run = run_module.TrainingRun(tiny_cfg("wiki", str(tmp_path / "cache"), tmp_path), tmp_path)
    run.start()
    run.join(30)
    assert seen["nice"] == min(19, base + priority.BACKGROUND_NICE)

"""The training thread runs at a lower CPU priority than the page's threads (Linux: per-thread nice)."""

import os
import sys
import threading

import pytest

from bertdemo.pretrain import trainer
from bertdemo.pretrain.run import TrainingRun
from bertdemo.runs import priority as hardware
from bertdemo.runs.slot import RunManager
from tests.helpers import tiny_run_config

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_only_the_calling_thread_is_lowered():
    main_before = _nice(threading.get_native_id())
    seen = {}

    def body():
        tid = threading.get_native_id()
        before = _nice(tid)
        seen["changed"] = hardware.lower_this_thread()
        seen["delta"] = _nice(tid) - before
        seen["expected"] = min(19, before + hardware.BACKGROUND_NICE) - before

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen["changed"] is True and seen["delta"] == seen["expected"] > 0
    assert _nice(threading.get_native_id()) == main_before


def test_a_run_trains_at_the_lower_priority(tmp_path, monkeypatch):
    seen = {}

    def fake_training(cfg, **kwargs):
        seen["nice"] = _nice(threading.get_native_id())
        return "finished"

    monkeypatch.setattr(trainer, "run_training", fake_training)  # the run's thread imports it from there
    base = _nice(threading.get_native_id())
    run = RunManager(tmp_path).start_run(TrainingRun(tiny_run_config("wiki", tmp_path), tmp_path))
    assert run.join(30)
    assert seen["nice"] == min(19, base + hardware.BACKGROUND_NICE)

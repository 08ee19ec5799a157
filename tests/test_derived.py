"""LoadedModel.derived: what is made from a loaded model (its int8 copy, its NSP head) is built once,
even when requests ask at the same time, and belongs to that loaded model only."""

from __future__ import annotations

import dataclasses
import threading
import time

from bertdemo.models.store import load_masked_lm


def test_built_once_under_concurrent_requests_and_per_loaded_model(tiny_mlm_dir):
    loaded = load_masked_lm(str(tiny_mlm_dir), "cpu")
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.05)  # slow enough for the other threads to arrive while it builds
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(loaded.derived("thing", build))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    other = dataclasses.replace(loaded)  # another LoadedModel (e.g. the int8 variant) has its own
    assert other.derived("thing", object) is not got[0]

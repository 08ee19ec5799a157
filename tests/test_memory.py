"""The memory budget: every cache counted in bytes under one accounting, never over it, the least recently used
entry of any cache evicted first, builds done once and never leaving a lock behind; models counted by their
parameters and buffers, and the caches of a model leaving the store emptied."""

from __future__ import annotations

import gc
import json
import random
import sys
import threading

import numpy as np
import pytest
import torch
from transformers import BertForMaskedLM

from bertdemo.finetune.features import ActivationCache
from bertdemo.finetune.lab import BASELINES_FILE, FinetuneLab
from bertdemo.memory import MemoryBudget, release_freed_memory, size_of
from bertdemo.models.store import ModelStore
from tests.helpers import tiny_bert_config, wait_until


def test_many_entries_in_several_caches_never_exceed_the_budget_to_the_byte():
    budget = MemoryBudget(10_000)
    caches = [budget.cache("a"), budget.cache("b", max_bytes=4_000), budget.cache("c", max_entries=3)]
    rng = random.Random(0)
    for i in range(500):
        cache = rng.choice(caches)
        nbytes = rng.randint(1, cache.max_bytes)
        cache.put(i, f"value {i}", nbytes)
        assert i in cache  # the newest entry is always kept
        assert budget.held == sum(c.nbytes for c in caches) <= 10_000
        assert caches[1].nbytes <= 4_000 and len(caches[2]) <= 3
    assert budget.held_by() == {c.name: c.nbytes for c in caches}
    assert budget.held > 5_000  # it is used, not emptied at each insertion


def test_the_least_recently_used_entry_of_any_cache_goes_first():
    budget = MemoryBudget(1_000)
    first, second = budget.cache("first"), budget.cache("second")
    evicted = []
    first.on_evict = second.on_evict = lambda key, value: evicted.append(key)
    first.put("a", 1, 300)
    second.put("b", 2, 300)
    first.put("c", 3, 300)
    assert first.get("a") == 1  # "a" is used again: "b" is now the oldest
    second.put("d", 4, 300)
    assert evicted == ["b"] and first.keys() == ["c", "a"] and second.keys() == ["d"]
    first.put("e", 5, 700)  # room for 700: "c" then "a" go, oldest first; "d" still fits
    assert evicted == ["b", "c", "a"] and first.keys() == ["e"] and second.keys() == ["d"] and budget.held == 1_000


def test_a_cache_keeps_its_own_caps_within_the_budget():
    budget = MemoryBudget(1_000)
    small = budget.cache("small", max_bytes=500, max_entries=2)
    other = budget.cache("other")
    other.put("x", 0, 400)
    for key in "abc":
        small.put(key, key, 100)
    assert small.keys() == ["b", "c"] and other.keys() == ["x"]  # its third entry pushes its own oldest out
    small.put("d", "d", 450)
    assert small.keys() == ["d"] and budget.held == 850
    with pytest.raises(ValueError, match="needs 0.0 MB of memory, over the 0.0 MB this server keeps for small"):
        small.put("e", "e", 501)
    assert budget.held == 850  # refused before anything was evicted
    lenient = budget.cache("lenient", max_bytes=100, refuse_oversize=False)
    assert lenient.get_or_build("big", lambda: np.zeros(50)).shape == (50,)  # 400 bytes: returned, not kept
    assert "big" not in lenient and budget.held == 850


def test_a_failing_build_keeps_nothing_and_leaves_no_lock_behind():
    cache = MemoryBudget(1_000).cache("answers")

    def fail():
        raise ValueError("unknown word")

    for _ in range(3):
        with pytest.raises(ValueError, match="unknown word"):
            cache.get_or_build(("word", "zzz"), fail)
    assert cache._building == {} and len(cache) == 0 and cache.budget.held == 0
    assert cache.get_or_build(("word", "zzz"), lambda: "found") == "found"
    assert cache._building == {}


def test_concurrent_requests_for_one_key_build_it_once():
    cache = MemoryBudget(1_000_000).cache("indexes")
    release = threading.Event()
    builds, answers = [], []

    def build():
        builds.append(1)
        assert release.wait(30)
        return np.arange(10)

    threads = [threading.Thread(target=lambda: answers.append(cache.get_or_build("key", build))) for _ in range(8)]
    for t in threads:
        t.start()
    wait_until(lambda: "key" in cache._building and cache._building["key"][1] == 8, timeout=30,
               what="all eight requests waiting on the one build")
    release.set()
    for t in threads:
        t.join(30)
    assert builds == [1] and len(answers) == 8 and all(a is answers[0] for a in answers)
    assert cache._building == {} and cache.nbytes == 80


def test_a_cache_garbage_collected_gives_its_bytes_back():
    budget = MemoryBudget(1_000)
    cache = budget.cache("a variant's answers")
    cache.put("k", "v", 600)
    assert budget.held == 600
    del cache
    gc.collect()
    assert budget.held == 0 and budget.held_by() == {}


def test_sizes_count_arrays_tensors_and_a_models_parameters_and_buffers():
    model = BertForMaskedLM(tiny_bert_config())
    tensors = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
               for t in (*model.parameters(), *model.buffers())}
    assert size_of(model) == sum(tensors.values())  # the tied decoder weight counted once
    shared = torch.zeros(100)
    held = (shared, shared[:10], np.zeros(10, dtype=np.float32))  # a view shares its tensor's storage
    assert size_of(held) - sys.getsizeof(held) == 400 + 40


def test_the_model_store_counts_models_in_bytes_and_empties_an_evicted_models_caches(tiny_mlm_dir, tokenizer,
                                                                                     tmp_path):
    other = tmp_path / "other"
    BertForMaskedLM(tiny_bert_config()).save_pretrained(other)
    tokenizer.save_pretrained(other)
    probe = ModelStore(device="cpu")
    one = probe.get(str(tiny_mlm_dir))
    tiny_bytes = probe.budget.held
    assert tiny_bytes == size_of(one.model) + len(one.tokenizer) * 100
    budget = MemoryBudget(tiny_bytes * 3 // 2)  # one tiny model and some room: never two
    store = ModelStore(device="cpu", budget=budget)
    first = store.get(str(tiny_mlm_dir))
    assert first.remember(("question",), lambda: np.zeros(1000)).shape == (1000,)
    assert budget.held == tiny_bytes + size_of(np.zeros(1000))
    store.get(str(other))
    assert store.cached_names() == [str(other)] and budget.held == tiny_bytes
    assert first.remember(("question",), lambda: np.ones(1000)).sum() == 1000  # its caches keep nothing now
    assert budget.held == tiny_bytes
    assert store.get(str(tiny_mlm_dir)) is not first  # evicted, loaded again


def test_a_model_larger_than_the_budget_is_refused(tiny_mlm_dir):
    store = ModelStore(device="cpu", budget=MemoryBudget(1_000))
    with pytest.raises(ValueError, match="over the .* this server keeps for loaded models"):
        store.get(str(tiny_mlm_dir))
    assert store.cached_names() == [] and store.budget.held == 0


def test_features_draw_on_the_shared_budget(tiny_loaded):
    budget = MemoryBudget(10_000_000)
    features = ActivationCache(max_bytes=1_000_000, budget=budget)
    got = features.get(tiny_loaded.name, tiny_loaded.model, tiny_loaded.tokenizer, ["one text", "another text"])
    assert budget.held == features.nbytes == got.nbytes == 2 * 3 * 2 * 32 * 4
    assert features.get(tiny_loaded.name, tiny_loaded.model, tiny_loaded.tokenizer, ["one text", "another text"]) is got


def test_the_lab_answers_a_computed_landmark_while_another_computation_holds_its_lock(tmp_path):
    (tmp_path / BASELINES_FILE).write_text(json.dumps({"test_accuracy": {"majority": 0.25}}))
    lab = FinetuneLab(tmp_path, MemoryBudget(1_000_000))
    answers = []
    with lab._lock:  # a layer probe computing
        reader = threading.Thread(target=lambda: answers.append(lab.compute_baselines(None)))
        reader.start()
        reader.join(30)
        alive = reader.is_alive()
    reader.join(30)
    assert not alive and answers == [{"majority": 0.25}]


def test_freed_memory_can_be_handed_back():
    assert release_freed_memory() is True  # Linux with glibc, as the servers run

"""Concurrent Fill-Mask requests share one padded forward pass and each still gets its own answer."""

import threading
import time

import pytest

from bertdemo.explore import batching, fill_mask

TEXTS = [
    "the [MASK] sat on the mat .",
    "a [MASK] b",
    "she opened the door and [MASK] into the long dark [MASK] .",
    "play[MASK] all day",
]


def _hold_forwards(monkeypatch):
    """Make Fill-Mask's forwards wait for the returned gate; returns (gate, the sizes of the forwards begun)."""
    gate = threading.Event()
    real = fill_mask._shared_probs
    sizes = []

    def held(loaded, items):
        sizes.append(len(items))
        gate.wait(10)
        return real(loaded, items)

    monkeypatch.setattr(fill_mask, "_shared_probs", held)
    return gate, sizes


def test_concurrent_requests_are_batched_and_equal_alone(tiny_loaded, monkeypatch):
    alone = {t: fill_mask.predict(tiny_loaded, t, top_k=6) for t in TEXTS}
    gate, seen = _hold_forwards(monkeypatch)  # the first batch waits until the others have queued behind it
    results = {}

    def ask(text):
        results[text] = fill_mask.predict(tiny_loaded, text, top_k=6)

    first = threading.Thread(target=ask, args=("a [MASK] b",))
    first.start()
    while not seen:
        time.sleep(0.001)
    others = [threading.Thread(target=ask, args=(t,)) for t in TEXTS for _ in range(3)]
    for t in others:
        t.start()
    while sum(len(q) for q in fill_mask._SHARED._waiting.values()) < len(others):
        time.sleep(0.001)
    gate.set()
    for t in [first, *others]:
        t.join(10)
    assert seen == [1, len(others)]  # everything that queued went through in one padded forward
    for text, result in results.items():
        want = alone[text]
        for got_mask, want_mask in zip(result.masks, want.masks, strict=True):
            assert [c.id for c in got_mask.candidates] == [c.id for c in want_mask.candidates]
            assert [c.prob for c in got_mask.candidates] == pytest.approx([c.prob for c in want_mask.candidates],
                                                                          rel=1e-4, abs=1e-6)


def test_a_failing_item_gets_its_own_error():
    batcher = batching.MicroBatcher(max_batch=4)

    def halve(items):
        if any(i == 0 for i in items):
            raise ZeroDivisionError("zero")
        return [1 / i for i in items]

    assert batcher.submit("k", 4, halve) == 0.25
    jobs = [batching._Job(0, halve), batching._Job(2, halve)]
    batcher._busy.add("k")
    batcher._run("k", jobs)
    assert isinstance(jobs[0].error, ZeroDivisionError) and jobs[1].result == 0.5 and jobs[1].error is None
    assert "k" not in batcher._busy
    with pytest.raises(ValueError, match="at least 1"):
        batching.MicroBatcher(max_batch=0)


def test_batches_never_exceed_max_batch():
    batcher = batching.MicroBatcher(max_batch=3)
    gate = threading.Event()
    sizes = []

    def double(items):
        sizes.append(len(items))
        gate.wait(10)
        return [2 * i for i in items]

    out = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, batcher.submit("k", i, double))) for i in range(8)]
    threads[0].start()
    while not sizes:
        time.sleep(0.001)
    for t in threads[1:]:
        t.start()
    while sum(len(q) for q in batcher._waiting.values()) < 7:
        time.sleep(0.001)
    gate.set()
    for t in threads:
        t.join(10)
    assert out == {i: 2 * i for i in range(8)}
    assert sizes == [1, 3, 3, 1]


def test_a_request_with_heads_switched_off_is_never_shared(tiny_loaded, monkeypatch):
    from bertdemo.models.attention_modes import attention_mode, index_layers

    index_layers(tiny_loaded.model)
    text = "the [MASK] sat on the mat ."
    plain = fill_mask.predict(tiny_loaded, text, top_k=5)
    with attention_mode(ablate={(0, 0), (1, 1)}):
        ablated_alone = fill_mask.predict(tiny_loaded, text, top_k=5)
    assert [c.prob for c in ablated_alone.masks[0].candidates] != [c.prob for c in plain.masks[0].candidates]

    gate, running = _hold_forwards(monkeypatch)  # a plain request holds the model while the ablated one arrives
    results = {}

    def ask_plain():
        results["plain"] = fill_mask.predict(tiny_loaded, text, top_k=5)

    def ask_ablated():
        with attention_mode(ablate={(0, 0), (1, 1)}):
            results["ablated"] = fill_mask.predict(tiny_loaded, text, top_k=5)

    first = threading.Thread(target=ask_plain)
    first.start()
    while not running:
        time.sleep(0.001)
    second = threading.Thread(target=ask_ablated)
    second.start()
    deadline = time.monotonic() + 5
    while len(running) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    ran_alongside = len(running) == 2  # not queued (and maybe batched) behind the plain request
    gate.set()
    first.join(10)
    second.join(10)
    assert ran_alongside and running == [1, 1]
    assert [c.prob for c in results["ablated"].masks[0].candidates] == [c.prob for c in ablated_alone.masks[0].candidates]
    assert [c.prob for c in results["plain"].masks[0].candidates] == [c.prob for c in plain.masks[0].candidates]

"""Concurrent Fill-Mask requests share one padded forward pass and each still gets its own answer."""

import threading

import pytest

from bertdemo.explore import fill_mask
from bertdemo.models import batching
from tests.helpers import wait_until

TEXTS = [
    "the [MASK] sat on the mat .",
    "a [MASK] b",
    "she opened the door and [MASK] into the long dark [MASK] .",
    "play[MASK] all day",
]


def _hold_forwards(monkeypatch):
    """Make Fill-Mask's forwards wait for the returned gate; returns (gate, the sizes of the forwards begun)."""
    gate = threading.Event()
    real = fill_mask._shared_forward
    sizes = []

    def held(loaded, items):  # (every request below passes remember=False: each one's forward runs)
        sizes.append(len(items))
        gate.wait(10)
        return real(loaded, items)

    monkeypatch.setattr(fill_mask, "_shared_forward", held)
    return gate, sizes


def _queue_behind_the_first(threads, started, batcher, key, gate) -> None:
    """Start ``threads[0]``; once its batch has begun (``started``), start the rest and wait until they
    all queue for ``key``; then open ``gate`` and join everyone."""
    threads[0].start()
    wait_until(lambda: started)
    for t in threads[1:]:
        t.start()
    wait_until(lambda: batcher.pending(key) == len(threads) - 1)
    gate.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive()


def test_concurrent_requests_are_batched_and_equal_alone(tiny_loaded, monkeypatch):
    alone = {t: fill_mask.predict(tiny_loaded, t, top_k=6, remember=False) for t in TEXTS}
    gate, seen = _hold_forwards(monkeypatch)  # the first batch waits until the others have queued behind it
    batcher = batching.MicroBatcher(16)
    results = {}

    def ask(text):
        results[text] = fill_mask.predict(tiny_loaded, text, top_k=6, batcher=batcher, remember=False)

    first = threading.Thread(target=ask, args=("a [MASK] b",))
    others = [threading.Thread(target=ask, args=(t,)) for t in TEXTS for _ in range(3)]
    _queue_behind_the_first([first, *others], seen, batcher, tiny_loaded.model, gate)
    assert seen == [1, len(others)]  # everything that queued went through in one padded forward
    for text, result in results.items():
        want = alone[text]
        for got_mask, want_mask in zip(result.masks, want.masks, strict=True):
            assert [c.id for c in got_mask.candidates] == [c.id for c in want_mask.candidates]
            assert [c.prob for c in got_mask.candidates] == pytest.approx([c.prob for c in want_mask.candidates],
                                                                          rel=1e-4, abs=1e-6)


def test_a_failing_item_gets_its_own_error():
    batcher = batching.MicroBatcher(max_batch=4)
    gate = threading.Event()
    sizes = []

    def invert(items):
        sizes.append(len(items))
        gate.wait(10)
        if any(i == 0 for i in items):
            raise ZeroDivisionError("zero")
        return [1 / i for i in items]

    out, errors = {}, {}

    def ask(i):
        try:
            out[i] = batcher.submit("k", i, invert)
        except ZeroDivisionError as exc:
            errors[i] = exc

    threads = [threading.Thread(target=ask, args=(i,)) for i in (4, 0, 2)]
    _queue_behind_the_first(threads, sizes, batcher, "k", gate)  # 4 runs alone; 0 and 2 then go together
    assert sizes == [1, 2, 1, 1]  # the batch of two failed, then each item ran alone
    assert out == {4: 0.25, 2: 0.5} and list(errors) == [0]
    assert batcher.pending("k") == 0 and batcher.submit("k", 8, invert) == 0.125  # the key is free again
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
    _queue_behind_the_first(threads, sizes, batcher, "k", gate)
    assert out == {i: 2 * i for i in range(8)}
    assert sizes == [1, 3, 3, 1]


def test_a_request_with_heads_switched_off_is_never_shared(tiny_loaded, monkeypatch):
    from bertdemo.models.attention_modes import attention_mode, index_layers

    index_layers(tiny_loaded.model)
    text = "the [MASK] sat on the mat ."
    plain = fill_mask.predict(tiny_loaded, text, top_k=5, remember=False)
    with attention_mode(ablate={(0, 0), (1, 1)}):
        ablated_alone = fill_mask.predict(tiny_loaded, text, top_k=5)
    assert [c.prob for c in ablated_alone.masks[0].candidates] != [c.prob for c in plain.masks[0].candidates]

    gate, running = _hold_forwards(monkeypatch)  # a plain request holds the model while the ablated one arrives
    batcher = batching.MicroBatcher(16)
    results = {}

    def ask_plain():
        results["plain"] = fill_mask.predict(tiny_loaded, text, top_k=5, batcher=batcher, remember=False)

    def ask_ablated():
        with attention_mode(ablate={(0, 0), (1, 1)}):
            results["ablated"] = fill_mask.predict(tiny_loaded, text, top_k=5, batcher=batcher)

    first = threading.Thread(target=ask_plain)
    first.start()
    wait_until(lambda: running)
    second = threading.Thread(target=ask_ablated)
    second.start()
    wait_until(lambda: len(running) == 2, timeout=5)  # not queued (and maybe batched) behind the plain request
    gate.set()
    first.join(10)
    second.join(10)
    assert running == [1, 1]
    assert [c.prob for c in results["ablated"].masks[0].candidates] == [c.prob for c in ablated_alone.masks[0].candidates]
    assert [c.prob for c in results["plain"].masks[0].candidates] == [c.prob for c in plain.masks[0].candidates]


def test_a_question_asked_again_is_answered_from_the_model_until_its_weights_change(tiny_mlm_dir, monkeypatch):
    import torch

    from bertdemo.models.attention_modes import attention_mode, index_layers
    from bertdemo.models.store import load_masked_lm

    loaded = load_masked_lm(str(tiny_mlm_dir), "cpu")  # a model of this test's own: nothing remembered yet
    index_layers(loaded.model)
    text = "the [MASK] sat on the mat ."
    gate, forwards = _hold_forwards(monkeypatch)
    batcher = batching.MicroBatcher(16)
    results = []
    threads = [threading.Thread(target=lambda: results.append(fill_mask.predict(loaded, text, top_k=5,
                                                                                batcher=batcher)))
               for _ in range(5)]  # a class opening the same link
    for t in threads:
        t.start()
    wait_until(lambda: forwards, timeout=30)
    gate.set()
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert forwards == [1] and len(results) == 5 and all(r is results[0] for r in results)  # one forward for all
    alone = fill_mask.predict(loaded, text, top_k=5, remember=False)
    assert forwards == [1, 1]
    assert [c.prob for c in results[0].masks[0].candidates] == [c.prob for c in alone.masks[0].candidates]

    assert fill_mask.predict(loaded, text, top_k=4).masks[0].candidates == alone.masks[0].candidates[:4]
    assert forwards == [1, 1, 1]  # another question: its own forward

    with torch.no_grad():
        bias = loaded.model.get_output_embeddings().bias  # the weights change in place (as a training step does)
        bias.add_(torch.randn(bias.shape, generator=torch.Generator().manual_seed(0)))
    changed = fill_mask.predict(loaded, text, top_k=5)
    assert forwards == [1, 1, 1, 1]
    assert [c.prob for c in changed.masks[0].candidates] == \
        [c.prob for c in fill_mask.predict(loaded, text, top_k=5, remember=False).masks[0].candidates]
    assert [c.prob for c in changed.masks[0].candidates] != [c.prob for c in alone.masks[0].candidates]

    with attention_mode(ablate={(0, 0)}):  # heads off: this thread's own answer, never the remembered one
        fill_mask.predict(loaded, text, top_k=5)
        fill_mask.predict(loaded, text, top_k=5)
    assert len(forwards) == 7
    fill_mask.predict(loaded, text, top_k=5, keep_tensors=True)
    assert len(forwards) == 8
    for _ in range(2):  # extra passes to run (targets scored): each request computes its own, within its budget
        fill_mask.predict(loaded, text, top_k=5, targets="cat")
    assert len(forwards) == 10

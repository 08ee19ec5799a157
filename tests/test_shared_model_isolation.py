"""Nothing one request does to the shared model or tokenizer is visible to another: attribution equals captum's
own layer method on a private copy of the model yet hooks nothing on the shared one, so a Fill-Mask call or
another attribution run while it is half-way give their serial answers; two visitors' attributions, layer
probes and word-in-context calls at once each give their serial answer; 16 threads calling one fast
tokenizer with and without truncation get their serial answers."""

from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from bertdemo.explore import attribution, fill_mask, word_in_context
from bertdemo.explore.encoding import encode_checked
from bertdemo.explore.word_vectors import encode_sentences
from bertdemo.finetune import layer_probes
from bertdemo.finetune.features import ActivationCache
from bertdemo.request_budget import WorkBudget

TIMEOUT_S = 300.0
SENTENCES = ("The cat sat on the [MASK] because it was tired.", "She drank a cup of hot [MASK] before bed.")
WIC = ("bank", ["river | We sat on the bank of the river.", "money | The bank raised its rates.",
                "river | The bank was muddy."])
SMALL = {"train": 40, "validation": 16, "test": 16}


def _load():
    from bertdemo.models import embedded
    from bertdemo.models.store import load_masked_lm

    return load_masked_lm(str(embedded.mlm_dir()), "cpu")


@pytest.fixture(scope="module")
def shared():
    """The model every request of the test shares."""
    return _load()


@pytest.fixture(scope="module")
def serial():
    """Another copy of the same weights, for the answers computed one at a time (nothing cached is shared)."""
    return _load()


def _plain_probe(probe: layer_probes.TaskProbe) -> tuple:
    return probe.model.mean, probe.model.cls, probe.random.mean, probe.random.cls, probe.majority_accuracy


def assert_same_attribution(got: attribution.Attribution, want: attribution.Attribution) -> None:
    assert got.tokens == want.tokens and got.target == want.target
    for method, scores in want.scores.items():
        np.testing.assert_allclose(got.scores[method], scores, rtol=1e-4, atol=1e-6 * max(np.abs(scores).max(), 1e-9))
    assert got.prob == pytest.approx(want.prob, rel=1e-5)


def test_attribution_equals_captums_layer_methods_on_a_private_copy(shared):
    """captum's LayerIntegratedGradients / LayerGradientXActivation hook the layer they are given: here on a
    copy of the model no request uses, the reference the app's hook-free computation must equal."""
    from captum.attr import LayerGradientXActivation, LayerIntegratedGradients

    result = attribution.attribute(shared, SENTENCES[0], 1, "mat", ("integrated gradients", "gradient x input"), 20)
    private = copy.copy(shared)
    private.model = copy.deepcopy(shared.model)
    enc, position, kept, baseline = attribution._inputs(private, SENTENCES[0], 1)
    forward = attribution.make_forward(private, enc, position, result.target_id)
    layer = private.model.get_input_embeddings()
    ids = enc["input_ids"]
    ig = LayerIntegratedGradients(forward, layer).attribute(ids, baselines=baseline[None], n_steps=20,
                                                            internal_batch_size=attribution.INTERNAL_BATCH)
    gxi = LayerGradientXActivation(forward, layer, multiply_by_inputs=True).attribute(ids)
    for method, reference in (("integrated gradients", ig), ("gradient x input", gxi)):
        want = attribution._per_token(reference)
        want[np.array(kept)] = 0.0
        # float32 sums in another order: each score within 1e-5 of the largest one (a small score is a difference
        # of large terms; relative to itself it may move by 2e-5, as one run of the whole suite found)
        np.testing.assert_allclose(result.scores[method], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert not layer._forward_hooks and not shared.model.get_input_embeddings()._forward_hooks


def _paused_attribution(loaded, text: str, reached: threading.Event, resume: threading.Event):
    """An attribution that, at its third forward batch (inside integrated gradients), says so and waits."""
    checks = []

    def should_stop() -> bool:
        checks.append(1)
        if len(checks) == 3:
            reached.set()
            assert resume.wait(TIMEOUT_S), "the test never let the attribution go on"
        return False

    budget = WorkBudget(max_gflop=float("inf"), seconds=float("inf"), should_stop=should_stop)
    return attribution.attribute(loaded, text, 1, "", ("integrated gradients",), 100, budget=budget)


def test_a_fill_mask_call_and_another_attribution_during_an_attribution_give_their_serial_answers(shared, serial):
    want_fill = fill_mask.predict(serial, "Nice to [MASK] you.", top_k=5)
    want_first = attribution.attribute(serial, SENTENCES[0], 1, "", ("integrated gradients",), 100)
    want_second = attribution.attribute(serial, SENTENCES[1], 1, "", ("integrated gradients",), 40)
    reached, resume = threading.Event(), threading.Event()
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(_paused_attribution, shared, SENTENCES[0], reached, resume)
        try:
            assert reached.wait(TIMEOUT_S), "the attribution did not reach its integrated-gradient batches"
            got_fill = fill_mask.predict(shared, "Nice to [MASK] you.", top_k=5)  # a shorter sentence meanwhile
            got_second = attribution.attribute(shared, SENTENCES[1], 1, "", ("integrated gradients",), 40)
        finally:
            resume.set()
        got_first = first.result(timeout=TIMEOUT_S)
    assert [(c.token, round(c.prob, 5)) for c in got_fill.masks[0].candidates] == \
        [(c.token, round(c.prob, 5)) for c in want_fill.masks[0].candidates]
    assert_same_attribution(got_second, want_second)
    assert_same_attribution(got_first, want_first)


@pytest.mark.slow  # three heavy views, serial and at once
def test_two_visitors_attributions_probes_and_word_in_context_at_once_give_their_serial_answers(shared, serial):
    def attribute(loaded, text):
        return attribution.attribute(loaded, text, 1, "", attribution.METHODS, 30)

    def probe(loaded, task):
        [result] = layer_probes.probe_layers(loaded.name, loaded.model, loaded.tokenizer, ActivationCache(),
                                             tasks=(task,), sizes=SMALL)
        return result

    def wic(loaded, lines):
        return word_in_context.similarities(loaded, WIC[0], lines)

    calls = [(attribute, SENTENCES[0]), (attribute, SENTENCES[1]), (probe, "length"), (probe, "bigram_shift"),
             (wic, WIC[1]), (wic, WIC[1][::-1])]
    wanted = [fn(serial, arg) for fn, arg in calls]
    start = threading.Barrier(len(calls), timeout=TIMEOUT_S)

    def together(fn, arg):
        start.wait()
        return fn(shared, arg)

    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(together, fn, arg) for fn, arg in calls]
        got = [f.result(timeout=TIMEOUT_S) for f in futures]
    for g, w in zip(got[:2], wanted[:2]):
        assert_same_attribution(g, w)
    for g, w in zip(got[2:4], wanted[2:4]):
        for mine, alone in zip(_plain_probe(g), _plain_probe(w)):
            np.testing.assert_allclose(mine, alone, atol=1e-6)
    for g, w in zip(got[4:], wanted[4:]):
        assert g.positions == w.positions
        np.testing.assert_allclose(g.cosines, w.cosines, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g.baseline, w.baseline, rtol=1e-5, atol=1e-6)


def test_sixteen_threads_on_one_tokenizer_with_and_without_truncation_get_their_serial_answers(shared):
    """encode_sentences(truncate=True) sets the backend's truncation, encode_checked clears it: alternated
    from 16 threads on one tokenizer (transformers#47085: "Already borrowed" without a lock)."""
    long_text = "The river bank was muddy after the rain, " * 12  # past 64 tokens: truncation matters

    def truncated():
        enc = encode_sentences(shared, [long_text, "A short one."], 64, truncate=True)
        return enc["input_ids"].tolist()

    def whole():
        enc, special = encode_checked(shared, long_text, None, 512, empty="empty", too_long="{n} > {limit}")
        return enc["input_ids"].tolist(), special

    jobs = [truncated if i % 2 == 0 else whole for i in range(16 * 8)]
    want = {truncated: truncated(), whole: whole()}
    start = threading.Barrier(16, timeout=TIMEOUT_S)

    def run(number, job):
        if number < 16:  # the first job of each thread: all 16 start together
            start.wait()
        return job, job()

    with ThreadPoolExecutor(16) as pool:
        results = [f.result(timeout=TIMEOUT_S) for f in [pool.submit(run, i, job) for i, job in enumerate(jobs)]]
    assert len(results) == len(jobs)
    for job, answer in results:
        assert answer == want[job]
    assert len(want[truncated][0]) == 64 and len(want[whole][0][0]) > 64


def test_two_visitors_attention_views_and_fill_mask_at_once_give_their_serial_answers(shared, serial):
    """Attention's forward runs on one intra-op thread of its own (models/threads.py), beside other requests'
    forwards on the server's count: each answer is its serial one."""
    from bertdemo.explore import attention

    texts = [("The animal didn't cross the street because it was too tired.", None),
             ("The bank raised its rates.", "We sat on the bank of the river."),
             ("A third sentence, longer than the others, with more tokens to attend to in every layer.", None)]
    calls = [lambda m, t=t, p=p: attention.compute(m, t, p) for t, p in texts]
    calls += [lambda m, s=s: fill_mask.predict(m, s, top_k=5) for s in SENTENCES]
    wanted = [call(serial) for call in calls]
    start = threading.Barrier(len(calls), timeout=TIMEOUT_S)

    def together(call):
        start.wait()
        return call(shared)

    with ThreadPoolExecutor(len(calls)) as pool:
        got = [f.result(timeout=TIMEOUT_S) for f in [pool.submit(together, call) for call in calls]]
    for g, w in zip(got[:3], wanted[:3]):
        assert g.tokens == w.tokens
        np.testing.assert_allclose(g.attentions, w.attentions, rtol=1e-5, atol=1e-6)
    for g, w in zip(got[3:], wanted[3:]):
        assert [c.token for c in g.masks[0].candidates] == [c.token for c in w.masks[0].candidates]
        np.testing.assert_allclose([c.prob for c in g.masks[0].candidates], [c.prob for c in w.masks[0].candidates],
                                   rtol=1e-5)


def test_every_encoding_of_a_shared_tokenizer_holds_its_lock(monkeypatch):
    """A fast tokenizer switches its truncation and padding on every encoding, a word's pieces included
    (``tokenize`` encodes with both off): one such call beside another visitor's padded batch left that batch
    ragged ("expected sequence of length 9 at dim 1 (got 10)", seen once in the concurrent test above). Every
    encoding the views make of a shared tokenizer runs under the tokenizer's lock."""
    from bertdemo import locks
    from bertdemo.explore.encoding import word_pieces
    from bertdemo.learn import path as learn_path

    loaded = _load()
    tokenizer = loaded.tokenizer
    lock = locks.tokenizer_lock(tokenizer)
    unlocked: list[str] = []
    encode = tokenizer._encode_plus

    def watched(*args, **kwargs):
        if not lock._is_owned():
            unlocked.append(str(kwargs.get("text", args[0] if args else ""))[:40])
        return encode(*args, **kwargs)

    monkeypatch.setattr(tokenizer, "_encode_plus", watched)
    word_in_context.similarities(loaded, WIC[0], WIC[1])
    fill_mask.predict(loaded, SENTENCES[0], top_k=3, targets=["mat", "doorway"])
    learn_path._cls_vectors(loaded, SENTENCES[1])
    word_pieces(tokenizer, "doorway")
    assert unlocked == []
    tokenizer.tokenize("doorway")  # an encoding outside the lock, as the views made them before: seen
    assert unlocked == ["doorway"]

"""Nothing one request does to a shared model is visible to another, for the views on the masked-LM /
left-to-right twins and on fine-tuned runs: two visitors at once on the same models each get their serial answer,
exactly — the twin comparison (held-out words by position, right-context cloze ranks, side by side), what the
heads became, names tagging (``/tag``), what fine-tuning changed (the layer change) and head ablation on a
left-to-right twin. Every model is tiny and built in the test; the serial answers come from a second copy of the
same weights, so nothing cached is shared with the concurrent calls.

Each concurrent pair is a different request on the same model (different settings, sentences or heads), started
together at a barrier and run a few times over, so one call's modes, hooks, padding or truncation, were they left
on the shared model or tokenizer, would change the other's answer."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from transformers import AutoTokenizer, BertForMaskedLM, BertLMHeadModel

from bertdemo.explore import ablation, head_roles, twins
from bertdemo.explore.word_vectors import encode_sentences
from bertdemo.finetune.engine import run_finetune
from bertdemo.finetune.lab import FinetuneLab
from bertdemo.finetune.layer_change import measure_layer_change
from bertdemo.finetune.metrics import FinetuneMetrics
from bertdemo.finetune.token_engine import run_token_finetune, tag_sentence
from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain.landmarks import count_ngrams
from bertdemo.runs.control import RunControl
from tests.helpers import name_task, summary_blocks, tiny_finetune_config, tiny_model_dir, word_task

TIMEOUT_S = 300.0
ROUNDS = 3  # each pair of calls runs together this many times
LONG = "The river bank was muddy after the rain, " * 12  # past 64 tokens: truncation matters


def together(calls: list, rounds: int = ROUNDS) -> list[list]:
    """Each call of ``calls`` in its own thread, all released at once by a barrier, ``rounds`` times: the answers,
    round by round."""
    start = threading.Barrier(len(calls), timeout=TIMEOUT_S)

    def run(call):
        start.wait()
        return call()

    out = []
    with ThreadPoolExecutor(len(calls)) as pool:
        for _ in range(rounds):
            futures = [pool.submit(run, call) for call in calls]
            out.append([f.result(timeout=TIMEOUT_S) for f in futures])
    return out


def truncating(tokenizer, times: int = 40) -> list[list[list[int]]]:
    """Requests that set the shared tokenizer's truncation and padding (a probe's sentence vectors), one after
    another ``times`` over."""
    loaded = SimpleNamespace(tokenizer=tokenizer, device="cpu")
    return [encode_sentences(loaded, [LONG, "A short one."], 64, truncate=True)["input_ids"].tolist()
            for _ in range(times)]


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tokenizer) -> dict[str, Path]:
    """A tiny masked LM and its left-to-right twin (the same shape, the causal mask), saved as model folders."""
    root = tmp_path_factory.mktemp("twins")
    return {"mlm": tiny_model_dir(BertForMaskedLM, root / "mlm", tokenizer),
            "ltr": tiny_model_dir(BertLMHeadModel, root / "ltr", tokenizer, is_decoder=True)}


def _loaded(folders):
    return {kind: load_masked_lm(str(folder), "cpu") for kind, folder in folders.items()}


@pytest.fixture(scope="module")
def shared(folders):
    """The models every concurrent request shares (loaded as the app loads them)."""
    return _loaded(folders)


@pytest.fixture(scope="module")
def serial(folders):
    """Another copy of the same weights, for the answers computed one at a time."""
    return _loaded(folders)


def pair_of(loaded) -> tuple[twins.Twin, twins.Twin]:
    return twins.twin_of(loaded["mlm"]), twins.twin_of(loaded["ltr"])


@pytest.fixture(scope="module")
def heldout(tokenizer):
    """Held-out blocks of 64 from embedded summaries and the training blocks' n-grams."""
    train, held_out = summary_blocks(tokenizer)
    return held_out, count_ngrams(train, len(tokenizer), tokenizer.all_special_ids)


def as_plain(result) -> dict:
    """A result's fields as plain data (exact equality, nan equal to nan)."""
    return {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(result).items()}


def assert_same(got, want) -> None:
    np.testing.assert_equal(as_plain(got), as_plain(want))


def assert_close(got, want, rtol: float = 1e-6) -> None:
    """Equal, the floats to ``rtol`` (a number summed in another batch may differ in its last bits)."""
    a, b = as_plain(got), as_plain(want)
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(b[key], dict):
            assert a[key].keys() == b[key].keys(), key
            for name in b[key]:
                np.testing.assert_allclose(a[key][name], b[key][name], rtol=rtol, err_msg=f"{key} {name}")
        else:
            assert a[key] == b[key], key


def test_two_visitors_twin_comparisons_at_once_give_their_serial_answers(shared, serial, heldout, tokenizer):
    blocks, counts = heldout
    items = twins.read_right_context_cloze()[:12]

    def calls(models):
        mlm, ltr = pair_of(models)
        return [lambda: twins.heldout_by_position(mlm, ltr, blocks, counts, max_blocks=6),
                lambda: twins.heldout_by_position(mlm, ltr, blocks, counts, max_blocks=3),
                lambda: twins.cloze_ranks([mlm, ltr], items),
                lambda: twins.cloze_ranks([ltr, mlm], items[::-1]),
                lambda: twins.side_by_side([mlm, ltr], "The [MASK] barked at the mailman.", 8),
                lambda: twins.side_by_side([ltr, mlm], "She drank a cup of hot [MASK] before bed.", 5),
                lambda: [twins.side_by_side([mlm], f"The [MASK] sat on mat number {n}.", 3) for n in range(20)],
                lambda: truncating(mlm.tokenizer)]

    want = [call() for call in calls(serial)]
    for answers in together(calls(shared)):
        for got, alone in zip(answers, want):
            if isinstance(alone, twins.HeldoutComparison):  # blocks kept from another call's batch: the last bits
                assert_close(got, alone)
            elif isinstance(alone, twins.ClozeRanks):
                assert_same(got, alone)
            else:  # guesses side by side (TwinGuesses are plain dataclasses) and token ids
                assert got == alone


def test_two_visitors_head_roles_at_once_give_their_serial_answers(shared, serial):
    def calls(models):
        mlm, ltr = models["mlm"], models["ltr"]
        return [lambda: head_roles.head_roles(mlm.model, mlm.tokenizer, "mlm"),
                lambda: head_roles.head_roles(ltr.model, ltr.tokenizer, "ltr"),
                lambda: head_roles.head_roles(mlm.model, mlm.tokenizer, "mlm", head_roles.HEAD_SENTENCES[:5]),
                lambda: truncating(mlm.tokenizer)]

    want = [call() for call in calls(serial)]
    assert want[1].causal and not want[0].causal
    for answers in together(calls(shared)):
        for got, alone in zip(answers[:3], want[:3]):
            assert_same(got, alone)
        assert answers[3] == want[3]


def test_two_visitors_ablating_heads_of_a_left_to_right_twin_at_once_give_their_serial_answers(shared, serial):
    """One visitor switches head 0:0 of the left-to-right twin off, another 1:* — and a third reads it intact
    through the same model at the same time: each gets the answer it gets alone."""
    from bertdemo.explore import fill_mask

    text = "The cat sat on the [MASK] because it was tired."

    def calls(models):
        ltr = models["ltr"]
        return [lambda: ablation.ablate(ltr, text, None, "0:0", 5),
                lambda: ablation.ablate(ltr, "She drank a cup of hot [MASK] before bed.", None, "1:*", 5, "tea"),
                lambda: fill_mask.predict(ltr, text, top_k=5)]

    def plain(result):
        if isinstance(result, ablation.AblationResult):
            return (result.heads, result.table(), result.targets, result.loss_before, result.loss_after)
        return [(c.token, c.prob) for c in result.masks[0].candidates]

    want = [plain(call()) for call in calls(serial)]
    assert want[0][3] != want[0][4]  # switching the head off changed the loss: the check can fail
    for answers in together(calls(shared)):
        assert [plain(a) for a in answers] == want


@pytest.fixture(scope="module")
def names_run(tiny_mlm_dir, tmp_path_factory):
    """A tiny names run (a label per word) saved as the app saves it."""
    folder = tmp_path_factory.mktemp("names") / "model"
    cfg = tiny_finetune_config(tiny_mlm_dir, task="names", epochs=4)
    assert run_token_finetune(cfg, name_task(), FinetuneMetrics(), RunControl(), folder) == "finished"
    return folder


def test_two_visitors_tagging_names_at_once_give_their_serial_answers(names_run, tmp_path):
    """``/tag`` reads the run's classifier through the lab (one model shared by every visitor)."""
    from transformers import BertForTokenClassification

    sentences = ["Then the car of Bob went to Rome .", "Alice met Carol in Oslo with a dog .",
                 "A house stood by the tree ."]
    alone = BertForTokenClassification.from_pretrained(names_run).eval()
    alone_tok = AutoTokenizer.from_pretrained(names_run)
    want = [tag_sentence(alone, alone_tok, s) for s in sentences]
    lab = FinetuneLab(tmp_path / "cache")
    model, tokenizer = lab._classifier(str(names_run), kind="token")  # the one the lab serves every visitor
    calls = [lambda s=s: lab.tag(str(names_run), s) for s in sentences] + [lambda: truncating(tokenizer)]
    for answers in together(calls):
        assert answers[:3] == want
    assert lab._classifier(str(names_run), kind="token")[0] is model and not model.training


@pytest.fixture(scope="module")
def tuned_runs(tiny_mlm_dir, tmp_path_factory):
    """Two tiny runs fine-tuned from a checkpoint with a masked-LM head (different seeds), saved as the app does."""
    root = tmp_path_factory.mktemp("runs") / ".finetune"
    folders = []
    for seed in (0, 1):
        folder = root / f"20261127-07000{seed}-ft-run" / "model"
        cfg = tiny_finetune_config(tiny_mlm_dir, init="run:tiny/checkpoint", epochs=2, seed=seed)
        assert run_finetune(cfg, word_task(), FinetuneMetrics(), RunControl(), folder) == "finished"
        folders.append(folder)
    return folders


def test_two_visitors_layer_changes_at_once_give_their_serial_answers(tuned_runs):
    texts = word_task().val_texts
    calls = [lambda f=f, n=n: measure_layer_change(f"ft:{n}", f, texts[: 12 + 4 * n])
             for n, f in enumerate(tuned_runs)]
    want = [call() for call in calls]
    assert want[0].mlm_loss_after is not None and want[0].weight_change != want[1].weight_change
    for answers in together(calls, rounds=2):
        assert answers == want


def test_a_twin_keeps_its_held_out_losses_apart_for_each_packing(folders, heldout):
    """The held-out losses a model keeps follow the questions asked: a block packed at a text's start is asked its
    first sentence too, so the same blocks asked as packed anywhere, then at a text's start, then anywhere again each
    give the answer of models that keep nothing."""
    blocks, counts = heldout
    mlm, ltr = pair_of(_loaded(folders))
    plain = [twins.Twin(t.name, t.model, t.tokenizer) for t in (mlm, ltr)]  # no store entry: nothing kept
    asked = {}
    for starts in ("anywhere", "text", "anywhere"):
        got = twins.heldout_by_position(mlm, ltr, blocks, counts, max_blocks=4, block_starts=starts)
        assert_close(got, twins.heldout_by_position(*plain, blocks, counts, max_blocks=4, block_starts=starts))
        asked[starts] = got.questions
    assert asked["text"] > asked["anywhere"]  # the two packings ask different questions of the same blocks

"""A request's small forward on one intra-op thread (bertdemo.models.threads): the count is the calling thread's
alone and is put back, the process-wide default that new threads start with is left as it was, a large forward
keeps the thread's count, and the numbers are the model's own either way."""

from __future__ import annotations

import threading

import torch
from transformers import BertForMaskedLM

from bertdemo.models.threads import SMALL_FORWARD_TOKENS, small_forward, threads_here
from tests.helpers import tiny_bert_config


def in_thread(fn):
    """``fn()`` run in a new thread (which starts with the process-wide default count); its answer."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn()))
    worker.start()
    worker.join(timeout=60)
    return out[0]


def test_one_thread_here_leaves_the_process_default_and_comes_back():
    def body():
        torch.set_num_threads(2)  # this thread's count and the default new threads take
        inside, started_inside = None, None
        with threads_here(1) as count:
            inside = torch.get_num_threads()
            started_inside = in_thread(torch.get_num_threads)
        return count, inside, started_inside, torch.get_num_threads(), in_thread(torch.get_num_threads)

    before = torch.get_num_threads()
    try:
        assert in_thread(body) == (1, 1, 2, 2, 2)
    finally:
        torch.set_num_threads(before)


def test_only_a_small_forward_runs_on_one_thread_and_its_numbers_are_the_models_own(tokenizer):
    torch.manual_seed(0)
    model = BertForMaskedLM(tiny_bert_config()).eval()
    ids = tokenizer(["The cat sat on the mat.", "A dog barked at the mailman today."], padding=True,
                    return_tensors="pt")

    def body():
        torch.set_num_threads(2)
        with torch.inference_mode():
            default = model(**ids).logits
            with small_forward(ids["input_ids"].numel()) as small:
                one = model(**ids).logits
                count_small = torch.get_num_threads()
            with small_forward(SMALL_FORWARD_TOKENS + 1) as large:
                count_large = torch.get_num_threads()
        return default, one, (small, count_small, large, count_large, torch.get_num_threads())

    before = torch.get_num_threads()
    try:
        default, one, counts = in_thread(body)
    finally:
        torch.set_num_threads(before)
    assert counts == (1, 1, 2, 2, 2)
    torch.testing.assert_close(one, default, rtol=0, atol=1e-5)

"""Models built on one thread while another loads one stay correct (``bertdemo.locks``).

transformers swaps process-wide state during ``from_pretrained`` (``tie_weights`` becomes a
no-op); without the shared lock a masked-LM built meanwhile comes out with an untied decoder.
"""

from __future__ import annotations

import threading

import torch
from transformers import BertConfig, BertForMaskedLM, PreTrainedModel

from bertdemo.models.store import load_masked_lm
from bertdemo.pretrain import TrainConfig, param_count
from bertdemo.pretrain.model import build_model


def test_building_while_another_thread_loads_keeps_the_decoder_tied(tmp_path, tokenizer):
    torch.manual_seed(0)
    folder = tmp_path / "tiny-mlm"
    BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    original_tie = PreTrainedModel.tie_weights
    errors: list[BaseException] = []

    def keep_loading() -> None:
        loading.set()
        try:
            for _ in range(25):
                load_masked_lm(str(folder), "cpu")
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    loading = threading.Event()
    loader = threading.Thread(target=keep_loading)
    loader.start()
    loading.wait()
    cfg = TrainConfig.from_flat(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64)
    expected = param_count(cfg)
    built = built_while_loading = 0
    while loader.is_alive() or built < 3:  # at least 3 models, and models all along the loading
        model = build_model(cfg, tokenizer)
        tied = model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
        assert tied, f"decoder untied in model {built} built while another thread loads"
        assert param_count(model) == expected
        built += 1
        built_while_loading += loader.is_alive()
    loader.join()
    assert not errors, errors
    assert PreTrainedModel.tie_weights is original_tie  # not left as transformers' no-op
    assert built_while_loading >= 2, f"only {built_while_loading} models were built while the loader ran"


def test_a_half_precision_checkpoint_loads_in_float32(tmp_path, tokenizer):
    """Loading sets torch's process-wide default dtype to the load dtype: always float32 here."""
    folder = tmp_path / "bf16-mlm"
    BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64)).to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    loaded = load_masked_lm(str(folder), "cpu")
    assert loaded.has_mlm_head and loaded.model.dtype == torch.float32
    assert torch.get_default_dtype() == torch.float32

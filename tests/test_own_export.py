"""The own-data model's zip (issue 54, walk D7): half the download — the weights in fp16, where stock
``from_pretrained`` reads them back as the float32 model it always gave (its config keeps ``dtype: float32``), with
the page's probabilities to fp16 rounding — and the zip's making reported as it goes, so a large model shows
progress while it is built; a second download of the same run is the zip already made."""

from __future__ import annotations

import json
import zipfile

import pytest
import torch
from safetensors import safe_open
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
)

from bertdemo.finetune.own_export import WEIGHTS_DTYPE, model_zip
from bertdemo.finetune.run import MODEL_DIRNAME

CONFIG = {"vocab_size": 200, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
          "intermediate_size": 64, "max_position_embeddings": 64}


@pytest.mark.parametrize("kind, stock", [(BertForSequenceClassification, AutoModelForSequenceClassification),
                                         (BertForTokenClassification, AutoModelForTokenClassification)])
def test_the_zip_holds_fp16_weights_that_stock_transformers_loads_as_float32(tmp_path, kind, stock):
    torch.manual_seed(0)
    model = kind(BertConfig(**CONFIG, num_labels=3, id2label={0: "a", 1: "b", 2: "c"},
                            label2id={"a": 0, "b": 1, "c": 2})).eval()
    run = tmp_path / "run"
    model.save_pretrained(run / MODEL_DIRNAME)
    said: list[tuple[float, str]] = []
    path = model_zip(run, tmp_path / "out", "my-run", progress=lambda done, what: said.append((done, what)))
    assert [done for done, _ in said] == sorted(done for done, _ in said) and said[-1][0] == 1.0  # as it goes, to the end
    assert len(said) >= 3 and all(what for _, what in said)
    with zipfile.ZipFile(path) as zf:
        zf.extractall(tmp_path / "unzipped")
        size = sum(i.file_size for i in zf.infolist() if i.filename.endswith(".safetensors"))
    folder = tmp_path / "unzipped" / "my-run"
    with safe_open(folder / "model.safetensors", "pt") as f:
        floats = [f.get_tensor(k) for k in f.keys()]  # noqa: SIM118 (a safetensors file, not a dict)
        dtypes = {t.dtype for t in floats if t.is_floating_point()}
        assert f.metadata().get("format") == "pt"  # what transformers checks before it reads a safetensors file
    assert WEIGHTS_DTYPE == "float16" and dtypes == {torch.float16}
    fp32 = (run / MODEL_DIRNAME / "model.safetensors").stat().st_size
    assert size < 0.55 * fp32  # half the download
    assert json.loads((folder / "config.json").read_text())["dtype"] == "float32"
    theirs = stock.from_pretrained(folder).eval()
    assert theirs.dtype == torch.float32 and theirs.config.id2label == {0: "a", 1: "b", 2: "c"}
    ids = torch.tensor([[2, 17, 45, 99, 3]])
    with torch.no_grad():
        ours_p, theirs_p = model(input_ids=ids).logits.softmax(-1), theirs(input_ids=ids).logits.softmax(-1)
    assert torch.allclose(theirs_p, ours_p, atol=1e-3)  # fp16 rounding of the weights, no more
    # the same run downloaded again: the zip already made
    again: list[tuple[float, str]] = []
    assert model_zip(run, tmp_path / "out", "my-run", progress=lambda d, w: again.append((d, w))) == path
    assert again == [(1.0, again[-1][1])]

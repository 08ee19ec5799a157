"""A fine-tuned encoder as a masked LM: the fine-tuning run's encoder with the masked-LM head of the model it
started from.

A fine-tuning run saves a ``BertForSequenceClassification`` (the encoder, a pooler, a classifier); loaded as a
masked LM, its encoder weights are used as they are and its head (``cls.predictions``: the transform and the
output bias; the output matrix is tied to the word embeddings, fine-tuned with them) is missing. The run's
settings, saved beside it (:data:`FINETUNE_CONFIG_FILE`), name its start: the embedded masked-LM, or a
pretraining run's checkpoint (its folder). :func:`borrow_start_head` copies that start's head in, so Fill-Mask
asks the fine-tuned encoder with the original head — and measures what fine-tuning did to it. A run started
from random weights had no trained head: none is borrowed (the model loads without one, and says so).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from bertdemo.models import embedded

FINETUNE_CONFIG_FILE = "finetune_config.json"  # a fine-tuning run's settings, saved beside its model
HEAD_PREFIX = "cls."  # the masked-LM head's parameters in BertForMaskedLM


def start_folder(folder: str | Path, cache_dir: str | Path | None = None) -> tuple[str | None, str]:
    """(the folder of the model a fine-tuning run started from, how to name it) for a fine-tuned model's
    ``folder``; (None, why) when it has no start with a head: not a fine-tuning run, a random start, or a start
    that is gone."""
    try:
        settings = json.loads((Path(folder) / FINETUNE_CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return None, "not a fine-tuning run"
    init = str(settings.get("init", ""))
    if init == "embedded":
        try:
            return str(embedded.mlm_dir(cache_dir=cache_dir)), "the embedded masked-LM"
        except (OSError, ValueError):
            return None, "the embedded masked-LM is not in this install"
    if init == "random" or init.startswith("random:"):  # random weights of the embedded model's or a run's shape
        return None, "it started from random weights: there is no trained masked-LM head to borrow"
    path = str(settings.get("init_path", ""))
    if path and (Path(path) / "config.json").is_file():
        return path, f"its start, {init}"
    return None, f"its start ({init}) is no longer on this server"


def _head_weights(folder: str | Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = sorted(Path(folder).glob("*.safetensors"))
    weights: dict[str, torch.Tensor] = {}
    for file in files:
        weights.update({k: v for k, v in load_file(str(file)).items() if k.startswith(HEAD_PREFIX)})
    return weights


def borrow_start_head(model: torch.nn.Module, folder: str | Path, missing: list[str],
                      cache_dir: str | Path | None = None) -> tuple[list[str], str]:
    """Copy the masked-LM head of a fine-tuned model's start into ``model`` (loaded from ``folder``), for the
    head parameters in ``missing``. Returns (what is still missing, a note naming where the head came from or
    why none was borrowed). Only head parameters are ever copied; the encoder stays the fine-tuned one."""
    head_missing = [k for k in missing if k.startswith(HEAD_PREFIX)]
    if not head_missing or not (Path(folder) / FINETUNE_CONFIG_FILE).is_file():
        return missing, ""  # not a fine-tuning run's model: its note stays as it was
    start, name = start_folder(folder, cache_dir)
    if start is None:
        return missing, f"fine-tuned encoder without a masked-LM head: {name}"
    weights = _head_weights(start)
    own = model.state_dict()
    # the output matrix is tied to the (fine-tuned) word embeddings: never copied over them
    usable = {k: v for k, v in weights.items()
              if k in own and own[k].shape == v.shape and not k.endswith("decoder.weight")}
    if not all(k in usable for k in head_missing):
        return missing, f"fine-tuned encoder without a masked-LM head: {name} has none of this shape"
    with torch.no_grad():
        for key, value in usable.items():
            own[key].copy_(value.to(own[key].dtype))
    still = [k for k in missing if k not in usable]
    return still, (f"the fine-tuned encoder with the masked-LM head of {name} (the head as it was before "
                   "fine-tuning; the output matrix is the word embeddings, fine-tuned)")

"""The BERT a run trains: built fresh for the run's shape, warm-started from a model folder, or
loaded from a checkpoint; and partial freezing (train only the top layers / keep the embeddings).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import BertConfig, BertForMaskedLM, BertForPreTraining

from bertdemo.models.init_lock import MODEL_INIT_LOCK
from bertdemo.pretrain.config import TrainConfig, bert_config

BertPretrainModel = BertForMaskedLM | BertForPreTraining


def build_model(cfg: TrainConfig, tokenizer) -> BertPretrainModel:
    """A freshly initialised BertForMaskedLM (or BertForPreTraining with NSP) for the run's shape,
    or, with `cfg.model.init_from`, the pretrained encoder of that folder plus a new head."""
    if cfg.model.init_from:
        model = warm_start_model(cfg.model.init_from, cfg.objective.nsp)
    else:
        config = bert_config(cfg, vocab_size=len(tokenizer))
        config.pad_token_id = tokenizer.pad_token_id
        with MODEL_INIT_LOCK:
            model = (BertForPreTraining if cfg.objective.nsp else BertForMaskedLM)(config)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"The model's vocabulary has {model.config.vocab_size} entries, the tokenizer "
                         f"{len(tokenizer)}: warm-start from a model with the uncased BERT vocabulary.")
    apply_freeze(model, cfg.model.train_layers, cfg.model.freeze_embeddings)
    if not cfg.model.position_embeddings:
        remove_position_embeddings(model)
    return model


def remove_position_embeddings(model: BertPretrainModel) -> None:
    """Zero the learned position embeddings and keep them at zero (frozen): the encoder then sees a
    bag of tokens and cannot tell their order (attention itself is permutation-equivariant)."""
    weight = model.bert.embeddings.position_embeddings.weight
    with torch.no_grad():
        weight.zero_()
    weight.requires_grad_(False)


def warm_start_model(path: str, nsp: bool = False) -> BertPretrainModel:
    """The encoder weights of the model folder `path` (e.g. a bare ``BertModel``) with an MLM (+NSP)
    head: kept when the folder has one, else new, its decoder tied to the word embeddings."""
    model_cls = BertForPreTraining if nsp else BertForMaskedLM
    config = BertConfig.from_pretrained(path)
    config.architectures = [model_cls.__name__]
    config.tie_word_embeddings = True  # decoder weight = word embeddings (original BERT)
    with MODEL_INIT_LOCK:
        model = model_cls.from_pretrained(path, config=config)
        model.tie_weights()
    return model


def apply_freeze(model: BertPretrainModel, train_layers: int = -1, freeze_embeddings: bool = False) -> None:
    """Train only part of the model: `train_layers` = k >= 0 keeps the embeddings and all but the top
    k encoder layers fixed (the MLM head always trains; its decoder follows the embeddings, to which it
    is tied); `freeze_embeddings` fixes only the embeddings. -1 / False = everything trains."""
    if train_layers < 0 and not freeze_embeddings:
        return
    bert = model.bert
    frozen: list[nn.Module] = [bert.embeddings]
    if train_layers >= 0:
        n = len(bert.encoder.layer)
        frozen += list(bert.encoder.layer[: n - train_layers])
    for module in frozen:
        module.requires_grad_(False)


def trainable_names(model: nn.Module) -> list[str]:
    """Names of the parameters that training changes (tied weights under their first name)."""
    return [name for name, p in model.named_parameters() if p.requires_grad]


def model_from_config(config: dict, nsp: bool) -> BertPretrainModel:
    """A model of a checkpoint's architecture (its config.json content), for weights already in memory."""
    model_cls = BertForPreTraining if nsp else BertForMaskedLM
    with MODEL_INIT_LOCK:
        return model_cls(BertConfig.from_dict(config))


def load_weights(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load a state dict into ``model``; a name it lacks is fine only for a tied weight (the decoder's, which
    a safetensors file keeps once). ValueError naming the weights that differ otherwise."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    params = model.state_dict(keep_vars=True)
    loaded = {id(params[name]) for name in state if name in params}
    untied = [name for name in missing if id(params[name]) not in loaded]
    if untied or unexpected:
        raise ValueError(f"The weights do not fit this model: missing {untied}, unexpected {unexpected}.")


def load_checkpoint_model(path: str, nsp: bool) -> BertPretrainModel:
    """Model weights of a checkpoint folder, with the NSP head (new if absent) when `nsp`."""
    model_cls = BertForPreTraining if nsp else BertForMaskedLM
    with MODEL_INIT_LOCK:
        return model_cls.from_pretrained(path)

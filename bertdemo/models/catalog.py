"""The model names the page offers: the default, the curated hub models, the embedded ones.

Torch-free, so the page's model pickers can be built before PyTorch is loaded;
:class:`bertdemo.models.store.ModelStore` offers the same choices.
"""

from __future__ import annotations

from collections.abc import Callable

from bertdemo.models import embedded, twins

DEFAULT_MODEL = "bert-base-uncased"
CURATED_MODELS = [
    "bert-base-uncased",
    "bert-base-cased",
    "bert-large-uncased",
    "distilbert-base-uncased",
    "google/bert_uncased_L-2_H-128_A-2",
    "roberta-base",
]

ExtraChoices = Callable[[], list[tuple[str, str]]]


def model_choices(default: str, extra: ExtraChoices | None = None) -> list[tuple[str, str]]:
    """(label, value) pairs for the model dropdowns: curated, embedded, then ``extra()`` (checkpoints)."""
    items = [(name, name) for name in CURATED_MODELS]
    if default not in CURATED_MODELS:
        items.insert(0, (default, default))
    if embedded.has_mlm_assets():
        items.append((f"{embedded.EMBEDDED_MLM_NAME} (offline masked-LM)", embedded.EMBEDDED_MLM_NAME))
    items.append((f"{embedded.EMBEDDED_ENCODER_NAME} (offline, no MLM head)", embedded.EMBEDDED_ENCODER_NAME))
    items += [(f"{twins.TWIN_NAMES[kind]} ({label})", twins.TWIN_NAMES[kind])
              for kind, label in (("mlm", "twin: masked LM"), ("ltr", "twin: left-to-right LM, every next word"),
                                  ("ltr-masked", "twin: left-to-right LM, the masked twin's words"))
              if twins.has_twin(kind)]
    if extra is not None:
        items.extend(extra())
    return items

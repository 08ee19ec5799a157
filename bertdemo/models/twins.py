"""The twins that ship with the app: a masked LM and a left-to-right LM of one shape, trained by this project's
engine with one recipe, on the same batches in the same order — only the objective differs (BERT's Table 5 in
miniature: what bidirectional pretraining buys, with no training to wait for).

``bertdemo/assets/twins/mlm`` holds a ``BertForMaskedLM``, ``bertdemo/assets/twins/ltr`` a ``BertLMHeadModel``
(``is_decoder=True``); each is a plain model folder (config, fp16 weights, the uncased tokenizer) that stock
transformers opens (``AutoModelForMaskedLM`` / ``AutoModelForCausalLM``). How they were built, and how to
rebuild them: ``bertdemo/assets/twins/README.md`` and ``python -m bertdemo.tools.build_twins``.
In the app they are the models :data:`TWIN_NAMES` in every model picker; ``bertdemo.models.loading.load_twin(kind)``
loads one. Torch-free: the pickers list the twins before torch loads.
"""

from __future__ import annotations

from pathlib import Path

TWINS_DIR = Path(__file__).resolve().parents[1] / "assets" / "twins"
TWIN_KINDS = ("mlm", "ltr")
TWIN_NAMES = {"mlm": "embedded/twin-mlm", "ltr": "embedded/twin-ltr"}
TWIN_NOTES = {
    "mlm": "the masked-LM twin (BERT: sees both sides), bert-tiny shape, trained by this project",
    "ltr": "the left-to-right twin (GPT-style: sees only the words before), bert-tiny shape, trained by this "
           "project on the same batches as the masked-LM twin",
}


def twin_dir(kind: str) -> Path:
    """The model folder of the ``"mlm"`` or ``"ltr"`` twin (ValueError for another kind)."""
    if kind not in TWIN_KINDS:
        raise ValueError(f"A twin is 'mlm' or 'ltr', not {kind!r}.")
    return TWINS_DIR / kind


def has_twin(kind: str) -> bool:
    """Whether the twin's files ship with this install."""
    folder = twin_dir(kind)
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def twin_kind(name: str) -> str | None:
    """``"mlm"`` / ``"ltr"`` for a twin's model name, None for other names."""
    return next((kind for kind, twin in TWIN_NAMES.items() if twin == name), None)


"""The twins that ship with the app: a masked LM and two left-to-right LMs of one shape, trained by this project's
engine with one recipe and one seed, on the same data (one build: ``build.json``) — only the objective
differs (BERT's Table 5 and Figure 5 in miniature: what bidirectional pretraining buys, with no training to wait for). They make two pairs
(:data:`PAIRS`): *controlled* (the left-to-right twin predicts the words the masking rule picks, as the masked one does; only what each
prediction may read differs) and *paper* (the left-to-right twin predicts every next word, as GPT does).

``bertdemo/assets/twins/mlm`` holds a ``BertForMaskedLM``, ``ltr`` and ``ltr-masked`` a ``BertLMHeadModel``
(``is_decoder=True``); each is a plain model folder (config, fp16 weights, the pairs' own uncased WordPiece
tokenizer) that stock transformers opens (``AutoModelForMaskedLM`` / ``AutoModelForCausalLM``). ``curve.json`` holds
what they measured along their training (the crossover), ``heldout.npz`` the held-out questions of their corpus.
How they were built, and how to rebuild them: ``bertdemo/assets/twins/README.md``,
``python -m bertdemo.tools.build_twin_pairs`` and ``python -m bertdemo.tools.measure_twin_pairs``.
In the app they are the models :data:`TWIN_NAMES` in every model picker; ``bertdemo.models.loading.load_twin(kind)``
loads one. Torch-free: the pickers list the twins before torch loads.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from bertdemo.english import plural

TWINS_DIR = Path(__file__).resolve().parents[1] / "assets" / "twins"
TWIN_KINDS = ("mlm", "ltr", "ltr-masked")
TWIN_NAMES = {"mlm": "embedded/twin-mlm", "ltr": "embedded/twin-ltr", "ltr-masked": "embedded/twin-ltr-masked"}
TWIN_NOTES = {
    "mlm": "the masked-LM twin (BERT: sees both sides), trained by this project",
    "ltr": "the left-to-right twin (GPT-style: predicts every next word from the words before), trained by this "
           "project on the same data with the masked-LM twin's recipe",
    "ltr-masked": "the controlled left-to-right twin (sees only the words before, and predicts only the words the "
                  "masking rule picks, as the masked-LM twin does), trained by this project on the same data",
}
# name -> (masked LM, left-to-right LM): the two comparisons the twins make
PAIRS = {"controlled": ("mlm", "ltr-masked"), "paper": ("mlm", "ltr")}
PAIR_NOTES = {
    "controlled": "only the context differs: both predict 15 % of the words of every batch, picked by one masking "
                  "rule; the masked LM reads both sides of each, the left-to-right LM the words before it",
    "paper": "the paper's setting: the masked LM predicts 15 % of the words, the left-to-right LM every next word "
             "(GPT)",
}
CURVE_FILE = TWINS_DIR / "curve.json"
HELDOUT_FILE = TWINS_DIR / "heldout.npz"


def twin_dir(kind: str) -> Path:
    """The model folder of the ``"mlm"`` or ``"ltr"`` twin (ValueError for another kind)."""
    if kind not in TWIN_KINDS:
        raise ValueError(f"A twin is 'mlm', 'ltr' or 'ltr-masked', not {str(kind)[:40]!r}.")
    return TWINS_DIR / kind


def shape_words(layers: int, hidden: int, heads: int) -> str:
    """A model's shape in words, as the page names every shape: "3 layers, hidden 256, 4 heads"."""
    return f"{plural(layers, 'layer')}, hidden {hidden}, {plural(heads, 'head')}"


@lru_cache(maxsize=len(TWIN_KINDS))
def shape_text(kind: str = "mlm") -> str:
    """The twin's shape in words, read once from its shipped config: "3 layers, hidden 256, 4 heads" ("" when not
    installed)."""
    try:
        cfg = json.loads((twin_dir(kind) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return shape_words(cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"])


def twin_note(kind: str) -> str:
    """What the twin is, in one line for the page's model note: :data:`TWIN_NOTES` with its shape."""
    shape = shape_text(kind)
    return f"{TWIN_NOTES[kind]} ({shape})" if shape else TWIN_NOTES[kind]


def has_twin(kind: str) -> bool:
    """Whether the twin's files ship with this install."""
    folder = twin_dir(kind)
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def twin_kind(name: str) -> str | None:
    """``"mlm"`` / ``"ltr"`` / ``"ltr-masked"`` for a twin's model name, None for other names."""
    return next((kind for kind, twin in TWIN_NAMES.items() if twin == name), None)


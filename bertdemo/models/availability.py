"""Can this model choice load right now, and which model really answered?

The page never misleads: a choice that cannot load (model hub unreachable and not in the
local Hugging Face cache) is marked in the dropdowns, and every result names the model that
answered — e.g. "embedded/bert-explorer-mlm standing in for bert-base-uncased (model hub
unreachable)" when the default hub model is asked for offline. Also the offline cased
tokenizer shipped under ``bertdemo/assets/wordpiece_cased_wiki/``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from bertdemo.models import embedded
from bertdemo.models.hub import HubProbe
from bertdemo.models.policy import path_exists
from bertdemo.models.run_refs import FINETUNE_PREFIX, RUN_PREFIX
from bertdemo.models.twins import TWIN_NAMES

CASED_TOKENIZER_NAME = "embedded/wordpiece-cased-wiki"
CASED_TOKENIZER_DIR = Path(__file__).resolve().parents[1] / "assets" / "wordpiece_cased_wiki"
UNAVAILABLE = "unavailable: hub unreachable, not in the local cache"
STAND_IN = "hub unreachable: the embedded model stands in"
_EMBEDDED = {embedded.EMBEDDED_MLM_NAME, embedded.EMBEDDED_ENCODER_NAME, CASED_TOKENIZER_NAME, *TWIN_NAMES.values()}


def in_local_cache(repo_id: str) -> bool:
    """True when the local Hugging Face cache holds ``repo_id``'s config.json (so it can load offline)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # noqa: BLE001 - an invalid repo id is simply not cached
        return False


def is_hub_id(name: str) -> bool:
    """A name loaded from the model hub (not embedded, not a local folder)."""
    name = (name or "").strip()
    return (bool(name) and name not in _EMBEDDED  # "run:<id>", "ft:<id>": a run of this server
            and not name.startswith((RUN_PREFIX, FINETUNE_PREFIX)) and not path_exists(name))


def can_load_now(name: str, hub: HubProbe) -> bool:
    """Whether ``name`` itself (not a stand-in) can load right now."""
    if not is_hub_id(name):
        return True
    return hub.reachable() or in_local_cache(name)


def label_choices(choices: list[tuple[str, str]], default: str, hub: HubProbe) -> list[tuple[str, str]]:
    """Dropdown (label, value) pairs with the choices that cannot load now marked as such."""
    out = []
    for label, value in choices:
        if not can_load_now(value, hub):
            label = f"{label} ({STAND_IN if value == default else UNAVAILABLE})"
        out.append((label, value))
    return out


def _stands_in(requested: str, answered: str) -> bool:
    return bool(requested) and answered != requested and is_hub_id(requested)


def answered_by(requested: str, loaded) -> str:
    """One line naming the model that answered, and why when it is not the one asked for."""
    if _stands_in(requested, loaded.name):
        return f"{loaded.name} standing in for {requested} (model hub unreachable)"
    if loaded.source == "hub cache":
        return f"{loaded.name} (from the local cache; model hub unreachable)"
    return loaded.name


def stand_in_caveat(requested: str, loaded) -> str:
    """When a stand-in answered a hub model's question: that the model asked for would answer differently,
    and why (a smaller model, trained on far less text); "" otherwise."""
    if not _stands_in(requested, loaded.name):
        return ""
    cfg = getattr(getattr(loaded, "model", None), "config", None)
    shape = (f" ({cfg.num_hidden_layers} layers, H = {cfg.hidden_size})"
             if hasattr(cfg, "num_hidden_layers") and hasattr(cfg, "hidden_size") else "")
    example = (" — e.g. for \"Nice to [MASK] you.\" bert-base-uncased puts *meet* first"
               if requested == "bert-base-uncased" else "")
    return (f"{requested} itself would answer differently: {loaded.name} is a smaller model{shape}, its "
            f"masked-LM head trained here on far less text, so its words and probabilities are its own{example}.")


def tokenizer_answered_by(requested: str, tokenizer) -> str:
    """Like :func:`answered_by` for a tokenizer alone (the embedded vocabulary may stand in)."""
    source = str(getattr(tokenizer, "name_or_path", "") or "")
    if is_hub_id(requested) and path_exists(source):
        return (f"embedded uncased WordPiece (bert-base-uncased's ids) standing in for {requested} "
                "(model hub unreachable)")
    return requested


@lru_cache(maxsize=1)
def cased_tokenizer():
    """The offline cased WordPiece tokenizer built from the embedded Wikipedia summaries."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(CASED_TOKENIZER_DIR))


def get_tokenizer(store, name: str | None):
    """``store.get_tokenizer`` that also knows the offline cased tokenizer."""
    if (name or "").strip() == CASED_TOKENIZER_NAME:
        return cased_tokenizer()
    return store.get_tokenizer(name)


def requested_name(store, name: str | None) -> str:
    """The name a request asks for (the store's default when empty)."""
    return (name or "").strip() or store.default

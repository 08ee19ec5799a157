"""Failures said as what to change: never a server path, never a library's own advice. Torch-free.

Load failures (a model name that is not a model), and the faults nobody planned for (:func:`shown_fault`:
a run that fails on a full disk, say), whose status every visitor of a public server may read."""

from __future__ import annotations

import re

MAX_NAME_CHARS = 1000
MAX_NAME_PART_CHARS = 255  # longer than a file name can be: "File name too long" otherwise
PATH_IN_TEXT = re.compile(r"(?:[A-Za-z]:)?[\\/][^\s'\"`,;]*")


def mask_paths(text: str) -> str:
    """``text`` with every file-system path replaced by ``<folder>``."""
    return PATH_IN_TEXT.sub("<folder>", text)


def shown_fault(err: BaseException, limit: int = 500) -> str:
    """An unplanned fault as a shared status shows it: its type and text, every path masked, at most ``limit``
    characters (the full error goes to the server's log)."""
    return mask_paths(f"{type(err).__name__}: {err}")[:limit]


def check_name_length(name: str, public: bool) -> None:
    """ValueError for a model name too long to be a hub id or a folder (every mode)."""
    if len(name) > MAX_NAME_CHARS or any(len(part) > MAX_NAME_PART_CHARS for part in name.split("/")):
        raise ValueError(f"That model name is {len(name):,} characters long; type a hub id such as "
                         "bert-base-uncased" + ("" if public else " or a folder") + ".")


def not_found_message(name: str, hub_reachable: bool, public: bool) -> str:
    """What a missing hub model gets; in public mode also a local name shaped like a hub id (the same words)."""
    if hub_reachable:
        return (f"{name!r} is not a model on the hub (or it is private): check the spelling, "
                "e.g. bert-base-uncased or google/bert_uncased_L-2_H-128_A-2.")
    where = "the embedded model or a run checkpoint" + ("" if public else ", or a local model folder")
    return f"Model hub unreachable and {name!r} is not in the local cache. Choose {where}."


def explain_load_error(name: str, exc: BaseException) -> str:
    """A load failure said as what to change, never with a server path or a library's own advice."""
    text = str(exc)
    if (isinstance(exc, OSError) and getattr(exc, "errno", None) == 36) or "File name too long" in text:
        return "That model name is too long; type a hub id such as bert-base-uncased."
    if "Weights only load failed" in text or type(exc).__name__ == "UnpicklingError":
        return (f"The weights of {name!r} are a pickle that cannot be loaded safely: save the model with "
                "save_pretrained(safe_serialization=True) and load that folder.")
    if "no file named model.safetensors" in text and "pytorch_model.bin" not in text:
        return (f"{name!r} has no safetensors weights (model.safetensors), and this server loads safetensors "
                "only: pick another model or save this one with save_pretrained(safe_serialization=True).")
    if "no file named" in text:
        return f"{name!r} has no weights file (model.safetensors): save the model with save_pretrained."
    if "Unrecognized model" in text or "model_type" in text:
        return (f"The config.json of {name!r} names no model type this app knows: pick a masked-LM such as "
                "BERT, RoBERTa or DistilBERT.")
    if "is not a valid model identifier" in text or "Repository Not Found" in text or "404" in text:
        return not_found_message(name, hub_reachable=True, public=False)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"Could not load {name!r} as a masked-LM: {mask_paths(first)}"

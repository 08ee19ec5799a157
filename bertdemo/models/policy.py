"""Public mode: which models a visitor may load, and how.

On a public server (``--share``, ``--public`` or a Hugging Face Space) a visitor may load hub ids
(up to a size cap), the embedded models, and checkpoints of this server's own runs (folders under
``runs_dir``) — no other file-system path. Every other path gets one message, the same whether or
not it exists, and no message names a server path. Weights load as safetensors only (pickled
``.bin`` files can run code). Localhost (public mode off) keeps full power: nothing here applies.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

REFUSED = "Only hub ids, the embedded models and this server's runs can be loaded here."
DEFAULT_MAX_MODEL_GB = 1.5
# a hub id: "name" or "owner/name" of letters, digits, "-", "_", "."; no "..", no leading "." or "-"
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


@dataclass(frozen=True)
class PublicPolicy:
    """The rules of a public server: its runs folder and the largest hub checkpoint it downloads."""

    runs_dir: Path
    max_model_gb: float = DEFAULT_MAX_MODEL_GB
    allowed: frozenset[str] = frozenset()  # names the operator chose (e.g. --model), loaded as on localhost


_lock = threading.Lock()
_policy: PublicPolicy | None = None
_size_cache: OrderedDict[str, int | None] = OrderedDict()  # hub id -> weights bytes, newest last
SIZE_CACHE_ENTRIES = 256  # visitors type the names: remembered, but not without bound


def set_public(runs_dir: str | Path, max_model_gb: float = DEFAULT_MAX_MODEL_GB,
               allowed: tuple[str, ...] = ()) -> PublicPolicy:
    """Turn public mode on for this process (the app does this at start); ``allowed``: the operator's own models."""
    global _policy
    with _lock:
        _policy = PublicPolicy(Path(runs_dir), float(max_model_gb), frozenset(a for a in allowed if a))
    set_runs_dir(runs_dir)
    return _policy


def set_local() -> None:
    """Turn public mode off (localhost: every path and format allowed)."""
    global _policy
    with _lock:
        _policy = None


def current() -> PublicPolicy | None:
    """The public policy in force, or None on a local server."""
    return _policy


def is_public() -> bool:
    return _policy is not None


def is_within(path: str | Path, root: str | Path) -> bool:
    """True when ``path`` (symlinks and ``..`` resolved) is ``root`` or inside it."""
    try:
        resolved = Path(path).expanduser().resolve()
        base = Path(root).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return resolved == base or base in resolved.parents


def looks_like_hub_id(name: str) -> bool:
    return bool(_HUB_ID.match(name)) and ".." not in name


def screen(name: str) -> str | None:
    """Public mode: "run" (a folder of this server's runs) or "hub" (a hub id), else ValueError(REFUSED).

    None on a local server. A name that looks like a hub id but is also a path on this server
    (relative to the working folder) is refused too: the loaders would read the local folder.
    """
    check_name_length(name)
    policy = _policy
    if policy is None or name in policy.allowed:
        return None
    if _is_run_folder(name, policy):
        return "run"
    if looks_like_hub_id(name):
        if _exists(name):  # a folder here: answer as the hub would for a missing model, not "refused"
            from bertdemo.models import hub

            raise ValueError(not_found_message(name, hub.hub_reachable()))
        return "hub"
    raise ValueError(REFUSED)


def _is_run_folder(name: str, policy: PublicPolicy) -> bool:
    """A checkpoint folder of this server's runs: <run>/checkpoint or <run>/previous/step-<n>, with a config.json."""
    try:
        path = Path(name).expanduser().resolve()
        root = policy.runs_dir.expanduser().resolve()
        rel = path.relative_to(root).parts
    except (OSError, ValueError, RuntimeError):
        return False
    shaped = (len(rel) == 2 and rel[1] == "checkpoint") or (len(rel) == 3 and rel[1] == "previous"
                                                           and rel[2].startswith("step-"))
    return shaped and not rel[0].startswith(".") and (path / "config.json").is_file()


def _exists(name: str) -> bool:
    try:
        return Path(name).exists()
    except (OSError, ValueError):
        return False


def load_kwargs() -> dict:
    """Extra from_pretrained arguments: safetensors only in public mode (never trust_remote_code anywhere)."""
    return {"use_safetensors": True} if _policy is not None else {}


def hub_weights_bytes(repo_id: str) -> int | None:
    """Total size of a hub repo's safetensors weights (None when the hub cannot tell); remembered."""
    if repo_id in _size_cache:
        return _size_cache[repo_id]
    from huggingface_hub import model_info

    try:
        info = model_info(repo_id, files_metadata=True, timeout=5)
    except Exception:  # noqa: BLE001 - unknown repo, gated, network: the loader reports it itself
        return None
    sizes = [s.size or 0 for s in (info.siblings or []) if s.rfilename.endswith(".safetensors")]
    total = sum(sizes) if sizes else None
    with _lock:
        _size_cache[repo_id] = total
        while len(_size_cache) > SIZE_CACHE_ENTRIES:
            _size_cache.popitem(last=False)
    return total


def check_hub_size(repo_id: str, size_bytes: int | None = None) -> None:
    """Public mode: refuse a hub checkpoint above the size cap, before downloading it.

    ``size_bytes`` is looked up on the hub when not given; call only when the hub is reachable
    (offline the size cannot be checked, and nothing can be downloaded anyway).
    """
    policy = _policy
    if policy is None:
        return
    size = hub_weights_bytes(repo_id) if size_bytes is None else size_bytes
    if size is not None and size > policy.max_model_gb * 1e9:
        raise ValueError(f"{repo_id} is {size / 1e9:.1f} GB; this public server loads hub models up to "
                         f"{policy.max_model_gb:g} GB. Pick a smaller one, e.g. bert-base-uncased.")


# --- names and load errors, said so that a person knows what to change ---------------------------

MAX_NAME_CHARS = 1000
MAX_NAME_PART_CHARS = 255  # longer than a file name can be: "File name too long" otherwise


def check_name_length(name: str) -> None:
    """ValueError for a model name too long to be a hub id or a folder (every mode)."""
    if len(name) > MAX_NAME_CHARS or any(len(part) > MAX_NAME_PART_CHARS for part in name.split("/")):
        raise ValueError(f"That model name is {len(name):,} characters long; type a hub id such as "
                         "bert-base-uncased" + ("" if _policy is not None else " or a folder") + ".")


def not_found_message(name: str, hub_reachable: bool) -> str:
    """What a missing hub model gets; in public mode also a local name shaped like a hub id (the same words)."""
    if hub_reachable:
        return (f"{name!r} is not a model on the hub (or it is private): check the spelling, "
                "e.g. bert-base-uncased or google/bert_uncased_L-2_H-128_A-2.")
    where = "the embedded model or a run checkpoint" + ("" if _policy is not None else ", or a local model folder")
    return f"Model hub unreachable and {name!r} is not in the local cache. Choose {where}."


_PATH_IN_TEXT = re.compile(r"(?:[A-Za-z]:)?[\\/][^\s'\"`,;]*")


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
        return not_found_message(name, hub_reachable=True)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"Could not load {name!r} as a masked-LM: {_PATH_IN_TEXT.sub('<folder>', first)}"


# --- this server's runs, named without their server folder ------------------------------------------

RUN_PREFIX = "run:"
_runs_dir: Path | None = None


def set_runs_dir(runs_dir: str | Path) -> None:
    """Where this server's runs live (every mode): ``run:<run id>/checkpoint`` names a run's latest checkpoint."""
    global _runs_dir
    _runs_dir = Path(runs_dir)


def run_reference(checkpoint: str | Path) -> str:
    """``run:<run id>/checkpoint`` for a run's latest checkpoint, ``run:<run id>/previous/step-<n>`` for an
    earlier one: what the pages show and send instead of the folder (no server path)."""
    root = _runs_dir if _runs_dir is not None else (_policy.runs_dir if _policy is not None else Path("runs"))
    return RUN_PREFIX + Path(checkpoint).relative_to(root).as_posix()


def resolve_run_reference(name: str) -> str | None:
    """The checkpoint folder a ``run:`` name stands for (None for other names); ValueError when it is none."""
    if not name.startswith(RUN_PREFIX):
        return None
    rel = name[len(RUN_PREFIX):].strip("/")
    parts = rel.split("/")
    root = _runs_dir if _runs_dir is not None else (_policy.runs_dir if _policy is not None else None)
    ok = root is not None and ((len(parts) == 2 and parts[1] == "checkpoint") or (
        len(parts) == 3 and parts[1] == "previous" and parts[2].startswith("step-")))
    if ok and all(p and not p.startswith(".") for p in parts):
        folder = root.joinpath(*parts)
        if (folder / "config.json").is_file():
            return str(folder)
    raise ValueError(f"There is no run {name[len(RUN_PREFIX):]!r} on this server (deleted?): pick one from the list.")

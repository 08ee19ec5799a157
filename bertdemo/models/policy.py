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
_size_cache: dict[str, int | None] = {}


def set_public(runs_dir: str | Path, max_model_gb: float = DEFAULT_MAX_MODEL_GB,
               allowed: tuple[str, ...] = ()) -> PublicPolicy:
    """Turn public mode on for this process (the app does this at start); ``allowed``: the operator's own models."""
    global _policy
    with _lock:
        _policy = PublicPolicy(Path(runs_dir), float(max_model_gb), frozenset(a for a in allowed if a))
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
    policy = _policy
    if policy is None or name in policy.allowed:
        return None
    if _is_run_folder(name, policy):
        return "run"
    if looks_like_hub_id(name) and not _exists(name):
        return "hub"
    raise ValueError(REFUSED)


def _is_run_folder(name: str, policy: PublicPolicy) -> bool:
    try:
        return is_within(name, policy.runs_dir) and Path(name).expanduser().exists()
    except (OSError, ValueError):
        return False


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
    _size_cache[repo_id] = total
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

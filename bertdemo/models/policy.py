"""Which models a visitor may load, and how: one :class:`AccessPolicy` per server (built from its settings).

On a public server (``--share``, ``--public`` or a Hugging Face Space) a visitor may load hub ids
(up to a size cap, checked on the hub before downloading), the embedded models, and checkpoints of
this server's own runs — no other file-system path. Every other path gets one message, the same
whether or not it exists, and no message names a server path. Weights load as safetensors only
(pickled ``.bin`` files can run code). Localhost (``public`` is None) keeps full power. Torch-free.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from bertdemo.models import load_errors, run_refs
from bertdemo.models.hub import HubProbe

REFUSED = "Only hub ids, the embedded models and this server's runs can be loaded here."
SIZE_CACHE_ENTRIES = 256  # visitors type the names: remembered, but not without bound
# a hub id: "name" or "owner/name" of letters, digits, "-", "_", "."; no "..", no leading "." or "-"
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")

SizeLookup = Callable[[str], int]  # hub id -> bytes of its safetensors weights; raises when the hub cannot tell


def looks_like_hub_id(name: str) -> bool:
    return bool(_HUB_ID.match(name)) and ".." not in name


def path_exists(name: str) -> bool:
    """Whether ``name`` is an existing path here (False for names no file system accepts)."""
    try:
        return Path(name).expanduser().exists()
    except (OSError, ValueError):
        return False


def is_within(path: str | Path, root: str | Path) -> bool:
    """True when ``path`` (symlinks and ``..`` resolved) is ``root`` or inside it."""
    try:
        resolved = Path(path).expanduser().resolve()
        base = Path(root).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return resolved == base or base in resolved.parents


def hub_weights_bytes(repo_id: str) -> int:
    """Total size of a hub repo's safetensors weights (0 when it has none); LookupError when the hub cannot tell."""
    from huggingface_hub import model_info

    try:
        info = model_info(repo_id, files_metadata=True, timeout=5)
    except Exception as exc:  # unknown repo, gated, timeout, rate limit: all "cannot tell"
        raise LookupError(f"{type(exc).__name__}") from exc
    return sum(s.size or 0 for s in (info.siblings or []) if s.rfilename.endswith(".safetensors"))


class AccessPolicy:
    """The load rules of one server: public or not, its runs folder, the hub's size lookups (an LRU)."""

    def __init__(self, public_max_model_gb: float | None = None, allowed: frozenset[str] = frozenset(),
                 runs_dir: str | Path | None = None, hub: HubProbe | None = None,
                 size_lookup: SizeLookup = hub_weights_bytes, served: tuple[tuple[str, str], ...] = ()) -> None:
        self.max_model_gb = public_max_model_gb  # None: a local server (no rules)
        self.allowed = allowed  # names the operator chose (e.g. --model), loaded as on localhost
        self.served = dict(served)  # "served:<name>" -> the operator's local folder it stands for (public mode)
        self.runs_dir = Path(runs_dir) if runs_dir is not None else None
        self.hub = hub or HubProbe()
        # thread-safe, least recently used out first, and a failed lookup is not remembered
        self._size = functools.lru_cache(maxsize=SIZE_CACHE_ENTRIES)(size_lookup)

    @property
    def public(self) -> bool:
        return self.max_model_gb is not None

    # --- names --------------------------------------------------------------------------------

    def screen(self, name: str) -> str | None:
        """Public mode: "hub" (a hub id), else ValueError(REFUSED); None on a local server.

        This server's runs are loaded by their ``run:<id>/checkpoint`` names only: a folder path, even
        one inside the runs folder, gets the same refusal as any other path (answering otherwise would
        tell a visitor where the runs live). A name that looks like a hub id but is also a path on this
        server (relative to the working folder) is refused too: the loaders would read the local folder.
        """
        load_errors.check_name_length(name, self.public)
        if not self.public or name in self.allowed:
            return None
        if looks_like_hub_id(name):
            if path_exists(name):  # a folder here: answer as the hub would for a missing model, not "refused"
                raise ValueError(self.not_found_message(name, self.hub.reachable()))
            return "hub"
        raise ValueError(REFUSED)

    def run_reference(self, checkpoint: str | Path) -> str:
        """``run:<run id>/checkpoint`` for a checkpoint folder of this server's runs."""
        return run_refs.run_reference(checkpoint, self.runs_dir or Path("runs"))

    def resolve_run_reference(self, name: str) -> str | None:
        """The folder a ``run:`` name stands for; None for other names; ValueError for a run that is gone."""
        return run_refs.resolve_run_reference(name, self.runs_dir)

    def server_folder(self, name: str) -> str | None:
        """The folder of a name that stands for one on this server without showing it: a ``run:`` name, an
        ``ft:`` name (a fine-tuning run's model), or the ``served:`` name of the operator's own ``--model`` folder
        (public mode); None for other names."""
        return (self.served.get(name) or self.resolve_run_reference(name)
                or run_refs.resolve_finetune_reference(name, self.runs_dir))

    # --- loading ------------------------------------------------------------------------------

    def load_kwargs(self) -> dict:
        """Extra from_pretrained arguments: safetensors only in public mode (never trust_remote_code anywhere)."""
        return {"use_safetensors": True} if self.public else {}

    def check_hub_size(self, repo_id: str) -> None:
        """Public mode: refuse a hub checkpoint above the size cap — or whose size the hub cannot tell —
        before downloading it. Call only when the hub is reachable."""
        if not self.public or repo_id in self.allowed:
            return
        try:
            size = self._size(repo_id)
        except LookupError:
            raise ValueError(f"The hub did not say how large {repo_id} is, and this public server downloads only "
                             f"models it knows fit its {self.max_model_gb:g} GB cap: check the spelling, or try "
                             "again in a minute.") from None
        if size > self.max_model_gb * 1e9:
            raise ValueError(f"{repo_id} is {size / 1e9:.1f} GB; this public server loads hub models up to "
                             f"{self.max_model_gb:g} GB. Pick a smaller one, e.g. bert-base-uncased.")

    # --- messages -----------------------------------------------------------------------------

    def not_found_message(self, name: str, hub_reachable: bool) -> str:
        return load_errors.not_found_message(name, hub_reachable, self.public)

    def explain_load_error(self, name: str, exc: BaseException) -> str:
        return load_errors.explain_load_error(name, exc)

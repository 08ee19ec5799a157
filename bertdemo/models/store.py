"""One bounded LRU cache of loaded (tokenizer, masked-LM) pairs, serving every user and every tab.

Loads of different names run side by side: each name has its own lock, and the load itself
(:mod:`bertdemo.models.loading`) downloads outside every lock. A local folder rewritten on disk (a checkpoint
saved again) is loaded again in place of its old entry. A model standing in is cached under its own name, never
under the name asked for, so the real model answers as soon as the hub does.

The loading names are imported here for the store's own use; their home is :mod:`bertdemo.models.loading`.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from transformers import PreTrainedTokenizerBase

from bertdemo.models import embedded
from bertdemo.models.catalog import CURATED_MODELS, DEFAULT_MODEL, model_choices  # noqa: F401 - torch-free names
from bertdemo.models.device import resolve_device
from bertdemo.models.loading import (  # noqa: F401 - LoadedModel, load_masked_lm: also imported from here
    Downloader, LoadedModel, Progress, StandInNeeded, hub_download, load_masked_lm, load_tokenizer, offline_default,
    weights_stamp)
from bertdemo.models.policy import AccessPolicy

CACHE_SIZE = 3  # models kept in memory at once (bert-large is ~1.3 GB in fp32)
TOKENIZER_CACHE_SIZE = 8
OFFLINE_NOTE = "model hub unreachable: using the embedded model"
FolderStamp = tuple[int, int]  # (folder inode, config.json mtime in ns) of a local model folder


class _NameLock:
    """A lock for one name, alive while someone holds or waits for it (a WeakValueDictionary entry)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


class ModelStore:
    """Thread-safe bounded LRU cache of :class:`LoadedModel`, keyed by the name that loaded."""

    def __init__(self, default: str = DEFAULT_MODEL, device: str = "auto", size: int = CACHE_SIZE,
                 policy: AccessPolicy | None = None, download: Downloader | None = None) -> None:
        self.default = default
        self.device = resolve_device(device)
        self.size = size
        self.policy = policy or AccessPolicy()
        self.download = download or hub_download
        # name -> (folder stamp when loaded, model); one entry per name, the least recently used first
        self._cache: OrderedDict[str, tuple[FolderStamp, LoadedModel]] = OrderedDict()
        self._tokenizers: OrderedDict[tuple, PreTrainedTokenizerBase] = OrderedDict()
        self._stand_ins: dict[str, LoadedModel] = {}  # name -> the embedded model's view answering for it
        self._lock = threading.Lock()  # guards the two caches and the name locks; never held while loading
        self._name_locks: weakref.WeakValueDictionary[str, _NameLock] = weakref.WeakValueDictionary()
        self._extra_choices: Callable[[], list[tuple[str, str]]] | None = None

    @property
    def hub(self):
        return self.policy.hub

    def set_extra_choices(self, provider: Callable[[], list[tuple[str, str]]]) -> None:
        """Register a provider of extra (label, path) choices, e.g. pretraining checkpoints."""
        self._extra_choices = provider

    def choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs for the model dropdowns: curated, embedded, then checkpoints."""
        return model_choices(self.default, self._extra_choices)

    def get(self, name: str | None = None, progress: Progress | None = None) -> LoadedModel:
        """The loaded model for ``name`` (default when empty), loading it on first use.

        A local folder rewritten on disk since it was loaded (a checkpoint saved again) is loaded
        again and replaces its old entry, so re-saves never take extra cache slots. The default
        model asked for while the hub is unreachable and not cached comes back as the embedded
        model with a note saying so (cached under the embedded name).
        """
        name = (name or "").strip() or self.default
        hit = self._hit(name) or self._stand_in_hit(name)
        if hit is not None:
            return hit
        with self._lock:
            name_lock = self._name_locks.get(name)
            if name_lock is None:
                name_lock = self._name_locks[name] = _NameLock()
        with name_lock.lock:  # one load per name; other names load meanwhile
            hit = self._hit(name)
            if hit is not None:
                return hit
            stamp = folder_stamp(name, self.policy)  # taken before loading: a rewrite during the load reloads
            try:
                loaded = load_masked_lm(name, self.device, progress, self.policy, self.download,
                                        stand_in_for_missing=name == self.default)
            except StandInNeeded:
                view = self._stand_in(progress)
                with self._lock:
                    self._stand_ins[name] = view
                return view
            loaded.folder_stamp = stamp
            with self._lock:
                self._cache.pop(name, None)
                self._cache[name] = (stamp, loaded)
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
            return loaded

    def _stand_in(self, progress: Progress | None) -> LoadedModel:
        """The embedded model, as a view whose note says it stands in (same weights, same derived things)."""
        try:
            fallback = self.get(offline_default(), progress)
        except ValueError:  # the embedded masked-LM could not be assembled: the bare encoder
            if offline_default() == embedded.EMBEDDED_ENCODER_NAME:
                raise
            fallback = self.get(embedded.EMBEDDED_ENCODER_NAME, progress)
        view = dataclasses.replace(fallback, note=f"{OFFLINE_NOTE} ({fallback.note})")
        view._derived, view._derived_lock = fallback._derived, fallback._derived_lock  # the same weights
        return view

    def _stand_in_hit(self, name: str) -> LoadedModel | None:
        """The stand-in view already made for ``name``, while the hub is still unreachable and the embedded
        model still cached (the probe's answer is remembered, so this costs no network)."""
        with self._lock:
            view = self._stand_ins.get(name)
            cached = self._cache.get(view.name) if view is not None else None
        if view is None:
            return None
        if cached is None or cached[1].model is not view.model or self.hub.reachable():
            with self._lock:
                self._stand_ins.pop(name, None)  # the hub is back (or the model left): load the real one
            return None
        return view

    def _hit(self, name: str) -> LoadedModel | None:
        """The cached model for ``name`` if its folder is unchanged on disk (marked most recent)."""
        stamp = folder_stamp(name, self.policy)
        with self._lock:
            entry = self._cache.get(name)
            if entry is None or entry[0] != stamp:
                return None
            self._cache.move_to_end(name)
            return entry[1]

    def cached_names(self) -> list[str]:
        """Names of the models in memory, least recently used first."""
        with self._lock:
            return list(self._cache)

    def get_tokenizer(self, name: str | None = None) -> PreTrainedTokenizerBase:
        """Just a tokenizer: from a loaded model when there is one, else loaded alone (cached per name,
        folder stamp and hub reachability, so a stand-in vocabulary is not kept once the hub answers)."""
        name = (name or "").strip() or self.default
        loaded = self._hit(name)  # a checkpoint saved again since its model loaded: not this one
        if loaded is not None:
            return loaded.tokenizer
        key = (name, folder_stamp(name, self.policy), self.hub.reachable())
        with self._lock:
            if key in self._tokenizers:
                self._tokenizers.move_to_end(key)
                return self._tokenizers[key]
        tokenizer = load_tokenizer(name, self.default, self.policy, self.download)
        with self._lock:
            self._tokenizers[key] = tokenizer
            while len(self._tokenizers) > TOKENIZER_CACHE_SIZE:
                self._tokenizers.popitem(last=False)
        return tokenizer


def folder_stamp(name: str, policy: AccessPolicy | None = None) -> FolderStamp:
    """(folder inode, config.json mtime) of a local model folder; changes when it is rewritten. (0, 0) otherwise."""
    try:
        named = policy.server_folder(name) if policy is not None else None
        folder = Path(named or name).expanduser()  # "run:<id>", "served:<name>" too
        return folder.stat().st_ino, (folder / "config.json").stat().st_mtime_ns
    except (OSError, ValueError):
        return 0, 0


def weights_key(loaded: LoadedModel) -> tuple:
    """What identifies a loaded model's weights in caches that outlive the model object: a local folder's
    (name, folder stamp when the store loaded it), which a save under the same name changes; a hub or embedded
    model's (name, source, path), whose weights do not change under that name; else (a folder loaded outside
    the store) :func:`bertdemo.models.loading.weights_stamp`, sound only while the model lives."""
    if loaded.folder_stamp != (0, 0):
        return (loaded.name, "folder", *loaded.folder_stamp)
    if loaded.source == "local":
        return (loaded.name, "object", weights_stamp(loaded.model))
    return (loaded.name, loaded.source, loaded.path)

"""Load and cache (tokenizer, masked-LM) pairs by hub id, local folder, embedded default or run checkpoint.

One bounded LRU cache serves every user and every tab. Loading never hangs on an unreachable hub:
the server's :class:`~bertdemo.models.hub.HubProbe` answers in a second or two, then we either
download, read the local Hugging Face cache (``local_files_only``), or — for the default model —
let the embedded model stand in, and say which and why.

Loads of different names run side by side: each name has its own lock, a hub download happens
outside every lock, and only the short in-memory build holds the process-wide init lock. A model
standing in is cached under its own name, never under the name asked for, so the real model
answers as soon as the hub does.
"""

from __future__ import annotations

import dataclasses
import pickle
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

import torch
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from bertdemo import compat
from bertdemo.models import attention_modes, embedded
from bertdemo.models.availability import in_local_cache
from bertdemo.models.catalog import CURATED_MODELS, DEFAULT_MODEL, model_choices  # noqa: F401 - torch-free names
from bertdemo.models.device import resolve_device
from bertdemo.models.init_lock import MODEL_INIT_LOCK
from bertdemo.models.policy import AccessPolicy

CACHE_SIZE = 3  # models kept in memory at once (bert-large is ~1.3 GB in fp32)
ANSWER_CACHE_SIZE = 16  # answers a model remembers (a view's result for recent inputs), freed with it
TOKENIZER_CACHE_SIZE = 8
OFFLINE_NOTE = "model hub unreachable: using the embedded model"
HUB_FILES = ["*.json", "*.txt", "*.model", "*.safetensors"]  # configs, tokenizer files, safe weights
HUB_PICKLED = ["pytorch_model*.bin"]  # fetched only on a local server, for repos without safetensors

Progress = Callable[[float, str], None]
FolderStamp = tuple[int, int]  # (folder inode, config.json mtime in ns) of a local model folder
Downloader = Callable[[str, bool], str]  # (hub id, safetensors only) -> local folder holding its files
T = TypeVar("T")


@dataclass
class LoadedModel:
    """A tokenizer and masked-LM ready for inference (eval mode, on ``device``)."""

    name: str  # the model that answers (the embedded one when it stands in for the name asked for)
    source: str  # "hub" | "hub cache" | "local" | "embedded"
    path: str  # the folder (or, from the hub cache, the hub id) from_pretrained was given
    tokenizer: PreTrainedTokenizerBase
    model: PreTrainedModel
    device: torch.device
    has_mlm_head: bool  # False when the head weights were missing (randomly initialised)
    note: str = ""  # why this model is in use, e.g. the hub being unreachable
    missing_head_keys: list[str] = field(default_factory=list)  # test hook: what the head lacked
    safetensors_only: bool = False  # loaded under a public server's rule: nothing read from it may be a pickle
    # things built from this model once (an int8 copy, an NSP head), freed with it (a variant made with
    # dataclasses.replace gets its own; a stand-in view shares its model's: see ModelStore._stand_in)
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _derived_lock: Any = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    @property
    def max_length(self) -> int:
        """Longest input (in tokens, specials included) the model accepts."""
        limits = [getattr(self.model.config, "max_position_embeddings", 512)]
        tok_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tok_max, int) and 0 < tok_max < 100_000:
            limits.append(tok_max)
        if getattr(self.model.config, "model_type", "") in {"roberta", "camembert", "xlm-roberta"}:
            limits[0] -= 2  # RoBERTa position ids start at padding_idx + 1
        return min(limits)

    @property
    def shape(self) -> tuple[int | str, int | str, int | str]:
        """(layers, heads, hidden size) from the config, in BERT's names or DistilBERT's."""
        cfg = self.model.config
        return (getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", "?")),
                getattr(cfg, "num_attention_heads", getattr(cfg, "n_heads", "?")),
                getattr(cfg, "hidden_size", getattr(cfg, "dim", "?")))

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """``build()`` once per model (under a lock), remembered with it and freed when it is evicted."""
        with self._derived_lock:
            if key not in self._derived:
                self._derived[key] = build()
            return self._derived[key]

    def remember(self, question: tuple, answer: Callable[[], T]) -> T:
        """``answer()`` to ``question`` (a view's name and its inputs), remembered in this model's bounded LRU
        under (model name, weights stamp, question): weights changed in place, or a model reloaded, never
        reuse an answer. Callers treat what comes back as read-only."""
        cache = self.derived("answers", AnswerCache)
        return cache.get_or_build((self.name, weights_stamp(self.model), *question), answer)


def weights_stamp(model: torch.nn.Module) -> int:
    """Changes when any parameter or buffer is modified in place or replaced (PyTorch's version counters)."""
    return hash(tuple((id(t), compat.tensor_version(t)) for t in (*model.parameters(), *model.buffers())))


class AnswerCache:
    """A thread-safe LRU of answers (at most ``size``); an answer is computed outside the lock."""

    def __init__(self, size: int = ANSWER_CACHE_SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple, Any] = OrderedDict()

    def get_or_build(self, key: tuple, build: Callable[[], T]) -> T:
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        value = build()  # a ValueError (bad input) is raised, not remembered
        with self._lock:
            self._answers[key] = value
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)


def offline_default() -> str:
    """The embedded model used when the hub is unreachable: the masked-LM, or the bare encoder without it."""
    return embedded.EMBEDDED_MLM_NAME if embedded.has_mlm_assets() else embedded.EMBEDDED_ENCODER_NAME


class _NameLock:
    """A lock for one name, alive while someone holds or waits for it (a WeakValueDictionary entry)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


class StandInNeeded(Exception):
    """The default model is on the hub, the hub is unreachable and it is not cached: the embedded one answers."""


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


def hub_download(repo_id: str, safetensors_only: bool) -> str:
    """Download a hub repo's configs, tokenizer files and weights (safetensors; a local server also takes
    ``pytorch_model.bin`` when the repo has no safetensors) into the Hugging Face cache; its folder."""
    from huggingface_hub import snapshot_download

    folder = snapshot_download(repo_id, allow_patterns=HUB_FILES)
    if not safetensors_only and not any(Path(folder).glob("*.safetensors")):
        folder = snapshot_download(repo_id, allow_patterns=HUB_FILES + HUB_PICKLED)
    return folder


def _report(progress: Progress | None, fraction: float, message: str) -> None:
    if progress is not None:
        progress(fraction, message)


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def _resolve(name: str, policy: AccessPolicy) -> tuple[str, str, bool, str]:
    """(source, what from_pretrained gets, local_files_only, note) for a model name."""
    if not name:
        raise ValueError("Enter a model name: a hub id such as bert-base-uncased, or a local folder.")
    if name == embedded.EMBEDDED_ENCODER_NAME:
        note = "uncased WordPiece tokenizer + 6-layer BERT encoder (all-MiniLM-L6-v2), installed with the app"
        return "embedded", str(embedded.encoder_dir()), False, note
    if name == embedded.EMBEDDED_MLM_NAME:
        try:
            path = embedded.mlm_dir()
        except (OSError, ValueError) as exc:  # assets missing, cache not writable, damaged file
            raise ValueError(f"{name} is not available: {exc}") from exc
        note = ("6-layer BERT (all-MiniLM-L6-v2 encoder) with a masked-LM head, trained further by this "
                "project on Wikipedia summaries and everyday English, installed with the app")
        return "embedded", str(path), False, note
    named = policy.server_folder(name)  # "run:<id>" (a checkpoint of this server's runs), "served:<name>"
    if named is not None:
        return "local", named, False, ""
    kind = policy.screen(name)  # public mode: "run", "hub" or ValueError; None on a local server
    path = Path(name).expanduser()
    if kind != "hub" and path.exists():
        if not _is_model_dir(path):
            raise ValueError(
                f"The folder {name!r} is not a model: it has no config.json. "
                "Pick a folder written by save_pretrained, or a hub id."
            )
        return "local", str(path), False, ""
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ValueError(f"No such folder: {name!r}.")
    if policy.hub.reachable():
        policy.check_hub_size(name)  # public mode: refuse a checkpoint above the size cap before downloading
        return "hub", name, False, ""
    return "hub cache", name, True, "model hub unreachable: loaded from the local cache"


def _fetch(name: str, source: str, target: str, policy: AccessPolicy, download: Downloader) -> str:
    """The folder to load from: a hub id is downloaded first (outside every lock), other sources as they are."""
    if source != "hub":
        return target
    try:
        return download(name, policy.public)
    except (OSError, ValueError) as exc:
        raise ValueError(policy.explain_load_error(name, exc)) from exc
    except Exception as exc:  # noqa: BLE001 - huggingface_hub's errors (not found, gated, network) all say "cannot"
        if type(exc).__name__ in {"RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"}:
            raise ValueError(policy.not_found_message(name, hub_reachable=True)) from exc
        raise ValueError(policy.explain_load_error(name, exc)) from exc


def load_tokenizer(name: str, default: str = DEFAULT_MODEL, policy: AccessPolicy | None = None,
                   download: Downloader = hub_download) -> PreTrainedTokenizerBase:
    """Only the tokenizer of ``name`` (for side-by-side comparisons), same resolution as models."""
    policy = policy or AccessPolicy()
    name = name.strip()
    source, target, local_only, _ = _resolve(name, policy)
    try:
        return AutoTokenizer.from_pretrained(_fetch(name, source, target, policy, download), local_files_only=local_only)
    except (OSError, ValueError, KeyError) as exc:
        if local_only and name == default:  # the embedded vocabulary has bert-base-uncased's ids
            return AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir()))
        if local_only:  # the words a model load gives: a name's answer never depends on what is on disk
            raise ValueError(policy.not_found_message(name, hub_reachable=False)) from exc
        raise ValueError(policy.explain_load_error(name, exc)) from exc


def load_masked_lm(
    name: str,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    policy: AccessPolicy | None = None,
    download: Downloader = hub_download,
    stand_in_for_missing: bool = False,
) -> LoadedModel:
    """Load ``name`` (hub id, local folder or the embedded name) with clear errors.

    Raises ``ValueError`` with a message fit for the page when the model cannot be used, or
    :class:`StandInNeeded` (when ``stand_in_for_missing``) for a hub model that cannot load offline.
    """
    policy = policy or AccessPolicy()
    device = resolve_device(device) if isinstance(device, str) else device
    name = name.strip()
    source, target, local_only, note = _resolve(name, policy)
    if local_only and stand_in_for_missing and not in_local_cache(name):
        raise StandInNeeded(name)  # said at once: no library call to find out
    _report(progress, 0.1, f"Loading tokenizer for {name}…")
    folder = _fetch(name, source, target, policy, download)  # a hub download: no lock held
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=local_only)
        _report(progress, 0.3, f"Loading weights for {name}…")
        config = AutoConfig.from_pretrained(folder, local_files_only=local_only)
        with MODEL_INIT_LOCK:
            model, info = AutoModelForMaskedLM.from_pretrained(
                folder,
                config=config,
                local_files_only=local_only,
                # float32, not the checkpoint's dtype: the same numbers on every device, and the
                # process-wide default dtype that loading sets stays what other threads expect
                dtype=torch.float32,
                attn_implementation=attention_modes.implementation_for(config),  # SDPA, weights or ablation per call
                output_loading_info=True,
                **policy.load_kwargs(),  # public mode: safetensors only
            )
    except (OSError, ValueError, KeyError, pickle.UnpicklingError) as exc:
        if local_only:
            if stand_in_for_missing:
                raise StandInNeeded(name) from exc
            raise ValueError(policy.not_found_message(name, hub_reachable=False)) from exc
        raise ValueError(policy.explain_load_error(name, exc)) from exc  # what to change, no server path

    # A decoder bias tied to the head bias, or buffers, may be reported missing harmlessly.
    missing = [
        k for k in info.get("missing_keys", []) if not k.endswith(("position_ids", "decoder.bias"))
    ]
    model.to(device).eval()  # inference only: dropout off
    _report(progress, 1.0, f"Loaded {name}")
    return LoadedModel(
        name=name,
        source=source,
        path=folder,
        tokenizer=tokenizer,
        model=model,
        device=device,
        has_mlm_head=not missing,
        note=note,
        missing_head_keys=missing,
        safetensors_only=policy.public,
    )

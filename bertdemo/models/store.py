"""Load and cache (tokenizer, masked-LM) pairs by hub id, local folder, embedded default or run checkpoint.

One bounded LRU cache serves every user and every tab. Loading never hangs on an
unreachable hub: :func:`bertdemo.models.hub.hub_reachable` answers in a second or two, then we
either download, read the local Hugging Face cache (``local_files_only``), or fall back
to the embedded model that ``requirements.txt`` installs — and say which and why.
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, TypeVar

import torch
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from bertdemo.models import attention_modes, embedded, hub, policy
from bertdemo.models.catalog import CURATED_MODELS, DEFAULT_MODEL, model_choices  # noqa: F401 - torch-free names
from bertdemo.models.device import resolve_device
from bertdemo.models.init_lock import MODEL_INIT_LOCK

CACHE_SIZE = 3  # models kept in memory at once (bert-large is ~1.3 GB in fp32)
OFFLINE_NOTE = "model hub unreachable: using the embedded model"

T = TypeVar("T")
Progress = Callable[[float, str], None]
FolderStamp = tuple[int, int]  # (folder inode, config.json mtime in ns) of a local model folder


@dataclass
class LoadedModel:
    """A tokenizer and masked-LM ready for inference (eval mode, on ``device``)."""

    name: str  # what the user asked for
    source: str  # "hub" | "hub cache" | "local" | "embedded"
    path: str  # what from_pretrained was given
    tokenizer: PreTrainedTokenizerBase
    model: PreTrainedModel
    device: torch.device
    has_mlm_head: bool  # False when the head weights were missing (randomly initialised)
    note: str = ""  # why this model is in use, e.g. the hub being unreachable
    missing_head_keys: list[str] = field(default_factory=list)
    # things made from this model (its int8 copy, its NSP head), built once and gone with it
    _derived: dict[str, object] = field(default_factory=dict, init=False, repr=False, compare=False)
    _derived_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """``build()``, run once per loaded model under a lock and kept on it under ``key``."""
        with self._derived_lock:
            if key not in self._derived:
                self._derived[key] = build()
            return self._derived[key]  # type: ignore[return-value]

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

    def describe(self) -> str:
        """One line for the page: which model, from where, and why."""
        cfg = self.model.config
        layers = getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", "?"))
        heads = getattr(cfg, "num_attention_heads", getattr(cfg, "n_heads", "?"))
        hidden = getattr(cfg, "hidden_size", getattr(cfg, "dim", "?"))
        text = f"**{self.name}** ({self.source}) — {layers} layers · {heads} heads · hidden {hidden} · {self.device.type}"
        if not self.has_mlm_head:
            text += " · no trained masked-LM head"
        if self.note:
            text += f"  \n{self.note}"
        return text


def offline_default() -> str:
    """The embedded model used when the hub is unreachable: the masked-LM, or the bare encoder without it."""
    return embedded.EMBEDDED_MLM_NAME if embedded.has_mlm_assets() else embedded.EMBEDDED_ENCODER_NAME


class ModelStore:
    """Thread-safe bounded LRU cache of :class:`LoadedModel`, keyed by the requested name."""

    def __init__(self, default: str = DEFAULT_MODEL, device: str = "auto", size: int = CACHE_SIZE) -> None:
        self.default = default
        self.device = resolve_device(device)
        self.size = size
        # name -> (folder stamp when loaded, model); one entry per name, the least recently used first
        self._cache: OrderedDict[str, tuple[FolderStamp, LoadedModel]] = OrderedDict()
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._extra_choices: Callable[[], list[tuple[str, str]]] | None = None

    def set_extra_choices(self, provider: Callable[[], list[tuple[str, str]]]) -> None:
        """Register a provider of extra (label, path) choices, e.g. pretraining checkpoints."""
        self._extra_choices = provider

    def choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs for the model dropdowns: curated, embedded, then checkpoints."""
        return model_choices(self.default, self._extra_choices)

    def get(self, name: str | None = None, progress: Progress | None = None) -> LoadedModel:
        """The loaded model for ``name`` (default when empty), loading it on first use.

        A local folder rewritten on disk since it was loaded (a checkpoint saved again) is loaded
        again and replaces its old entry, so re-saves never take extra cache slots.
        """
        name = (name or "").strip() or self.default
        with self._lock:
            hit = self._fresh(name)
            if hit is not None:
                return hit
        with self._load_lock:  # one load at a time; cache hits above never wait for it
            with self._lock:
                hit = self._fresh(name)
                if hit is not None:
                    return hit
            stamp = folder_stamp(name)  # taken before loading: a rewrite during the load reloads next time
            loaded = load_masked_lm(name, self.device, progress=progress, default=self.default)
            with self._lock:
                self._cache.pop(name, None)
                self._cache[name] = (stamp, loaded)
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
            return loaded

    def _fresh(self, name: str) -> LoadedModel | None:
        """The cached model for ``name`` if its folder is unchanged on disk (marked most recent); caller holds the lock."""
        entry = self._cache.get(name)
        if entry is None or entry[0] != folder_stamp(name):
            return None
        self._cache.move_to_end(name)
        return entry[1]

    def cached_names(self) -> list[str]:
        """Names of the models in memory, least recently used first."""
        with self._lock:
            return list(self._cache)

    def get_tokenizer(self, name: str | None = None) -> PreTrainedTokenizerBase:
        """Just a tokenizer: from a loaded model when there is one, else loaded alone (cached)."""
        name = (name or "").strip() or self.default
        with self._lock:
            loaded = self._fresh(name)  # a checkpoint saved again since its model loaded: not this one
            if loaded is not None:
                return loaded.tokenizer
        return _cached_tokenizer(name, self.default, folder_stamp(name))


def folder_stamp(name: str) -> FolderStamp:
    """(folder inode, config.json mtime) of a local model folder; changes when it is rewritten. (0, 0) otherwise."""
    try:
        folder = Path(policy.resolve_run_reference(name) or name).expanduser()  # "run:<id>" too
        return folder.stat().st_ino, (folder / "config.json").stat().st_mtime_ns
    except (OSError, ValueError):
        return 0, 0


@lru_cache(maxsize=8)
def _cached_tokenizer(name: str, default: str, stamp: FolderStamp) -> PreTrainedTokenizerBase:
    """load_tokenizer, remembered per name and folder stamp (a rewritten folder is read again)."""
    return load_tokenizer(name, default)


def _report(progress: Progress | None, fraction: float, message: str) -> None:
    if progress is not None:
        progress(fraction, message)


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def _resolve(name: str) -> tuple[str, str, bool, str]:
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
    run = policy.resolve_run_reference(name)  # "run:<id>": a checkpoint of this server's runs
    if run is not None:
        return "local", run, False, ""
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
    if hub.hub_reachable():
        policy.check_hub_size(name)  # public mode: refuse a checkpoint above the size cap before downloading
        return "hub", name, False, ""
    return "hub cache", name, True, "model hub unreachable: loaded from the local cache"


def load_tokenizer(name: str, default: str = DEFAULT_MODEL) -> PreTrainedTokenizerBase:
    """Only the tokenizer of ``name`` (for side-by-side comparisons), same resolution as models."""
    name = name.strip()
    _, target, local_only, _ = _resolve(name)
    try:
        return AutoTokenizer.from_pretrained(target, local_files_only=local_only)
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
    default: str = DEFAULT_MODEL,
) -> LoadedModel:
    """Load ``name`` (hub id, local folder or the embedded name) with clear errors.

    Raises ``ValueError`` with a message fit for the page when the model cannot be used.
    """
    device = resolve_device(device) if isinstance(device, str) else device
    name = name.strip()
    source, target, local_only, note = _resolve(name)
    _report(progress, 0.1, f"Loading tokenizer for {name}…")
    try:
        tokenizer = AutoTokenizer.from_pretrained(target, local_files_only=local_only)
        _report(progress, 0.3, f"Loading weights for {name}…")
        config = AutoConfig.from_pretrained(target, local_files_only=local_only)
        with MODEL_INIT_LOCK:
            model, info = AutoModelForMaskedLM.from_pretrained(
                target,
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
            if name == default:
                try:
                    fallback = load_masked_lm(offline_default(), device, progress, default)
                except ValueError:  # the embedded masked-LM could not be assembled: the bare encoder
                    if offline_default() == embedded.EMBEDDED_ENCODER_NAME:
                        raise
                    fallback = load_masked_lm(embedded.EMBEDDED_ENCODER_NAME, device, progress, default)
                fallback.note = f"{OFFLINE_NOTE} ({fallback.note})"
                return fallback
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
        path=target,
        tokenizer=tokenizer,
        model=model,
        device=device,
        has_mlm_head=not missing,
        note=note,
        missing_head_keys=missing,
    )

"""Loading a (tokenizer, masked-LM) pair by hub id, local folder, embedded name or run checkpoint, and what a
loaded model remembers.

Loading never hangs on an unreachable hub: the server's :class:`~bertdemo.models.hub.HubProbe` answers in a
second or two, then a name is downloaded (outside every lock), read from the local Hugging Face cache
(``local_files_only``), or — for the default model — reported as :class:`StandInNeeded` so the store can let
the embedded model stand in. Every refusal is a ``ValueError`` whose message fits the page (what to change,
no server path). Only the in-memory build holds the process-wide init lock.

A :class:`LoadedModel` carries what is built from it once (an int8 copy, an NSP head) and its recent answers
in caches drawing on the server's memory budget (:mod:`bertdemo.memory`), emptied when it leaves the store. Caching loaded models is :mod:`bertdemo.models.store`'s job.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from bertdemo import compat
from bertdemo.locks import MODEL_INIT_LOCK
from bertdemo.memory import DEFAULT_BUDGET_GB, ByteLRU, MemoryBudget
from bertdemo.models import attention_modes, embedded, mlm_head, twins
from bertdemo.models.availability import in_local_cache
from bertdemo.models.catalog import DEFAULT_MODEL
from bertdemo.models.causal import is_left_to_right
from bertdemo.models.device import resolve_device
from bertdemo.models.policy import AccessPolicy

ANSWER_CACHE_SIZE = 16  # answers a model remembers (a view's result for recent inputs), freed with it
ANSWER_CACHE_BYTES = 256 * 2**20  # and their bytes at most (a 512-token attention map of a base model is 150 MB)
HUB_FILES = ["*.json", "*.txt", "*.model", "*.safetensors"]  # configs, tokenizer files, safe weights
HUB_PICKLED = ["pytorch_model*.bin"]  # fetched only on a local server, for repos without safetensors

Progress = Callable[[float, str], None]
Downloader = Callable[[str, bool], str]  # (hub id, safetensors only) -> local folder holding its files
T = TypeVar("T")


@dataclass
class LoadedModel:
    """A tokenizer and masked-LM ready for inference (eval mode, on ``device``); or a left-to-right LM of BERT's
    shape (``BertLMHeadModel``, :func:`bertdemo.models.causal.is_left_to_right`), which the views read accordingly."""

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
    folder_stamp: tuple[int, int] = (0, 0)  # a local folder's stamp when the store loaded it (store.folder_stamp)
    # the server's memory budget (set by the model store); a model loaded on its own gets one of its own
    budget: MemoryBudget | None = field(default=None, repr=False, compare=False)
    # this model's caches (answers, derived copies, word activations), drawing on the budget and closed with
    # the model (a variant made with dataclasses.replace gets its own; a stand-in view shares its model's:
    # see ModelStore._stand_in)
    _caches: dict[str, ByteLRU] = field(default_factory=dict, init=False, repr=False, compare=False)
    _caches_lock: Any = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

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

    def cache(self, name: str, max_bytes: int | None = None, max_entries: int | None = None,
              refuse_oversize: bool = True) -> ByteLRU:
        """This model's cache ``name`` (made on first use with these caps), drawing on the server's memory
        budget and emptied when the model leaves the model store (:meth:`release`)."""
        with self._caches_lock:
            if self.budget is None:
                self.budget = MemoryBudget.gigabytes(DEFAULT_BUDGET_GB)
            if name not in self._caches:
                self._caches[name] = ByteLRU(self.budget, f"{name} of {self.name}", max_bytes, max_entries,
                                             refuse_oversize=refuse_oversize)
            return self._caches[name]

    def derived(self, key: str, build: Callable[[], T]) -> T:
        """``build()`` once per model (an int8 copy, an NSP head: sized by their tensors), remembered with it
        within the memory budget (built again if the budget evicted it)."""
        return self.cache("derived").get_or_build(key, build)

    def remember(self, question: tuple, answer: Callable[[], T]) -> T:
        """``answer()`` to ``question`` (a view's name and its inputs), remembered in this model's bounded LRU
        under (model name, weights stamp, question): weights changed in place, or a model reloaded, never
        reuse an answer. An answer too large to keep is returned, not kept. Callers treat it as read-only."""
        cache = self.cache("answers", ANSWER_CACHE_BYTES, ANSWER_CACHE_SIZE, refuse_oversize=False)
        return cache.get_or_build((self.name, weights_stamp(self.model), *question), answer)

    def release(self) -> None:
        """Empty this model's caches and keep nothing more in them (it left the model store)."""
        with self._caches_lock:
            caches = list(self._caches.values())
        for cache in caches:
            cache.close()


def weights_stamp(model: torch.nn.Module) -> int:
    """Changes when any parameter or buffer is modified in place or replaced (PyTorch's version counters)."""
    return hash(tuple((id(t), compat.tensor_version(t)) for t in (*model.parameters(), *model.buffers())))


def offline_default() -> str:
    """The embedded model used when the hub is unreachable: the masked-LM, or the bare encoder without it."""
    return embedded.EMBEDDED_MLM_NAME if embedded.has_mlm_assets() else embedded.EMBEDDED_ENCODER_NAME


class StandInNeeded(Exception):
    """The default model is on the hub, the hub is unreachable and it is not cached: the embedded one answers."""


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
    kind = twins.twin_kind(name)
    if kind is not None:
        if not twins.has_twin(kind):
            raise ValueError(f"{name} is not in this install (bertdemo/assets/twins/{kind} is missing).")
        return "embedded", str(twins.twin_dir(kind)), False, twins.twin_note(kind)
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
    except Exception as exc:  # huggingface_hub's errors (not found, gated, network) all say "cannot"
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
        # a left-to-right checkpoint (is_decoder: a Pretrain run with objective "ltr") loads as the class it was
        # trained as (BertLMHeadModel): the same encoder and head, with the causal mask
        auto = AutoModelForCausalLM if is_left_to_right(config) else AutoModelForMaskedLM
        if is_left_to_right(config):
            config.use_cache = False  # one forward per request: no key/value cache to keep
        with MODEL_INIT_LOCK:
            model, info = auto.from_pretrained(
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
    if missing and source == "local":  # a fine-tuning run's encoder: its start's masked-LM head (models/mlm_head.py)
        missing, borrowed = mlm_head.borrow_start_head(model, folder, missing)
        note = borrowed or note
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


def load_twin(kind: str, device: torch.device | str = "cpu") -> LoadedModel:
    """The shipped ``"mlm"`` or ``"ltr"`` twin (:mod:`bertdemo.models.twins`) loaded as every model is (float32,
    eval mode): a ``BertForMaskedLM`` or a ``BertLMHeadModel``; ValueError for another kind or missing assets."""
    twins.twin_dir(kind)  # ValueError for another kind
    return load_masked_lm(twins.TWIN_NAMES[kind], device)

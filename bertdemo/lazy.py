"""The heavy logic (torch, transformers, the explore/ views, the pretraining engine), loaded after
the page is served.

The page is built from torch-free modules only. The app context's :class:`LogicLoader`, started by
``app.py`` as soon as the server is up, imports :data:`FIRST` in one background thread, warms the
default model, then imports :data:`REST`. A handler reaches those modules through a
:class:`LazyModule`, a stateless stand-in that imports its module on first attribute access:
Python's import lock makes it wait for an import the loader has under way, and a module that
failed to load raises its own error in the handler. Imports of the logic run one thread at a time
(:mod:`bertdemo.locks`). :class:`StoreFront` stands in for the model
store until then: the page reads its default and its choices; ``get`` waits for the real store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from bertdemo.locks import import_logic
from bertdemo.models import catalog

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from bertdemo.memory import MemoryBudget
    from bertdemo.models.hub import HubProbe
    from bertdemo.models.policy import AccessPolicy
    from bertdemo.models.store import LoadedModel, ModelStore

log = logging.getLogger(__name__)

STORE = "bertdemo.models.store"
FIRST = (STORE, "bertdemo.explore.fill_mask", "bertdemo.viz.bars")  # what the first Fill-Mask answer needs
REST = (
    "bertdemo.explore.attention", "bertdemo.explore.ablation", "bertdemo.viz.heatmaps",
    "bertdemo.explore.inside", "bertdemo.explore.inside_layer", "bertdemo.explore.inside_output",
    "bertdemo.explore.inside_anatomy", "bertdemo.viz.inside",
    "bertdemo.explore.masking_lab", "bertdemo.explore.nsp", "bertdemo.viz.masking",
    "bertdemo.pretrain.trainer", "bertdemo.explore.order_probe", "bertdemo.learn.path",
)
STARTING = "Starting up: loading PyTorch and transformers…"
Progress = Callable[[float, str], None]


class LogicLoader:
    """Imports the logic modules in one background thread after the page is served (owned by the app context)."""

    def __init__(self, first: tuple[str, ...] = FIRST, rest: tuple[str, ...] = REST) -> None:
        self.first, self.rest = first, rest
        self._lock = threading.Lock()
        self._loaded: set[str] = set()
        self._failed: dict[str, BaseException] = {}
        self._thread: threading.Thread | None = None

    def start(self, warm_up: Callable[[], None] | None = None) -> threading.Thread:
        """Start loading (once); ``warm_up`` runs between FIRST and REST in that thread (a failure is
        logged, and the first request that needs the model tries again)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, args=(warm_up,), name="bertdemo-logic-loader",
                                                daemon=True)
                self._thread.start()
            return self._thread

    def _load(self, warm_up: Callable[[], None] | None) -> None:
        for group in (self.first, self.rest):
            for name in group:
                try:
                    import_logic(name)
                except Exception as exc:  # logged; a handler that needs it gets the error itself
                    log.exception("Could not load %s", name)
                    with self._lock:
                        self._failed[name] = exc
                else:
                    with self._lock:
                        self._loaded.add(name)
            if group is self.first and warm_up is not None:
                try:
                    warm_up()
                except Exception:  # a failed warm-up leaves the model to the first request
                    log.exception("Warming up the default model failed")

    def is_loaded(self, name: str) -> bool:
        """Whether this loader has imported ``name`` (never waits)."""
        with self._lock:
            return name in self._loaded

    def failed(self, name: str) -> BaseException | None:
        """The error that stopped ``name`` from loading, if it did."""
        with self._lock:
            return self._failed.get(name)


class LazyModule:
    """Stands for a logic module: attribute access imports it (waiting for the loader's import under way).

    ``fill_mask = LazyModule("bertdemo.explore.fill_mask")`` at the top of a UI module costs nothing;
    ``fill_mask.predict(...)`` inside a handler imports the module, then calls the real function.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and introspection probes must not load the module
            raise AttributeError(attr)
        return getattr(self.module(), attr)

    def module(self) -> ModuleType:
        """The real module (imported now if nobody has; one import of the logic at a time)."""
        return import_logic(self._name)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


class ModelSource(Protocol):
    """What the tabs use of the model store (the real :class:`~bertdemo.models.store.ModelStore` or the front)."""

    default: str

    @property
    def policy(self) -> AccessPolicy: ...
    @property
    def hub(self) -> HubProbe: ...
    def choices(self) -> list[tuple[str, str]]: ...
    def set_extra_choices(self, provider: catalog.ExtraChoices) -> None: ...
    def get(self, name: str | None = None, progress: Progress | None = None) -> LoadedModel: ...
    def get_tokenizer(self, name: str | None = None) -> PreTrainedTokenizerBase: ...
    def cached_names(self) -> list[str]: ...


class StoreFront:
    """The model store as the page sees it while the logic loads (a :class:`ModelSource`).

    ``default``, ``policy``, ``hub``, ``choices()`` and ``set_extra_choices()`` are torch-free; the
    other methods create the real :class:`~bertdemo.models.store.ModelStore` on first use.
    """

    def __init__(self, policy: AccessPolicy, default: str = catalog.DEFAULT_MODEL, device: str = "auto",
                 loader: LogicLoader | None = None, budget: MemoryBudget | None = None) -> None:
        self.default = default
        self.budget = budget
        self.device_choice = device
        self.policy = policy
        self.loader = loader
        self._extra: catalog.ExtraChoices | None = None
        self._store: ModelStore | None = None
        self._lock = threading.Lock()

    @property
    def hub(self) -> HubProbe:
        return self.policy.hub

    def set_extra_choices(self, provider: catalog.ExtraChoices) -> None:
        """Register a provider of extra (label, path) choices, e.g. pretraining checkpoints."""
        with self._lock:
            self._extra = provider
            store = self._store
        if store is not None:
            store.set_extra_choices(provider)

    def choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs for the model dropdowns, exactly as the real store gives them."""
        return catalog.model_choices(self.default, self._extra)

    def real(self) -> ModelStore:
        """The real model store (created once its module has loaded)."""
        store_module = import_logic(STORE)
        with self._lock:
            if self._store is None:
                store = store_module.ModelStore(default=self.default, device=self.device_choice, policy=self.policy,
                                                budget=self.budget)
                if self._extra is not None:
                    store.set_extra_choices(self._extra)
                self._store = store
            return self._store

    def get(self, name: str | None = None, progress: Progress | None = None) -> LoadedModel:
        """``ModelStore.get``; while PyTorch is still loading, ``progress`` says so first."""
        if progress is not None and self.loader is not None and not self.loader.is_loaded(STORE):
            progress(0.0, STARTING)
        return self.real().get(name, progress=progress)

    def get_tokenizer(self, name: str | None = None) -> PreTrainedTokenizerBase:
        return self.real().get_tokenizer(name)

    def cached_names(self) -> list[str]:
        return self.real().cached_names()

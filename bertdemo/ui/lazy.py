"""The heavy logic (torch, transformers, the explore/ views, the pretraining engine), loaded after
the page is served.

The page is built from torch-free modules only. :func:`start` (called by ``app.py`` as soon as the
server is up) imports :data:`FIRST` in one background thread, warms the default model, then imports
:data:`REST`. A handler reaches those modules through a :class:`LazyModule` and waits until its
module is in; the first one to ask starts the thread itself when nothing has (e.g. in tests).
:class:`StoreFront` stands in for the model store until then: the page reads its default and its
choices; everything else waits for the real :class:`~bertdemo.models.store.ModelStore`.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from bertdemo.models import catalog

if TYPE_CHECKING:
    from bertdemo.models.store import LoadedModel, ModelStore

log = logging.getLogger(__name__)

STORE = "bertdemo.models.store"
FIRST = (STORE, "bertdemo.explore.fill_mask", "bertdemo.viz.bars")  # what the first Fill-Mask answer needs
REST = (
    "bertdemo.explore.attention", "bertdemo.explore.ablation", "bertdemo.viz.heatmaps",
    "bertdemo.explore.inside", "bertdemo.explore.inside_layer", "bertdemo.explore.inside_output",
    "bertdemo.explore.inside_anatomy", "bertdemo.viz.inside",
    "bertdemo.explore.masking_lab", "bertdemo.explore.nsp", "bertdemo.viz.masking",
    "bertdemo.pretrain.trainer", "bertdemo.explore.order_probe",
)
STARTING = "Starting up: loading PyTorch and transformers…"

_cond = threading.Condition()
_loaded: set[str] = set()
_failed: dict[str, BaseException] = {}
_thread: threading.Thread | None = None


def start(warm_up: Callable[[], None] | None = None) -> threading.Thread:
    """Start loading the logic in a background thread (once); ``warm_up`` runs between FIRST and REST
    (in that thread: a failure is logged, and the first request that needs the model tries again)."""
    global _thread
    with _cond:
        if _thread is None:
            _thread = threading.Thread(target=_load, args=(warm_up,), name="bertdemo-logic-loader", daemon=True)
            _thread.start()
        return _thread


def _load(warm_up: Callable[[], None] | None) -> None:
    for group in (FIRST, REST):
        for name in group:
            try:
                importlib.import_module(name)
            except BaseException as exc:  # noqa: BLE001 - every waiting handler must hear of it
                log.exception("Could not load %s", name)
                with _cond:
                    _failed[name] = exc
                    _cond.notify_all()
            else:
                with _cond:
                    _loaded.add(name)
                    _cond.notify_all()
        if group is FIRST and warm_up is not None:
            try:
                warm_up()
            except Exception:  # noqa: BLE001 - a failed warm-up leaves the model to the first request
                log.exception("Warming up the default model failed")


def is_loaded(name: str) -> bool:
    """Whether the background loader has imported ``name`` (never waits)."""
    return name in _loaded


def require(name: str) -> ModuleType:
    """The module ``name``, once loaded: waits for the background loader (starting it if needed)."""
    if name in _loaded:
        return sys.modules[name]
    if threading.current_thread() is _thread:  # the warm-up itself: never wait for our own thread
        return importlib.import_module(name)
    thread = start()
    with _cond:
        _cond.wait_for(lambda: name in _loaded or name in _failed or not thread.is_alive())
        failed = _failed.get(name)
    if failed is not None:
        raise RuntimeError(f"{name} could not be loaded: {type(failed).__name__}: {failed}") from failed
    return importlib.import_module(name)  # loaded, or (not in the plan) imported now that the loader is done


class LazyModule:
    """Stands for a logic module: attribute access waits until the module is loaded.

    ``fill_mask = LazyModule("bertdemo.explore.fill_mask")`` at the top of a UI module costs nothing;
    ``fill_mask.predict(...)`` inside a handler waits for the import, then calls the real function.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and introspection probes must not load the module
            raise AttributeError(attr)
        return getattr(require(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r} ({'loaded' if is_loaded(self._name) else 'not loaded yet'})>"


class Deferred:
    """An object made on first use: the first attribute access calls ``factory`` (which may wait
    for a logic module), later ones go straight to the object it made."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._made: list[Any] = []
        self._lock = threading.Lock()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        with self._lock:
            if not self._made:
                self._made.append(self._factory())
        return getattr(self._made[0], attr)


class StoreFront:
    """The model store as the page sees it while the logic loads.

    ``default``, ``choices()`` and ``set_extra_choices()`` are torch-free; any other attribute
    (``get``, ``get_tokenizer``, ``cached_names``, ``device``…) waits for the real store.
    """

    def __init__(self, default: str = catalog.DEFAULT_MODEL, device: str = "auto") -> None:
        self.default = default
        self.device_choice = device
        self._extra: catalog.ExtraChoices | None = None
        self._store: ModelStore | None = None
        self._lock = threading.Lock()

    def set_extra_choices(self, provider: catalog.ExtraChoices) -> None:
        """Register a provider of extra (label, path) choices, e.g. pretraining checkpoints."""
        self._extra = provider
        if self._store is not None:
            self._store.set_extra_choices(provider)

    def choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs for the model dropdowns, exactly as the real store gives them."""
        return catalog.model_choices(self.default, self._extra)

    def real(self) -> ModelStore:
        """The real model store (created once its module has loaded)."""
        store_module = require(STORE)
        with self._lock:
            if self._store is None:
                store = store_module.ModelStore(default=self.default, device=self.device_choice)
                if self._extra is not None:
                    store.set_extra_choices(self._extra)
                self._store = store
            return self._store

    def get(self, name: str | None = None, progress: Callable[[float, str], None] | None = None) -> LoadedModel:
        """``ModelStore.get``; while PyTorch is still loading, ``progress`` says so first."""
        if progress is not None and not is_loaded(STORE):
            progress(0.0, STARTING)
        return self.real().get(name, progress=progress)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.real(), attr)

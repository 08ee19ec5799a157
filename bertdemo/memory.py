"""The server's memory budget: every in-memory cache is a :class:`ByteLRU` drawing on one :class:`MemoryBudget`.

What the caches hold — loaded models, a model's recent answers and derived copies, word activations and
neighbour indexes, pooled features, layer-probe results, fine-tuned classifiers — is counted in bytes
(:func:`size_of`: a model by its parameters and buffers, an array by its buffer, containers by their
contents) under one accounting. When an entry would take the sum over budget, the least recently used
entries of *any* cache go first, so the caches together never hold more than ``max_bytes``. Each cache
may also have its own cap (bytes or entries) within the budget.

:meth:`ByteLRU.get_or_build` builds a missing entry outside every cache lock, once even when several
threads ask at the same time (a per-key build lock, dropped when its last user leaves, success or failure).

:func:`release_freed_memory` hands memory freed by Python and PyTorch back to the kernel (glibc's
``malloc_trim``): otherwise the process keeps its high-water mark after heavy requests.
:class:`MemoryTrimmer` calls it on a timer. Torch-free: tensors and modules are sized by duck typing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import itertools
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from bertdemo.storage import size_text

T = TypeVar("T")
DEFAULT_BUDGET_GB = 3.0  # all caches together; a 2-vCPU / 16 GB Space is the reference machine
TRIM_EVERY_S = 20.0  # how often the trimmer hands freed memory back
_tokens = itertools.count(1)  # cache identities in their budget (never reused, unlike id())


def size_of(value: Any, _seen: set | None = None) -> int:
    """Bytes ``value`` holds: a module's parameters and buffers (each storage once), a tensor's or an array's
    buffer, the contents of dataclasses, tuples, lists, sets and dicts; ``sys.getsizeof`` for anything else."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if hasattr(value, "state_dict") and hasattr(value, "parameters"):  # a torch module (int8 packed weights too)
        tensors = (*value.parameters(), *value.buffers(), *value.state_dict(keep_vars=True).values())
        return sum(size_of(t, seen) for t in tensors)
    if hasattr(value, "untyped_storage"):  # a tensor: its storage, shared ones counted once
        storage = value.untyped_storage()
        key = ("storage", storage.data_ptr())
        if key in seen:
            return 0
        seen.add(key)
        return int(storage.nbytes())
    if hasattr(value, "nbytes") and hasattr(value, "dtype"):  # a numpy array
        return int(value.nbytes)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(size_of(getattr(value, f.name), seen) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(size_of(k, seen) + size_of(v, seen) for k, v in value.items())
    if isinstance(value, (tuple, list, set, frozenset)):
        return sys.getsizeof(value) + sum(size_of(v, seen) for v in value)
    return sys.getsizeof(value)


class MemoryBudget:
    """One server's memory for caches: at most ``max_bytes`` held by all its :class:`ByteLRU` together.

    Entries are ordered by last use across every cache; making room evicts the oldest anywhere. One lock
    guards every cache's bookkeeping, so the sum is exact at every moment it is read."""

    def __init__(self, max_bytes: int) -> None:
        if int(max_bytes) <= 0:
            raise ValueError(f"The memory budget must be positive, got {max_bytes} bytes.")
        self.max_bytes = int(max_bytes)
        self.lock = threading.RLock()
        self._order: OrderedDict[tuple[int, Hashable], None] = OrderedDict()  # (cache token, key), oldest first
        self._caches: dict[int, weakref.ref[ByteLRU]] = {}
        self._dead: list[int] = []  # caches collected since the last operation (appended by a finalizer)
        self._sizes: dict[tuple[int, Hashable], int] = {}
        self._held = 0

    @classmethod
    def gigabytes(cls, gb: float) -> MemoryBudget:
        return cls(int(gb * 1e9))

    @property
    def held(self) -> int:
        """Bytes held by every cache of this budget now (never more than ``max_bytes``)."""
        with self.lock:
            self._purge()
            return self._held

    def held_by(self) -> dict[str, int]:
        """Bytes held per cache name (caches of one name added up), for the log and the tests."""
        with self.lock:
            self._purge()
            out: dict[str, int] = {}
            for ref in self._caches.values():
                cache = ref()
                if cache is not None:
                    out[cache.name] = out.get(cache.name, 0) + cache._bytes
            return out

    def cache(self, name: str, max_bytes: int | None = None, max_entries: int | None = None,
              on_evict: Callable[[Hashable, Any], None] | None = None, refuse_oversize: bool = True) -> ByteLRU:
        """A new cache drawing on this budget (see :class:`ByteLRU`)."""
        return ByteLRU(self, name, max_bytes, max_entries, on_evict, refuse_oversize)

    # --- bookkeeping, under ``lock`` ----------------------------------------------------------------
    def _register(self, cache: ByteLRU) -> int:
        token = next(_tokens)
        with self.lock:
            self._caches[token] = weakref.ref(cache)
        weakref.finalize(cache, self._dead.append, token)  # list.append: safe from a garbage collection anywhere
        return token

    def _purge(self) -> None:
        while self._dead:
            token = self._dead.pop()
            self._caches.pop(token, None)
            gone = [k for k in self._order if k[0] == token]
            for k in gone:
                del self._order[k]
            self._held -= sum(self._sizes.pop(k, 0) for k in gone)

    def _evict_until(self, fits: Callable[[], bool], keep: tuple[int, Hashable],
                     evicted: list[tuple[ByteLRU, Hashable, Any]]) -> None:
        """Evict the least recently used entries of any cache (never ``keep``) until ``fits()``."""
        for k in list(self._order):
            if fits():
                return
            if k == keep:
                continue
            ref = self._caches.get(k[0])
            cache = ref() if ref is not None else None
            if cache is not None:
                evicted.append((cache, k[1], cache._remove(k[1])))
            else:  # its cache was collected a moment ago
                del self._order[k]
                self._held -= self._sizes.pop(k, 0)


class ByteLRU:
    """A thread-safe LRU cache whose entries are counted in bytes against a :class:`MemoryBudget`.

    ``max_bytes`` / ``max_entries`` cap this cache alone (within the budget). An entry larger than
    ``max_bytes`` or the whole budget is refused with ValueError (the caller sizes its request first when
    it can: :meth:`check_fits`), or, with ``refuse_oversize=False``, returned without being kept.
    ``on_evict(key, value)`` hears of every entry evicted or discarded (outside the lock). A closed cache (:meth:`close`) computes but keeps nothing."""

    def __init__(self, budget: MemoryBudget, name: str = "cache", max_bytes: int | None = None,
                 max_entries: int | None = None, on_evict: Callable[[Hashable, Any], None] | None = None,
                 refuse_oversize: bool = True) -> None:
        self.budget = budget
        self.name = name
        self.max_bytes = min(int(max_bytes), budget.max_bytes) if max_bytes is not None else budget.max_bytes
        self.max_entries = max_entries
        self.on_evict = on_evict
        self.refuse_oversize = refuse_oversize
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._building: dict[Hashable, list] = {}  # key -> [lock, users waiting for or holding it]
        self._closed = False
        self._token = budget._register(self)

    # --- reading --------------------------------------------------------------------------------------
    def get(self, key: Hashable, default: Any = None) -> Any:
        """The entry ``key`` (now the most recently used), or ``default``."""
        with self.budget.lock:
            found = self._touch(key)
        return default if found is None else found[0]

    def __contains__(self, key: Hashable) -> bool:
        with self.budget.lock:
            return key in self._entries

    def __len__(self) -> int:
        with self.budget.lock:
            return len(self._entries)

    def keys(self) -> list[Hashable]:
        """Keys held, least recently used first."""
        with self.budget.lock:
            return list(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes this cache holds now."""
        with self.budget.lock:
            return self._bytes

    bytes_held = nbytes

    # --- writing --------------------------------------------------------------------------------------
    def get_or_build(self, key: Hashable, build: Callable[[], T], size: Callable[[T], int] | None = None) -> T:
        """The entry ``key``, or ``build()`` (run once across threads, outside the cache's lock) sized by
        ``size`` (default :func:`size_of`) and kept. A failing build keeps nothing and raises."""
        found = self.get(key, _MISSING)
        if found is not _MISSING:
            return found
        with self.budget.lock:
            slot = self._building.setdefault(key, [threading.Lock(), 0])
            slot[1] += 1
        try:
            with slot[0]:  # a second request for the same key waits for the first one's answer
                found = self.get(key, _MISSING)
                if found is not _MISSING:
                    return found
                value = build()
                self.put(key, value, int((size or size_of)(value)))
                return value
        finally:
            with self.budget.lock:
                slot[1] -= 1
                if slot[1] == 0 and self._building.get(key) is slot:
                    del self._building[key]

    def put(self, key: Hashable, value: Any, nbytes: int | None = None) -> None:
        """Keep ``value`` under ``key`` (``nbytes``: default :func:`size_of`), evicting what it must."""
        nbytes = size_of(value) if nbytes is None else int(nbytes)
        if nbytes > self.max_bytes and not self.refuse_oversize:
            return
        self.check_fits(nbytes)
        evicted: list[tuple[ByteLRU, Hashable, Any]] = []
        budget = self.budget
        with budget.lock:
            budget._purge()
            if self._closed:
                return
            if key in self._entries:
                evicted.append((self, key, self._remove(key)))
            me = (self._token, key)
            self._entries[key] = (value, nbytes)
            self._bytes += nbytes
            budget._order[me] = None
            budget._sizes[me] = nbytes
            budget._held += nbytes
            for old in list(self._entries):  # this cache's own caps, its oldest first
                if self._bytes <= self.max_bytes and (self.max_entries is None or len(self._entries) <= self.max_entries):
                    break
                if old != key:
                    evicted.append((self, old, self._remove(old)))
            budget._evict_until(lambda: budget._held <= budget.max_bytes, me, evicted)
        _tell(evicted)

    def check_fits(self, nbytes: int) -> None:
        """ValueError when an entry of ``nbytes`` could never be kept here."""
        if nbytes > self.max_bytes:
            raise ValueError(f"This needs {size_text(nbytes)} of memory, over the {size_text(self.max_bytes)} this "
                             f"server keeps for {self.name}.")

    def discard(self, key: Hashable) -> None:
        self.discard_where(lambda k: k == key)

    def discard_where(self, predicate: Callable[[Hashable], bool]) -> None:
        """Drop every entry whose key satisfies ``predicate``."""
        with self.budget.lock:
            evicted = [(self, k, self._remove(k)) for k in [k for k in self._entries if predicate(k)]]
        _tell(evicted)

    def clear(self) -> None:
        self.discard_where(lambda k: True)

    def close(self) -> None:
        """Drop everything and keep nothing from now on (its owner left the cache it lived in)."""
        with self.budget.lock:
            self._closed = True
        self.clear()

    # --- under the budget's lock ----------------------------------------------------------------------
    def _touch(self, key: Hashable) -> tuple[Any, int] | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.budget._order.move_to_end((self._token, key))
        return found

    def _remove(self, key: Hashable) -> Any:
        value, nbytes = self._entries.pop(key)
        self._bytes -= nbytes
        me = (self._token, key)
        self.budget._order.pop(me, None)
        self.budget._held -= self.budget._sizes.pop(me, 0)
        return value


_MISSING = object()


def _tell(evicted: Iterable[tuple[ByteLRU, Hashable, Any]]) -> None:
    for cache, key, value in evicted:
        if cache.on_evict is not None:
            cache.on_evict(key, value)


def release_freed_memory() -> bool:
    """Hand memory the process has freed back to the kernel (glibc ``malloc_trim(0)``: every arena, not only
    the top of the heap). False where there is no glibc (macOS, musl)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


class MemoryTrimmer:
    """A daemon thread calling :func:`release_freed_memory` every ``interval_s`` seconds (started by app.py)."""

    def __init__(self, interval_s: float = TRIM_EVERY_S) -> None:
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memory-trimmer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            release_freed_memory()

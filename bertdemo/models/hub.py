"""Is the Hugging Face hub reachable? One fast, cached answer instead of long retry loops.

``huggingface_hub`` retries an unreachable host for ~50 s per file. We ask once with a
short TCP connect (a second or two at most), remember the answer for a minute, and every
loader in the app uses it to choose between the hub and the local/embedded fallbacks.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from urllib.parse import urlparse

_PROBE_TTL_S = 60.0
_lock = threading.Lock()
_cache: tuple[float, bool] | None = None
_forced_offline = False
_OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
_saved_env: dict[str, str | None] | None = None  # the variables as they were before set_offline(True)


def set_offline(offline: bool = True) -> None:
    """Force offline mode (the app's ``--offline`` flag): never touch the network.

    ``set_offline(True)`` also sets ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` / ``HF_DATASETS_OFFLINE``
    for the Hugging Face libraries (which read them when first imported: call this before);
    ``set_offline(False)`` puts those variables back as they were before.
    """
    global _forced_offline, _cache, _saved_env
    with _lock:
        _forced_offline = offline
        _cache = None
        if offline:
            if _saved_env is None:
                _saved_env = {var: os.environ.get(var) for var in _OFFLINE_ENV}
            for var in _OFFLINE_ENV:
                os.environ[var] = "1"
        elif _saved_env is not None:
            for var, value in _saved_env.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value
            _saved_env = None


def _env_offline() -> bool:
    return any(
        os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _probe(timeout_s: float) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def hub_reachable(timeout_s: float = 1.5) -> bool:
    """True when the model/dataset hub answers a TCP connect within ``timeout_s``."""
    global _cache
    if _forced_offline or _env_offline():
        return False
    with _lock:
        now = time.monotonic()
        if _cache is not None and now - _cache[0] < _PROBE_TTL_S:
            return _cache[1]
        ok = _probe(timeout_s)
        _cache = (now, ok)
        return ok

"""Is the Hugging Face hub reachable? One fast, cached answer instead of long retry loops.

``huggingface_hub`` retries an unreachable host for ~50 s per file. A :class:`HubProbe` asks once
with a short TCP connect (a second or two at most) and remembers the answer for a minute; the
app context owns one, and every loader uses it to choose between the hub and the local/embedded
fallbacks. ``--offline`` is said to the Hugging Face libraries through their own environment
variables (:data:`OFFLINE_ENV`), set by ``app.py`` before they are imported.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlparse

PROBE_TTL_S = 60.0
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def env_flag(name: str) -> bool:
    """True when environment variable ``name`` says yes (1, true, yes, on; any case): the one reading of a flag."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def env_offline() -> bool:
    """True when the environment tells the Hugging Face libraries to stay offline."""
    return any(env_flag(var) for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def tcp_probe(timeout_s: float) -> bool:
    """True when the hub's host (``$HF_ENDPOINT``, default huggingface.co) accepts a TCP connection."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class HubProbe:
    """One server's view of the hub: offline when told so, else a TCP probe remembered for ``ttl_s``."""

    def __init__(self, offline: bool = False, ttl_s: float = PROBE_TTL_S,
                 probe: Callable[[float], bool] = tcp_probe, clock: Callable[[], float] = time.monotonic) -> None:
        self.offline = offline
        self.ttl_s = ttl_s
        self._probe = probe
        self._clock = clock
        self._lock = threading.Lock()  # held during a probe: concurrent callers want the same answer
        self._answer: tuple[float, bool] | None = None  # (when, reachable)

    def reachable(self, timeout_s: float = 1.5) -> bool:
        """True when the model/dataset hub answers (within ``timeout_s``); never when offline."""
        if self.offline or env_offline():
            return False
        with self._lock:
            now = self._clock()
            if self._answer is not None and now - self._answer[0] < self.ttl_s:
                return self._answer[1]
            ok = self._probe(timeout_s)
            self._answer = (now, ok)
            return ok

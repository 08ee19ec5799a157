"""What the app benchmarks share: launch `python app.py` and wait for it, speak its queue protocol, percentiles.

Two ways to call an endpoint of the running app:

- ``gradio_client.Client`` — what API users run. Its result loop polls in 50 ms sleeps, so a round
  trip through it carries up to ~50 ms of the client's own waiting;
- :class:`QueueSession` — the browser's protocol (``POST /gradio_api/queue/join``, then the
  server-sent events of ``/gradio_api/queue/data``) with one session, read as the events arrive:
  the server's own part of a round trip, without the client library's polling.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
FILL_MASK_ARGS = {"text": "Nice to [MASK] you.", "text_pair": "", "model": "", "top_k": 5, "targets": "",
                  "second_model": "", "whole_words": False, "fast": False}
TRAINING_SETTINGS = {"preset": "bert-tiny", "corpus": "wiki", "steps": 100_000}  # a CPU run that outlasts the bench


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of ``values`` by linear interpolation."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def spread(values: list[float]) -> str:
    """"p50 / p95 (min–max)" in ms."""
    return f"{percentile(values, 50):7.1f} / {percentile(values, 95):7.1f} ({min(values):.0f}–{max(values):.0f})"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class App:
    """``python app.py --offline --port <free> *args`` (of the checkout ``app_dir``) as a subprocess; a context
    manager that stops it."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, timeout_s: float = 180.0,
                 app_dir: Path = REPO_ROOT) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self._runs = tempfile.TemporaryDirectory(prefix="bench-runs-")
        # the app's output, open while the app runs; closed in stop()
        self._log = tempfile.NamedTemporaryFile(prefix="bench-app-", suffix=".log", delete=False)  # noqa: SIM115
        cmd = [sys.executable, "app.py", "--offline", "--port", str(self.port), "--runs-dir", self._runs.name, *args]
        full_env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.proc = subprocess.Popen(cmd, cwd=app_dir, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"app.py exited ({self.proc.returncode}):\n{self.log()}")
            try:
                if httpx.get(self.url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"app.py did not serve within {timeout_s:.0f} s:\n{self.log()}")
            time.sleep(0.5)

    @property
    def runs_dir(self) -> Path:
        """The server's runs folder (its class database lives there too)."""
        return Path(self._runs.name)

    def log(self, limit: int = 4000) -> str:
        return Path(self._log.name).read_text(errors="replace")[-limit:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)
        self._runs.cleanup()

    def client(self, timeout_s: float = 120.0, address: str = ""):
        """A gradio client of the app; its requests (the config it reads first included) wait ``timeout_s``,
        so a bench that loads the server on purpose does not lose a client to httpx's 5 s default. ``address``: the
        visitor's own, sent as a proxy in front of a Space writes it (``X-Forwarded-For``; the app launched with
        ``--trusted-proxies 1`` reads it)."""
        from gradio_client import Client

        headers = {"X-Forwarded-For": address} if address else None
        return Client(self.url, verbose=False, headers=headers, httpx_kwargs={"timeout": timeout_s})

    def wait_for_model(self, timeout_s: float = 300.0) -> None:
        """Until /fill_mask answers (the default model loads in the background after the page is up)."""
        client = self.client()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                client.predict(**FILL_MASK_ARGS, api_name="/fill_mask")
                return
            except Exception:  # still loading
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class QueueSession:
    """Calls endpoints the way the page does: join the queue, then read that session's event stream."""

    def __init__(self, url: str) -> None:
        self.base = url.rstrip("/") + "/gradio_api"
        self.http = httpx.Client(timeout=120)
        config = self.http.get(url.rstrip("/") + "/config").json()
        self.fn_index = {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}
        self.session = uuid.uuid4().hex[:11]

    def call(self, api_name: str, data: list) -> list:
        """The endpoint's output values; raises RuntimeError with the server's message on an error."""
        joined = self.http.post(f"{self.base}/queue/join", json={
            "data": data, "event_data": None, "fn_index": self.fn_index[api_name], "trigger_id": None,
            "session_hash": self.session,
        })
        joined.raise_for_status()
        with self.http.stream("GET", f"{self.base}/queue/data", params={"session_hash": self.session}) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("msg") == "process_completed":
                    if not msg.get("success"):
                        raise RuntimeError(str(msg.get("output", {}).get("error")))
                    return msg["output"]["data"]
        raise RuntimeError(f"{api_name}: the event stream closed without a result")

    def close(self) -> None:
        self.http.close()


def start_training(client) -> str:
    """Start the CPU pretraining run through /start_run and wait until it is training."""
    message = client.predict(TRAINING_SETTINGS, "", api_name="/start_run")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = client.predict(api_name="/run_status") or {}
        if status.get("step", 0) >= 2:
            return message
        time.sleep(1)
    raise SystemExit(f"the run did not start training within 120 s: {status}")


def all_at_once(clients: list, worker: Callable[[Any, int], None]) -> float:
    """Run ``worker(client, k)`` for every client in its own thread, all released together; wall seconds."""
    barrier = threading.Barrier(len(clients))

    def body(client, k: int) -> None:
        barrier.wait()
        worker(client, k)

    threads = [threading.Thread(target=body, args=(c, k)) for k, c in enumerate(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def latency_bars(times: dict[str, list[float]], title: str):
    """A plotly figure: one horizontal bar per name at its p50 latency, with a whisker up to p95."""
    import plotly.graph_objects as go

    names = list(times)
    p50 = [percentile(times[n], 50) for n in names]
    p95 = [percentile(times[n], 95) for n in names]
    fig = go.Figure(go.Bar(
        x=p50, y=names, orientation="h", marker_color="#4f46e5", text=[f"{v:,.0f} ms" for v in p50],
        textposition="outside", error_x=dict(type="data", symmetric=False, array=[b - a for a, b in zip(p50, p95)],
                                             arrayminus=[0] * len(p50)),
    ))
    fig.update_layout(title=title + " (p50, whisker to p95)", xaxis_title="ms", template="plotly_white",
                      yaxis=dict(autorange="reversed", automargin=True))
    return fig

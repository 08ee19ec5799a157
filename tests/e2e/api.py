"""Helpers the API tests share: call the launched app's endpoints through ``gradio_client`` or as a page
does (queue/join and the event stream, uploads), read its plots and chips, expect a clear error. Import as ``from .api import ...`` (no test module imports another)."""

from __future__ import annotations

import base64
import concurrent.futures
import html
import json
import re
import urllib.error
import urllib.request
import uuid

import numpy as np
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.helpers import wait_until


def chip_tokens(chips_html: str) -> list[tuple[int, str]]:
    """(id, token) of every chip in the chips HTML."""
    spans = re.findall(r'<span class="token-chip" data-id="(\d+)"[^>]*><span class="chip-text"[^>]*>(.*?)</span>',
                       chips_html)
    return [(int(i), html.unescape(t)) for i, t in spans]


def plotly_figure(plot) -> dict:
    """The plotly figure dict from a ``gr.Plot`` API value."""
    assert isinstance(plot, dict) and plot.get("type") == "plotly", plot
    return json.loads(plot["plot"])


def as_array(value) -> np.ndarray:
    """Decode a plotly array (a list, or the typed-array form ``{dtype, bdata, shape}``)."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value, dtype=float)


def expect_error(call, *fragments: str) -> str:
    """Run ``call``; it must raise AppError whose message contains every fragment (case-insensitive)."""
    with pytest.raises(AppError) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in error message {message!r}"
    return message


def tokenize(client, text, pair="", model=""):
    return client.predict(text, pair, model, api_name="/tokenize")


def fill(client, text, model, pair="", top_k=5, targets="", second="", whole_words=False):
    return client.predict(text, pair, model, top_k, targets, second, whole_words, api_name="/fill_mask")


def attend(client, text, model, pair="", layer=0, head=0, mean=False, hide=False, renorm=True):
    return client.predict(text, pair, model, layer, head, mean, hide, renorm, api_name="/attention")


ANSWER_TIMEOUT_S = 60.0


def post_json(url: str, payload: bytes, visitor: str | None = None) -> tuple[int, str]:
    """(status, body) of a JSON POST; ``visitor``: the address a trusted proxy would append (X-Forwarded-For)."""
    headers = {"Content-Type": "application/json"}
    if visitor:
        headers["X-Forwarded-For"] = visitor
    request = urllib.request.Request(url, data=payload, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def app_config(base: str) -> dict:
    with urllib.request.urlopen(f"{base}config", timeout=30) as resp:
        return json.loads(resp.read())


def fn_index(config: dict, api_name: str) -> int:
    """The queue's number for the handler named ``api_name`` (private page handlers included)."""
    found = [d["id"] for d in config["dependencies"] if d.get("api_name") == api_name]
    assert len(found) == 1, f"{api_name}: {found}"
    return found[0]


class QueueCall:
    """One call as a page makes it: POST queue/join, then the session's event stream, read message by message."""

    def __init__(self, base: str, index: int, data: list) -> None:
        self.session = uuid.uuid4().hex
        body = json.dumps({"data": data, "fn_index": index, "session_hash": self.session, "event_data": None,
                           "trigger_id": None}).encode()
        status, answer = post_json(f"{base}gradio_api/queue/join", body)
        assert status == 200, answer
        self.base, self.index, self.event_id = base, index, json.loads(answer)["event_id"]
        self.stream = urllib.request.urlopen(f"{base}gradio_api/queue/data?session_hash={self.session}",
                                             timeout=ANSWER_TIMEOUT_S)

    def next_message(self) -> dict:
        while True:
            line = self.stream.readline()
            assert line, "the event stream ended"
            if line.startswith(b"data: "):
                return json.loads(line[len(b"data: "):])

    def until_progress(self, words: str) -> dict:
        """The first progress message that says ``words`` (the call must not have ended before it)."""
        while not ((message := self.next_message())["msg"] == "progress" and words in json.dumps(message)):
            assert message["msg"] != "process_completed", message
        return message

    def until_done(self) -> dict:
        """The call's last message (process_completed: ``success``, ``output``)."""
        while (message := self.next_message())["msg"] != "process_completed":
            pass
        return message

    def cancel(self) -> None:
        """Cancel the call as gradio_client's ``job.cancel()`` does, the stream still open."""
        body = json.dumps({"session_hash": self.session, "fn_index": self.index, "event_id": self.event_id})
        status, answer = post_json(f"{self.base}gradio_api/cancel", body.encode())
        assert status == 200, answer

    def leave(self) -> None:
        """Go away as a closed tab does: drop the connection, read nothing more."""
        self.stream.close()


def upload_request(base: str, files: list[tuple[str, bytes]], visitor: str | None = None) -> tuple[int, str]:
    """POST files to gradio's upload route as a browser does (``visitor``: the address a proxy would name)."""
    boundary = uuid.uuid4().hex
    body = b"".join(f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
                    f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n" for name, data in files)
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    if visitor:
        headers["X-Forwarded-For"] = visitor
    request = urllib.request.Request(f"{base}gradio_api/upload", data=body + f"--{boundary}--\r\n".encode(),
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def upload(base: str, files: list[tuple[str, bytes]]) -> list[str]:
    """The server paths gradio stored ``files`` under (the value a page then sends as FileData)."""
    status, answer = upload_request(base, files)
    assert status == 200, answer
    return json.loads(answer)


RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=3000, lr=2e-3, warmup_steps=5, eval_every=50,
           eval_batches=1, checkpoint_every=0, seed=1)


ENDED = {"stopped", "finished", "failed"}
DROPPED_ASKS = 3


def poll(client: Client, *args, api_name: str):
    """An idempotent read (a run's or a queue's status) through ``gradio_client``, asked again when the client
    drops it. gradio_client reads every call of a session from one event stream, which the server ends when the
    session has no call left; a call registered just before the reader sees that end is answered with
    ``CancelledError`` although the server served it (seen once in five suite runs, in a poll loop). The server
    is not at fault, and a read asked twice reads the same thing; anything else is raised."""
    for _ in range(DROPPED_ASKS - 1):
        try:
            return client.predict(*args, api_name=api_name)
        except concurrent.futures.CancelledError:
            continue
    return client.predict(*args, api_name=api_name)


def wait_ended(client: Client, timeout: float = 300) -> dict:
    """The run's last status once it has ended: polled once a second (each poll costs the server a status of
    up to 100 KB, which a busy machine feels), at most ``timeout`` s; a short message on failure."""
    snaps = [{}]

    def ended() -> bool:
        snaps[0] = poll(client, api_name="/run_status") or {}
        return snaps[0].get("status") in ENDED

    wait_until(ended, timeout=timeout, interval=1.0, what="the run to end",
               message=lambda: f"{snaps[0].get('status')} at step {snaps[0].get('step')} of "
                               f"{snaps[0].get('total_steps')}: {str(snaps[0].get('message'))[:200]}")
    return snaps[0]


# a tiny pretraining run that ends by itself within a minute: the checkpoint fine-tuning tests start from
PRETRAIN = dict(preset="custom", num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus="wiki", seq_len=32, batch_size=8, steps=30, lr=2e-3, warmup_steps=5, eval_every=15,
                checkpoint_every=0, seed=1)


def wait_status(client: Client, predicate, timeout_s: float = 300.0) -> dict:
    """The run's status once ``predicate`` holds for it (a failed run fails at once), at most ``timeout_s`` s."""
    snaps = [{}]

    def reached() -> bool:
        snaps[0] = poll(client, api_name="/run_status") or {}
        assert snaps[0].get("status") != "failed", str(snaps[0].get("message"))[:200]
        return bool(predicate(snaps[0]))

    wait_until(reached, timeout=timeout_s, interval=0.5, what="the run's status",
               message=lambda: f"{snaps[0].get('kind')} {snaps[0].get('status')} {str(snaps[0].get('message'))[:200]}")
    return snaps[0]


BUSY_MACHINE_S = 1200.0  # a short run; on a shared two-core machine it can wait minutes for a core


def finished_own_run(app_url: str, pretrained: str, lines: str, refused: str, refusal: str) -> tuple[Client, dict]:
    """A start on ``refused`` lines refused with ``refusal``, then an own-data run on ``lines`` from the checkpoint
    of the tiny pretraining run ``pretrained``: (client, its status once finished)."""
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match=refusal):
        client.predict({"task": "own", "lines": refused}, api_name="/start_finetune")
    client.predict({"task": "own", "lines": lines, "init": f"run:{pretrained}/checkpoint",
                    "epochs": 2, "batch_size": 16, "seed": 1}, api_name="/start_finetune")
    snap = wait_status(client, lambda s: s.get("kind") == "finetune" and s.get("task") == "own"
                       and s.get("status") == "finished" and s["checkpoint"], BUSY_MACHINE_S)
    return client, snap

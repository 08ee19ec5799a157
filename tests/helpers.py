"""Helpers the tests share (import as ``from tests.helpers import ...``; never from conftest; fixtures live there)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import json
import random
import socket
import time
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM

from bertdemo.finetune.config import FinetuneConfig
from bertdemo.finetune.engine import TopicTask
from bertdemo.finetune.service import FinetuneService
from bertdemo.models.embedded import wiki_summaries
from bertdemo.pretrain.budget import SpeedBook
from bertdemo.pretrain.config import TrainConfig
from bertdemo.pretrain.service import PretrainService
from bertdemo.runs.service import RunService
from bertdemo.settings import ServerSettings


def wait_until(predicate: Callable[[], object], timeout: float = 60.0, interval: float = 0.005,
               what: str | None = None, message: Callable[[], str] | str = "") -> None:
    """Poll ``predicate`` until it is true; AssertionError after ``timeout`` seconds (never hangs), naming
    ``what`` (or the predicate) and ``message`` (a string, or a callable read at the time of failure)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            name = what or getattr(predicate, "__name__", repr(predicate))
            detail = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:g} s waiting for {name}" + (f": {detail}" if detail else ""))
        time.sleep(interval)


def run_coroutine(coro, timeout: float = 120.0):
    """``asyncio.run(coro)`` in a thread of its own: a browser test earlier in the session (Playwright's sync
    API) leaves an event loop running in the main thread, where ``asyncio.run`` refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result(timeout=timeout)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_bert_config(**overrides) -> BertConfig:
    """A 2-layer, hidden-32 BERT over the full uncased vocabulary."""
    cfg = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=64)
    cfg.update(overrides)
    return BertConfig(**cfg)


def tiny_model_dir(model_cls: type, folder: Path, tokenizer, **overrides) -> Path:
    """``model_cls(tiny_bert_config(**overrides))`` with seed-0 weights, saved with ``tokenizer`` as a normal model
    folder in ``folder``."""
    torch.manual_seed(0)
    model_cls(tiny_bert_config(**overrides)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def wiki_corpus_file(folder: Path, n_docs: int = 200) -> str:
    """``n_docs`` embedded Wikipedia summaries as a .jsonl corpus file in ``folder``."""
    path = Path(folder) / "wiki.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps({"text": t}) for t in wiki_summaries()[:n_docs]), encoding="utf-8")
    return str(path)


def tiny_run_config(corpus: str, tmp_path: Path, *presets: dict, **overrides) -> TrainConfig:
    """A one-layer, hidden-32 pretraining run on CPU that trains in about a second (runs in tmp_path): the one
    tiny run of the tests. A module's common changes come as ``presets`` (dicts, applied in order), then what
    the test itself needs different (steps, eval_every, cache_dir, runs_dir...)."""
    base = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                corpus=corpus, seq_len=32, batch_size=8, steps=20, lr=3e-3, warmup_steps=2, log_every=5,
                eval_every=10, eval_batches=2, checkpoint_every=0, cache_dir=str(tmp_path / "cache"),
                runs_dir=str(tmp_path), device="cpu", num_threads=1)
    for preset in presets:
        base.update(preset)
    base.update(overrides)
    return TrainConfig.from_flat(**base)


TWIN_OBJECTIVES = {"mlm": {"objective": "mlm"}, "ltr-masked": {"objective": "ltr", "ltr_targets": "masked"},
                   "ltr-all": {"objective": "ltr"}}  # the twins' three runs (bertdemo.tools.build_twin_pairs.RUNS)


def train_tiny_twins(work: Path, corpus: str, tokenizer: str, init_from: Callable[[str], str] | None = None,
                     resume: bool = False, **overrides) -> None:
    """The twins' three runs, tiny (:func:`tiny_run_config`, 8 steps, a checkpoint every 4, milestones kept), in
    ``work/<run>``: one seed, so the same batches; ``init_from(run)``: the folder each warm-starts from; ``resume``:
    each run goes on from its latest save (to more ``steps``: a new schedule, as the command line continues a build)."""
    from bertdemo.pretrain.checkpoints import latest_checkpoint
    from bertdemo.pretrain.metrics import MetricsBuffer
    from bertdemo.pretrain.trainer import run_training
    from bertdemo.settings import DiskRules

    for run, objective in TWIN_OBJECTIVES.items():
        start = {"init_from": init_from(run)} if init_from else {}
        if resume:
            start["resume_from"] = str(latest_checkpoint(work / run))
        cfg = tiny_run_config(corpus, work, objective, {"steps": 8, "checkpoint_every": 4}, tokenizer=tokenizer,
                              **start, **overrides)
        assert run_training(cfg, metrics=MetricsBuffer(), run_folder=work / run,
                            disk=DiskRules(keep_milestones=8)) == "finished"


def run_services(settings: ServerSettings, speeds: SpeedBook | None = None, clock: Callable[[], float] = time.monotonic,
                 ) -> tuple[RunService, PretrainService, FinetuneService]:
    """The shared run service of ``settings`` with both run kinds registered, as the app context builds them
    (``speeds``: the pretraining kind's speed book; ``clock``: the slot's clock)."""
    runs = RunService(settings, clock=clock)
    return runs, PretrainService(runs, speeds=speeds), FinetuneService(runs)


def tiny_finetune_config(folder: str | Path, *presets: dict, **overrides) -> FinetuneConfig:
    """A fine-tuning run of a few seconds on CPU from the model in ``folder`` (random weights of its shape unless
    ``init`` says otherwise): the one tiny fine-tuning run of the tests; ``presets`` and ``overrides`` as in
    :func:`tiny_run_config`."""
    base = dict(init="random", init_path=str(folder), learning_rate=3e-3, batch_size=8, epochs=2, time_budget_s=0,
                eval_every=5, eval_examples=50, num_threads=1)
    for preset in presets:
        base.update(preset)
    base.update(overrides)
    return FinetuneConfig(**base)


WORDS = {"fruit": ["apple", "banana", "cherry", "grape"], "vehicle": ["car", "truck", "bus", "train"]}


def word_task(n_per_class: int = 40, seed: int = 0) -> TopicTask:
    """Two classes, each sentence naming two words of its class: learnable to 100 %."""
    rng = random.Random(seed)
    labels = list(WORDS)
    rows = [(f"the {rng.choice(WORDS[c])} and the {rng.choice(WORDS[c])} are here .", i)
            for i, c in enumerate(labels) for _ in range(n_per_class)]
    rng.shuffle(rows)
    n = len(rows)
    split = lambda part: ([t for t, _ in part], [y for _, y in part])
    return TopicTask(labels, *split(rows[: n * 6 // 10]), *split(rows[n * 6 // 10: n * 8 // 10]),
                     *split(rows[n * 8 // 10:]))


class FakeClock:
    """A monotonic clock a test moves by hand (``clock.now += 60``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def manual_logits(model: BertForMaskedLM, ids, mask, off: set[tuple[int, int]]) -> torch.Tensor:
    """BERT's forward written out from the weights, with the heads in ``off`` multiplied by 0."""
    bert = model.bert
    h = bert.embeddings(input_ids=ids)  # (B, S, D)
    b, s, d = h.shape
    n_heads = model.config.num_attention_heads
    hd = d // n_heads
    additive = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min  # (B, 1, 1, S)
    for i, layer in enumerate(bert.encoder.layer):
        sa = layer.attention.self
        q, k, v = (lin(h).view(b, s, n_heads, hd).transpose(1, 2) for lin in (sa.query, sa.key, sa.value))
        probs = ((q @ k.transpose(-1, -2)) / hd**0.5 + additive).softmax(-1)  # (B, H, S, S)
        for layer_idx, head in off:
            if layer_idx == i:
                probs[:, head] = 0
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, d)
        attn = layer.attention.output(ctx, h)
        h = layer.output(layer.intermediate(attn), attn)
    return model.cls(h)


def tiny_pretrain_bert(layers: int, dropout: float = 0.0) -> BertForMaskedLM:
    """A 100-word, hidden-32 BertForMaskedLM as pretraining builds it (transformers' own SDPA attention)."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    return BertForMaskedLM(config)


def masked_blocks(B: int = 3, T: int = 20, k: int = 5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids (B, T), labels (B, T) -100 but at the positions, positions (B, k)) for that tiny BERT."""
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, 100, (B, T), generator=g)
    positions = torch.rand((B, T), generator=g).topk(k, dim=1).indices  # (B, k)
    labels = torch.full((B, T), -100).scatter(1, positions, torch.randint(5, 100, (B, k), generator=g))
    return input_ids, labels, positions


def visitor_client(url: str, address: str):
    """A gradio Client that the public server takes for the visitor at ``address``: the header a Space's
    proxy would append it to. Each test that starts runs there comes from its own address, so the
    per-visitor run quota of one test never holds up another."""
    from gradio_client import Client

    return Client(url, verbose=False, headers={"x-forwarded-for": address})


def explains_the_pooler_report(source: str) -> bool:
    """A snippet loading the bare encoder (AutoModel / BertModel) says, before that line, why transformers
    reports the pooler as "newly initialized"."""
    load = source.index("AutoModel.from_pretrained(MODEL" if "AutoModel.from" in source else "BertModel.from_pretrained(")
    return "'newly initialized'" in source[:load]


def run_snippet(source: str) -> tuple[list[str], dict]:
    """Execute a "Show the code" snippet as a notebook cell would: (its printed lines, its variables)."""
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<snippet>", "exec"), namespace)  # noqa: S102 - our own generated code
    return out.getvalue().splitlines(), namespace


PEOPLE, PLACES, THINGS = ["Alice", "Bob", "Carol"], ["Paris", "Rome", "Oslo"], ["dog", "car", "tree", "house"]


def name_task(n: int = 40, seed: int = 0):
    """A "Find the names" task (a label per word, tagged by the rule) whose names are always the same few words:
    learnable to F1 1.0. Sentences s0, s1, … each its own summary."""
    from bertdemo.corpus import names
    from bertdemo.finetune.token_engine import WordTask

    rng = random.Random(seed)
    rows = []
    for k in range(n):
        text = (f"Then the {rng.choice(THINGS)} of {rng.choice(PEOPLE)} went to {rng.choice(PLACES)} "
                f"with a {rng.choice(THINGS)} .")
        ws = names.words(text)
        rows.append(names.TaggedSentence(f"s{k}", tuple(ws), tuple(names.tag_words(ws))))
    return WordTask(list(names.LABELS), rows[: n * 6 // 10], rows[n * 6 // 10: n * 8 // 10], rows[n * 8 // 10:])


def summary_blocks(tokenizer, texts: int = 40, length: int = 64, heldout: int = 6):
    """The first ``texts`` embedded summaries packed into blocks of ``length`` as prepare_blocks packs them:
    (train blocks, the last ``heldout`` blocks)."""
    import numpy as np

    from bertdemo.models.embedded import wiki_summaries
    from bertdemo.pretrain.data import pack_stream

    ids = np.concatenate([np.asarray(t + [tokenizer.sep_token_id]) for t in
                          tokenizer(wiki_summaries()[:texts], add_special_tokens=False)["input_ids"]])
    packed = pack_stream(ids, length, tokenizer.cls_token_id, tokenizer.sep_token_id, np.int64)
    return packed[:-heldout], packed[-heldout:]


def asgi_get(app: Callable, scope: dict) -> tuple[int, dict, bytes]:
    """Send one HTTP request ``scope`` through the ASGI ``app``: (status, headers, body), the body decompressed
    when it came brotli-encoded."""
    import brotli

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    run_coroutine(app(scope, None, send))
    headers = dict(sent[0]["headers"])
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], headers, brotli.decompress(body) if headers.get(b"content-encoding") == b"br" else body


def assert_as_validated(fig) -> None:
    """A figure built without plotly's validation (viz/style.py unchecked_figure) is what validating it gives:
    every property one plotly knows, in the form its validation writes."""
    import plotly.graph_objects as go

    assert json.loads(go.Figure(fig.to_dict()).to_json()) == json.loads(fig.to_json()), fig.layout.title.text

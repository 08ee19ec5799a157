"""Memory under the heaviest legal input of every kind a visitor can send a public server: the server's peak RSS.

    python bench/bench_heaviest_inputs.py [--minutes 1] [--only paste-words,csv-file]

Launches ``python app.py --offline --public --max-train-minutes M`` (embedded masked-LM; the runs' time budget is
the cap less its room, ``Limits.training_budget_s``) and samples its RSS (``/proc/<pid>/status``) every 0.2 s. One
kind after another, each once the one before has ended, as a visitor's page or the API sends it:

* ``default-own``: not heavy, the page's own default: its example sentences (the Example button) with the default
  settings — whether it ends under the cap with a model kept;
* ``paste-sentences``: sentence labels pasted, just under 1,000,000 characters: 5,000 examples (the most), 20 labels;
* ``paste-words``: word labels pasted, 905 sentences of 199 words (just under the paste's characters; a sentence
  of word labels is never cut);
* ``csv-file``: an uploaded CSV of 5,000 rows of 1,000 characters (5.0 MB of ASCII; the most rows and the longest texts);
* ``pretrain``: the largest pretraining shape a public server starts (bert-mini, batch 32 × 128, the wiki corpus),
  for the steps a 1.5-minute cap takes (20: a longer start is refused by its estimate);
* ``views``: the heavy views of ``bench/bench_memory.py`` (word in context, every layer's neighbour index,
  attribution, layer probes, whole-word Fill-Mask and attention on a long text).

Prints, per kind: RSS before it, its peak, and the run's final status line; the last line is the overall peak.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import App, QueueSession
from bench.bench_memory import HEAVY, Sampler
from bertdemo.finetune.own_data import MAX_EXAMPLES, MAX_LABELS, MAX_PASTE_CHARS, MAX_TEXT_CHARS

OWNER = "bench-heaviest"
KINDS = ("default-own", "paste-sentences", "paste-words", "csv-file", "pretrain", "views")
PRETRAIN = {"preset": "bert-mini", "batch_size": 32, "seq_len": 128, "corpus": "wiki", "steps": 20}
# (the most steps of that shape a 1.5-minute cap takes here: a longer start is refused by its estimate)


def sentence_paste() -> str:
    """The most examples (5,000), distinct, in the most labels (20), the paste just under its 1,000,000 characters."""
    lines = []
    per_line = MAX_PASTE_CHARS // MAX_EXAMPLES - 1  # with its newline
    for i in range(MAX_EXAMPLES):
        label = f"label{i % MAX_LABELS:02d}"
        text = f"example {i:04d} " + " ".join(f"word{(i * 7 + j) % 997}" for j in range(40))
        lines.append(f"{label}\t{text[:per_line - len(label) - 1]}")
    paste = "\n".join(lines)
    assert len(paste) < MAX_PASTE_CHARS, len(paste)
    return paste


def word_paste() -> str:
    """905 sentences of 199 word<TAB>tag lines, a blank line between sentences: just under 1,000,000 characters."""
    sentences = []
    for s in range(905):
        sentences.append("\n".join(f"{chr(97 + (s + j) % 26)}{chr(97 + (s * 7 + j) % 26)}\t{'N' if j % 9 == 0 else 'O'}"
                                    for j in range(199)))
    paste = "\n\n".join(sentences)
    assert len(paste) < MAX_PASTE_CHARS, len(paste)
    return paste


def csv_file(folder: Path) -> Path:
    """5,000 rows of 1,000-character texts and 20 labels: the most rows, the longest texts (5.0 MB of ASCII)."""
    path = folder / "heaviest.csv"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("text,label\n")
        for i in range(MAX_EXAMPLES):
            text = (f"row {i:04d} " + " ".join(f"word{(i * 13 + j) % 991}" for j in range(200)))[:MAX_TEXT_CHARS]
            fh.write(f"{text},label{i % MAX_LABELS:02d}\n")
    return path


def upload(app: App, path: Path) -> dict:
    """The file uploaded as the page's file box does; the FileData the page then sends."""
    with open(path, "rb") as fh:
        answer = httpx.post(app.url + "gradio_api/upload", files={"files": (path.name, fh, "text/csv")}, timeout=120)
    answer.raise_for_status()
    [stored] = answer.json()
    return {"path": stored, "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}


def own_start(app: App, pasted: str = "", file: dict | None = None) -> str:
    """The own-data section's Start, as the page sends it (embedded start, labels read from the lines' shape)."""
    session = QueueSession(app.url)
    try:
        return str(session.call("own_start", [OWNER, pasted, file, "", "", "", "embedded", "auto"])[0])[:200]
    finally:
        session.close()


def wait_ended(app: App, timeout_s: float) -> dict:
    """The visitor's run's last status once it has ended (or ``timeout_s`` passed)."""
    client = app.client()
    deadline = time.monotonic() + timeout_s
    status: dict = {}
    while time.monotonic() < deadline:
        status = client.predict(OWNER, api_name="/run_status") or {}
        if status.get("status") in {"finished", "stopped", "failed"}:
            break
        time.sleep(1)
    return status


def run_kind(app: App, kind: str, folder: Path, minutes: float) -> str:
    """One kind's heaviest input, sent and waited for; what its run's status said at the end."""
    if kind == "views":
        client = app.client()
        for api, kwargs in HEAVY:
            client.predict(**kwargs, api_name=api)
        return f"{len(HEAVY)} heavy views answered"
    if kind == "pretrain":
        app.client().predict(PRETRAIN, OWNER, api_name="/start_run")
    elif kind == "default-own":
        session = QueueSession(app.url)
        example = str(session.call("own_example", [])[0])
        session.close()
        own_start(app, example)
    elif kind == "paste-sentences":
        own_start(app, sentence_paste())
    elif kind == "paste-words":
        own_start(app, word_paste())
    else:
        own_start(app, file=upload(app, csv_file(folder)))
    status = wait_ended(app, minutes * 60 + 120)
    if status.get("status") not in {"finished", "stopped", "failed"}:  # past the cap by two minutes: say so, stop it
        overran = f"still {status.get('status')} {minutes * 60 + 120:.0f} s after its start, stopped by the bench; "
        app.client().predict(OWNER, api_name="/stop_run")
        status = wait_ended(app, 600)
        status["message"] = overran + str(status.get("message", ""))
    saved = str(status.get("checkpoint") or status.get("last_checkpoint") or "")  # a fine-tune's / a pretraining run's
    kept = "a model kept" if saved.startswith(("ft:", "run:")) else "no model kept"
    ended = f"{status.get('status')} after {float(status.get('elapsed_s') or 0):.0f} s, {kept}: {str(status.get('message', ''))[:300]}"
    delete = "/delete_run" if kind == "pretrain" else "/delete_finetune"
    app.client().predict(status.get("run_id", ""), OWNER, api_name=delete)  # one address keeps a few runs
    return ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="the public cap (--max-train-minutes)")
    parser.add_argument("--only", default=",".join(KINDS), help="comma-separated kinds, of " + ", ".join(KINDS))
    args = parser.parse_args()
    kinds = [k for k in args.only.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise SystemExit(f"unknown kind(s): {', '.join(unknown)}")
    peaks = {}
    with App("--public", "--max-train-minutes", f"{args.minutes:g}") as app:
        app.wait_for_model()
        sampler = Sampler(app.proc.pid)
        for kind in kinds:
            before = sampler.now
            sampler.peak = before
            started = time.perf_counter()
            ended = run_kind(app, kind, app.runs_dir, args.minutes)
            peaks[kind] = sampler.peak
            print(json.dumps({"kind": kind, "rss_before_mb": round(before), "peak_mb": round(sampler.peak),
                              "seconds": round(time.perf_counter() - started), "ended": ended}), flush=True)
        sampler.stop()
    print(f"overall peak: {max(peaks.values()):.0f} MB ({max(peaks, key=peaks.get)})")


if __name__ == "__main__":
    main()

"""Click to settled: each tab's main button, in headless Chromium, until the page is at rest.

    python bench/bench_settle.py                                    # the embedded model, 12 clicks per tab
    python bench/bench_settle.py --compare /tmp/base --label-b base # two checkouts, alternated click by click
    python bench/bench_settle.py --tabs "Attention,Inside BERT" --repeat 20
    python bench/bench_settle.py --tabs "Twins: side by side,Head roles,Names tagging,Own-data classify"

The views inside the Pretrain and Fine-tune tabs are measured the same way, each opened first as a learner
opens it: the twin comparison (held-out words by position, a new number of blocks each click; the learner's
sentence side by side, asked alone and as a text's start), what the heads became (the two shipped twins in turn),
names tagging (a names run fine-tuned through ``/start_finetune`` before the clicks) and classifying with a run on
the learner's own data (the 20-sentence example fine-tuned from the page before the clicks). Those two tabs poll
their runs every 1–2 s: a poll sent after the click is a queue event like any other, and the click settles once
it is answered too.

A click is *settled* when, measured in the page from the click:

- the watched output shows the new answer (its text, progress text left out, differs from before the click;
  each click types a new sentence first), or every event since the click has answered and the text is still
  the one before 100 ms later: the answer was the same as before (the own-data classifier's rounded
  probabilities can be, for two sentences; such clicks are counted, "answers as before"; a text that changes
  after all is timed when it does), and
- no progress indicator is left anywhere on the page: no status tracker of any block, closed accordions and
  hidden panels included, is pending (gradio's tracker is ``div.wrap`` without ``hide``), and
- no queue event sent since the click is still waiting for its answer (a wrapped ``fetch`` counts
  ``queue/join`` requests and their ``process_completed`` messages).

The page checks these at every animation frame and at every DOM change, and records the first moment all
three hold; the bench waits a further quiet 300 ms to make sure nothing else follows (if something does, the
click settles later). Printed per tab: p50 / p95 / min–max of *settled*, of *answered* (the watched output
changed), the p50 CPU time the page's main thread and the server process spent per click (from the click until
quiet: a loaded machine stretches wall time, not CPU time), the number of queue round trips per click and,
per event a click ran, its handler's name, the characters its answer carried, the server's duration of it
(gradio's own, from the answer) and when its answer reached the page (from the click). ``--compare DIR`` starts a second server from another
checkout (``git worktree add /tmp/base <commit>``) and alternates the two click by click (A B, then B A), so
a shared machine's load falls on both alike; the ratio of medians is printed per tab.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import REPO_ROOT, App, percentile
from bench.bench_views import CHROMIUM, EMBEDDED, open_tab, subject_place

QUIET_MS = 300
PAGE_PARTS = ("ScriptDuration", "RecalcStyleDuration", "LayoutDuration")  # the page's CPU by kind (ms per click)
TIMEOUT_MS = 180_000  # a busy machine

WATCHER = r"""
(() => {
  const S = window.__settle = {pending: 0, joins: 0, t0: 0, answered: null, settled: null, watched: null, before: '',
                                events: []};
  const fnOf = new Map();  // event_id -> the event's fn_index (which handler answered)
  const TRACKER_TEXT = '.progress-text, .eta-bar, .sr-only, .progress-level, .meta-text, .meta-text-center';
  const live = new Set(), early = new Set();
  function onLine(line) {
    if (!line.startsWith('data:')) return;
    let msg; try { msg = JSON.parse(line.slice(5)); } catch (e) { return; }
    if (msg.msg !== 'process_completed') return;
    if (S.t0) S.events.push({id: msg.event_id, bytes: line.length, at: performance.now() - S.t0,
                             ms: 1000 * ((msg.output || {}).duration || 0)});
    if (live.has(msg.event_id)) { live.delete(msg.event_id); S.pending -= 1; done(); check(); }
    else early.add(msg.event_id);  // answered before its join's reply was read
  }
  async function read(stream) {
    const reader = stream.getReader(), dec = new TextDecoder(); let buf = '';
    for (;;) {
      const {done, value} = await reader.read(); if (done) break;
      buf += dec.decode(value, {stream: true});
      let i; while ((i = buf.indexOf('\n')) >= 0) { onLine(buf.slice(0, i).trim()); buf = buf.slice(i + 1); }
    }
  }
  const origFetch = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : (input.url || String(input));
    if (url.includes('/queue/join')) {
      S.pending += 1; S.joins += 1;
      let fn = null; try { fn = JSON.parse(init.body).fn_index; } catch (e) {}
      const resp = await origFetch(input, init);
      try {
        const j = await resp.clone().json();
        fnOf.set(j.event_id, fn);
        if (early.has(j.event_id)) { early.delete(j.event_id); S.pending -= 1; done(); check(); } else live.add(j.event_id);
      } catch (e) { S.pending -= 1; }
      return resp;
    }
    const resp = await origFetch(input, init);
    if (url.includes('/queue/data') && resp.body) {
      const [a, b] = resp.body.tee(); read(b);
      return new Response(a, {status: resp.status, statusText: resp.statusText, headers: resp.headers});
    }
    return resp;
  };
  function text(el) {
    if (!el) return '';
    let t = el.textContent;
    el.querySelectorAll(TRACKER_TEXT).forEach(x => { if (x.textContent) t = t.split(x.textContent).join(''); });
    el.querySelectorAll('img').forEach(x => { t += x.getAttribute('src') || ''; });
    return t.replace(/\s+/g, '');
  }
  S.indicators = () => [...document.querySelectorAll('div.wrap')].filter(w =>
    (w.classList.contains('default') || w.classList.contains('center')) && !w.classList.contains('hide')
    && (w.classList.contains('full') || w.classList.contains('minimal'))).length;
  // every event since the click answered: when the watched text is still the one before 100 ms later, the answer
  // was the same as the one before (a view whose output need not differ for a new sentence), shown when it came
  function done() { if (S.t0 && S.joins > 0 && S.pending === 0 && S.doneAt === null) S.doneAt = performance.now(); }
  function check() {
    if (!S.t0) return;
    const now = performance.now();
    if (S.same && text(document.querySelector(S.watched)) !== S.before) {  // it was on its way after all
      S.same = false; S.answered = now; S.settled = null;
    }
    if (S.settled !== null) return;
    if (S.answered === null) {
      const t = text(document.querySelector(S.watched));
      if (t !== S.before) { S.answered = now; S.after = t; }
      else if (S.doneAt !== null && now - S.doneAt >= 100) { S.answered = now; S.same = true; }
    }
    if (S.answered !== null && S.pending === 0 && S.indicators() === 0) S.settled = now;
  }
  S.unsettle = () => { if (S.settled !== null && (S.pending > 0 || S.indicators() > 0)) S.settled = null; };
  const frame = () => { check(); requestAnimationFrame(frame); };
  const observe = () => {
    new MutationObserver(() => { S.unsettle(); check(); }).observe(document.documentElement,
      {childList: true, subtree: true, attributes: true, characterData: true});
    requestAnimationFrame(frame);
  };
  if (document.documentElement) observe(); else document.addEventListener('DOMContentLoaded', observe);
  S.arm = (watched) => {
    S.watched = watched; S.before = text(document.querySelector(watched));
    S.answered = null; S.settled = null; S.joins = 0; S.events = []; S.doneAt = null; S.same = false;
  };
  S.click = (button) => { S.t0 = performance.now(); document.querySelector(button).click(); };
  S.result = () => ({answered: S.answered - S.t0, settled: S.settled === null ? null : S.settled - S.t0,
                     joins: S.joins, same: S.same,
                     events: S.events.map(e => ({fn: fnOf.get(e.id), bytes: e.bytes, ms: e.ms, at: e.at})), quiet: S.settled !== null && performance.now() - S.settled > %QUIET%
                       && S.pending === 0 && S.indicators() === 0});
})();
""".replace("%QUIET%", str(QUIET_MS))


@dataclass
class Click:
    """A tab's main action: type a new sentence into ``field``, click ``button``, watch ``watched``."""

    tab: str
    field: str
    button: str
    watched: str
    sentence: str  # a format string with {s} (a subject) and {p} (a place)
    label: str = ""  # what the report calls it (default: the tab); a view inside a tab has its own
    value: Callable[[int], str] | None = None  # what the i-th click types instead of ``sentence``
    commit: bool = False  # press Enter after typing (a dropdown that takes a typed name)
    prepare: Callable[[Any, Side], None] | None = None  # once, on the open tab, before the first click

    @property
    def key(self) -> str:
        return self.label or self.tab


PLAIN = "The {s} did not cross the {p} because it was too tired."
MASKED = "The {s} did not cross the {p} because it was too [MASK]."
CLICKS = [
    Click("Tokenizer", "#tok-text textarea", "#tok-run", "#tok-chips", PLAIN),
    Click("Fill-Mask", "#fm-text textarea", "#fm-run", "#fm-filled", MASKED),
    Click("Attention", "#att-text textarea", "#att-run", "#att-heatmap", PLAIN),
    Click("Inside BERT", "#in-text textarea", "#in-run", "#in-emb-info", MASKED),
    Click("Masking & NSP", "#ml-text textarea", "#ml-run", "#ml-chips", PLAIN),
    Click("Word in context", "#wic-sentences textarea", "#wic-run", "#wic-sim-info",
          "I sat by the {p} bank.\nThe {s} opened an account at the bank.\nThe bank of the {p} was muddy."),
]


# --- the views inside the Pretrain and Fine-tune tabs ----------------------------------------------------------
NAMES_RUN = {"task": "names", "epochs": 0.05, "time_budget_s": 0, "seed": 1}  # a names run of a few steps
RUN_WAIT_S = 900  # a run on a busy 2-core machine


def open_section(label: str) -> Callable[[Any, Side], None]:
    """Open the accordion whose header reads ``label`` (when it is closed) and bring it into view."""
    def prepare(page, side) -> None:
        page.evaluate("""(label) => {
            const b = [...document.querySelectorAll('button.label-wrap')].find(x => x.textContent.includes(label));
            if (!b.classList.contains('open')) b.click();
            b.scrollIntoView({block: 'start'});
        }""", label)
        page.wait_for_timeout(500)
    return prepare


def wait_run(client, kind: str, since: set[str]) -> dict:
    """The status of the first run of ``kind`` not in ``since`` once it has ended (SystemExit when it failed)."""
    deadline = time.monotonic() + RUN_WAIT_S
    while time.monotonic() < deadline:
        status = client.predict(api_name="/run_status") or {}
        if status.get("kind") == kind and status.get("run_id") not in since and status.get("status") in (
                "finished", "stopped", "failed"):
            if status["status"] == "failed":
                raise SystemExit(f"the {kind} run failed: {str(status.get('message'))[:300]}")
            return status
        time.sleep(2)
    raise SystemExit(f"no {kind} run ended within {RUN_WAIT_S} s")


def names_model(page, side: Side) -> None:
    """Fine-tune a names run through the API (a few steps), then pick it in the tagging view."""
    open_section("Find the names")(page, side)
    client = side.app.client()
    before = {(client.predict(api_name="/run_status") or {}).get("run_id")}
    client.predict(NAMES_RUN, api_name="/start_finetune")
    status = wait_run(client, "finetune", before)
    box = page.locator("#ft-tag-model input")
    box.fill(status["checkpoint"])
    box.press("Enter")
    page.wait_for_timeout(500)


def own_run(page, side: Side) -> None:
    """Fine-tune the 20-sentence example from the page, as a learner does, and wait until its run is picked."""
    open_section("Fine-tune on your own labelled sentences")(page, side)
    page.evaluate("() => document.querySelector('#own-example').click()")  # a busy page: no actionability wait
    page.wait_for_function("() => (document.querySelector('#own-lines textarea')?.value || '').includes('\\t')",
                           timeout=TIMEOUT_MS)
    page.evaluate("() => document.querySelector('#own-start').click()")
    page.wait_for_function("() => !!document.querySelector('#own-pick input')?.value", timeout=RUN_WAIT_S * 1000)


def twins_as_text_start(page, side: Side) -> None:
    """The twins' section opened, its "as a text's start" box ticked (and answered) before the clicks."""
    open_section("The B in BERT")(page, side)
    page.locator("#pt-twins-text-start input").check()
    page.wait_for_timeout(300)


def twins_blocks(i: int) -> str:
    return str(2 + i % 15)  # 2 … 16 held-out blocks: each click a new answer


TWINS = ("embedded/twin-mlm", "embedded/twin-ltr")
VIEWS = [
    Click("Pretrain", "#pt-twins input[type=number]", "#pt-twins-heldout-run", "#pt-twins-heldout", "",
          label="Twins: held-out by position", value=twins_blocks, prepare=open_section("The B in BERT")),
    Click("Pretrain", "#pt-twins textarea", "#pt-twins-side-run", "#pt-twins-side", MASKED,
          label="Twins: side by side", prepare=open_section("The B in BERT")),
    Click("Pretrain", "#pt-twins textarea", "#pt-twins-side-run", "#pt-twins-side", MASKED,
          label="Twins: side by side as a text's start", prepare=twins_as_text_start),
    Click("Pretrain", "#pt-heads-model input", "#pt-heads-run", "#pt-heads-out", "", label="Head roles",
          value=lambda i: TWINS[i % 2], commit=True, prepare=open_section("What the heads became")),
    Click("Fine-tune", "#ft-tag-text textarea", "#ft-tag", "#ft-tag-out", "The {s} met Anna in {p} last May.",
          label="Names tagging", prepare=names_model),
    Click("Fine-tune", "#own-sentence textarea", "#own-classify", "#own-answer", PLAIN,
          label="Own-data classify", prepare=own_run),
]
CLICKS += VIEWS


@dataclass
class Side:
    label: str
    app: App
    page: object = None
    cdp: object = None
    samples: dict[str, list[dict]] = field(default_factory=dict)
    parts: dict[str, float] = field(default_factory=dict)  # PAGE_PARTS so far
    names: dict[int, str] = field(default_factory=dict)  # the page's events: fn_index -> api_name


def sentence_for(click: Click, i: int) -> str:
    if click.value is not None:
        return click.value(i)
    s, p = subject_place(i)
    return click.sentence.format(s=s, p=p)


def cpu_ms(side: Side) -> tuple[float, float]:
    """(the page's main-thread CPU time, the server process's CPU time) so far, in ms: what a click costs in
    work, which a loaded machine stretches in wall time but not in CPU time."""
    metrics = {m["name"]: m["value"] for m in side.cdp.send("Performance.getMetrics")["metrics"]}
    page = 1000.0 * metrics["TaskDuration"]
    side.parts = {k: 1000.0 * metrics[k] for k in PAGE_PARTS}
    fields = Path(f"/proc/{side.app.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    server = (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
    return page, server


def click_once(side: Side, click: Click, i: int) -> dict:
    """One click, from typing a new sentence to settled (and quiet): the page's own measurements, and the
    CPU the page and the server spent from the click until the page was quiet."""
    page = side.page
    box = page.locator(click.field).first
    box.fill(sentence_for(click, i))
    if click.commit:
        box.press("Enter")
    page.wait_for_timeout(150)  # the box's own change events answered before the clock starts
    page.wait_for_function("() => __settle.pending === 0 && __settle.indicators() === 0", timeout=TIMEOUT_MS)
    page.evaluate("(w) => __settle.arm(w)", click.watched)
    before = cpu_ms(side)
    page.evaluate("(b) => __settle.click(b)", click.button)
    # the result read in the same frame that finds it quiet (a tab's own poll may start a new event right after)
    try:
        result = page.wait_for_function("() => { const r = __settle.result(); return r.quiet ? r : null; }",
                                        timeout=TIMEOUT_MS, polling=50).json_value()
    except Exception:  # say which condition never held before giving up
        state = page.evaluate("() => ({answered: __settle.answered !== null, pending: __settle.pending, "
                              "indicators: __settle.indicators(), joins: __settle.joins, events: __settle.events})")
        print(f"  {click.key}: click {i} never settled: {json.dumps(state)}", flush=True)
        raise
    parts = dict(side.parts)
    after = cpu_ms(side)
    return {**result, "page_cpu": after[0] - before[0], "server_cpu": after[1] - before[1],
            "page_parts": {k: side.parts[k] - parts[k] for k in PAGE_PARTS}}


def print_profile(profile: dict, clicks: int, label: str, top: int = 14) -> None:
    """The functions the page spent most CPU in (self time, idle and the profiler left out), per click."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    times = dict.fromkeys(nodes, 0.0)
    t, previous = profile["startTime"], None
    for node_id, delta in zip(profile.get("samples", []), profile.get("timeDeltas", [])):
        t += delta
        if previous is not None:
            times[previous] += delta / 1000.0
        previous = node_id
    by_function: dict[str, float] = {}
    for node_id, ms in times.items():
        frame = nodes[node_id]["callFrame"]
        if frame["functionName"] in ("(idle)", "(program)", "(garbage collector)") or not frame["url"]:
            key = frame["functionName"] or "(anonymous)"
        else:
            key = f"{frame['functionName'] or '(anonymous)'} {frame['url'].rsplit('/', 1)[-1]}:{frame['lineNumber']}"
        by_function[key] = by_function.get(key, 0.0) + ms
    by_function.pop("(idle)", None)
    print(f"  {label}: page CPU profile, self ms per click:", flush=True)
    for key, ms in sorted(by_function.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {ms / clicks:7.1f}  {key[:140]}", flush=True)


def report(tab: str, sides: list[Side]) -> None:
    print(f"\n== {tab}  (ms: p50 / p95 (min–max)) load={os.getloadavg()[0]:.1f}", flush=True)
    for side in sides:
        xs = side.samples.get(tab, [])
        if not xs:
            continue
        settled = [x["settled"] for x in xs]
        same = sum(bool(x.get("same")) for x in xs)  # answers the same as the one before (timed with the 100 ms wait)
        answered = [x["answered"] for x in xs]
        print(f"  {side.label:14s} settled {percentile(settled, 50):6.0f} / {percentile(settled, 95):6.0f} "
              f"({min(settled):.0f}–{max(settled):.0f})   answered {percentile(answered, 50):6.0f} / "
              f"{percentile(answered, 95):6.0f}   CPU ms page {percentile([x['page_cpu'] for x in xs], 50):5.0f} "
              f"server {percentile([x['server_cpu'] for x in xs], 50):5.0f}   round trips "
              f"{sorted({x['joins'] for x in xs})}  n={len(xs)}"
              + (f", {same} answers as before" if same else ""),
              flush=True)
        print("  " + " " * 14 + " page CPU p50 by kind: " + ", ".join(
            f"{k.removesuffix('Duration').lower()} {percentile([x['page_parts'][k] for x in xs], 50):.0f}"
            for k in PAGE_PARTS), flush=True)
        answers: dict[str, list[tuple[int, float, float]]] = {}
        for x in xs:
            for e in x.get("events", []):
                answers.setdefault(side.names.get(e["fn"], str(e["fn"])), []).append((e["bytes"], e["ms"], e["at"]))
        print("  " + " " * 14 + " events per click: " + ", ".join(
            f"{name} x{len(v) / len(xs):.1f} ({percentile([b for b, _, _ in v], 50) / 1000:.1f} kB, server "
            f"{percentile([m for _, m, _ in v], 50):.0f} ms, its answer in the page at "
            f"{percentile([a for _, _, a in v], 50):.0f} ms)" for name, v in answers.items()), flush=True)
    if len(sides) == 2 and all(s.samples.get(tab) for s in sides):
        a, b = ([x["settled"] for x in s.samples[tab]] for s in sides)
        ca, cb = ([x["page_cpu"] + x["server_cpu"] for x in s.samples[tab]] for s in sides)
        print(f"  ratio {sides[1].label}/{sides[0].label}: settled p50 {percentile(b, 50) / percentile(a, 50):.2f}x, "
              f"p95 {percentile(b, 95) / percentile(a, 95):.2f}x; CPU (page + server) p50 "
              f"{percentile(cb, 50) / percentile(ca, 50):.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=EMBEDDED)
    parser.add_argument("--repeat", type=int, default=12, help="timed clicks per tab and side (after 2 untimed)")
    parser.add_argument("--tabs", default=",".join(c.key for c in CLICKS),
                        help="comma-separated tab names (or a view's label, e.g. 'Head roles')")
    parser.add_argument("--app-dir", default=str(REPO_ROOT), help="the checkout whose app.py runs (default: this one)")
    parser.add_argument("--compare", default="", help="a second checkout to alternate with")
    parser.add_argument("--label-a", default="this checkout")
    parser.add_argument("--label-b", default="compare")
    parser.add_argument("--json", default="", help="write every sample here")
    parser.add_argument("--profile", default="", help="a folder: the page's CPU profile over each view's timed clicks "
                        "(Chrome's sampling profiler) saved there as <view>.cpuprofile, its heaviest functions printed")
    args = parser.parse_args()
    tabs = [t.strip() for t in args.tabs.split(",") if t.strip()]
    from playwright.sync_api import sync_playwright

    print(f"cpus={os.cpu_count()} model={args.model} repeat={args.repeat} load={os.getloadavg()[0]:.1f}", flush=True)
    sides = [Side(args.label_a, App("--model", args.model, app_dir=Path(args.app_dir)))]
    if args.compare:
        sides.append(Side(args.label_b, App("--model", args.model, app_dir=Path(args.compare))))
    try:
        import httpx

        for side in sides:
            side.app.wait_for_model()
            side.names = {d["id"]: d.get("api_name") or "" for d in
                          httpx.get(side.app.url + "config", timeout=60).json()["dependencies"]}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            for side in sides:
                context = browser.new_context(viewport={"width": 1280, "height": 1000})
                context.add_init_script(WATCHER)
                side.page = context.new_page()
                side.page.goto(side.app.url)
                side.page.locator("#model-status").filter(has_text="Model in use").wait_for(timeout=300_000)
                side.page.wait_for_timeout(3000)
                side.cdp = context.new_cdp_session(side.page)
                side.cdp.send("Performance.enable", {"timeDomain": "threadTicks"})  # task durations in CPU time
            for click in (c for c in CLICKS if c.key in tabs):
                for side in sides:
                    open_tab(side.page, click.tab)
                    if click.prepare is not None:
                        click.prepare(side.page, side)
                    for i in range(2):  # untimed: first forward, first draw
                        click_once(side, click, 1000 + i)
                if args.profile:
                    for side in sides:
                        side.cdp.send("Profiler.enable")
                        side.cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                        side.cdp.send("Profiler.start")
                for rep in range(args.repeat):
                    for side in (sides if rep % 2 == 0 else sides[::-1]):
                        side.samples.setdefault(click.key, []).append(click_once(side, click, rep))
                report(click.key, sides)
                if args.profile:
                    for side in sides:
                        profile = side.cdp.send("Profiler.stop")["profile"]
                        name = f"{click.key}-{side.label}".replace(" ", "_").replace(":", "").replace("/", "_")
                        folder = Path(args.profile)
                        folder.mkdir(parents=True, exist_ok=True)
                        (folder / f"{name}.cpuprofile").write_text(json.dumps(profile), encoding="utf-8")
                        print_profile(profile, args.repeat, side.label)
            browser.close()
    finally:
        for side in sides:
            side.app.stop()
    if args.json:
        Path(args.json).write_text(json.dumps({s.label: s.samples for s in sides}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

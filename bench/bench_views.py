"""Click to picture: every tab's main button and its sliders / checkboxes / dropdowns, in a real Chromium.

    python bench/bench_views.py                                  # the embedded model, 6 repetitions
    python bench/bench_views.py --model bert-base-random         # a bert-base-shaped model, random weights
    python bench/bench_views.py --compare /tmp/base --label-a new --label-b base   # two checkouts, alternated
    python bench/bench_views.py --tabs "Attention,Inside BERT" --actions "show attention,look inside"  # two actions

Starts ``python app.py`` (with ``GRADIO_PROFILING=1``, Gradio's own per-event phase timings) and
drives headless Chromium (``/usr/bin/chromium``) through the tabs. Each action is triggered inside
the page with its start time taken right before (a click, a slider moved and released, a box
ticked, a dropdown option picked); the page records, through a wrapped ``fetch``, every event the
action sends (``queue/join``) and when its ``process_completed`` message arrives (and its size),
and through a MutationObserver on the action's output blocks when the last of them changed (the
figure drawn, read at the next animation frame). An action is over when no event is pending and its
outputs have been quiet for 400 ms. Per action it prints p50 / p95 of:

- **total**: click -> every output of the action drawn (the chain of follow-up events included);
- **server**: Gradio's ``total_ms`` for the action's events (``fn`` = the handler itself; ``post`` =
  pre/postprocessing, e.g. a figure turned into JSON; queue wait is the rest);
- **transfer**: each event's round trip (join sent -> result arrived) less the server's own time;
- **draw**: the last result arrived -> the last output drawn (JSON parse, Svelte, plotly);
- **KB**: bytes of the results (the ``process_completed`` messages);
- **page CPU**: the page's main-thread CPU time from the action's start to its end (Chrome's
  ``TaskDuration`` in thread time, through the DevTools protocol): the page's own work, which a busy
  machine stretches in wall time but not in CPU time, so two checkouts compare on a loaded machine.

Main buttons get a new sentence on each repetition (nothing can be answered from a cache); sliders
and boxes act on the sentence shown, as a learner does. ``--compare DIR`` starts a second server
from another checkout (e.g. ``git worktree add /tmp/base <commit>``) and alternates the two, tab by
tab (A B, then B A), so the shared machine's load falls on both; ratios are per action.
``bert-base-random`` is ``BertForMaskedLM(BertConfig())`` (12 layers, hidden 768, 12 heads) seeded
with 0, with the embedded uncased vocabulary, saved once under the temp folder (no hub).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_harness import REPO_ROOT, App, percentile

CHROMIUM = os.environ.get("BERTDEMO_CHROMIUM", "/usr/bin/chromium")
EMBEDDED = "embedded/bert-explorer-mlm"
QUIET_MS = 400
ACTION_TIMEOUT_S = 120

# --- the page-side recorder ---------------------------------------------------------------------

RECORDER = r"""
(() => {
  const B = window.__bench = {joins: [], pending: 0, observers: [], last: {}, t0: 0, background: new Set()};
  const byEvent = {}, early = {};  // messages that arrive before their join's answer is read
  function onMessage(line) {
    if (!line.startsWith('data:')) return;
    let msg; try { msg = JSON.parse(line.slice(5)); } catch (e) { return; }
    const now = performance.now();
    const rec = byEvent[msg.event_id];
    if (!rec) { (early[msg.event_id] = early[msg.event_id] || []).push([now, line, msg]); return; }
    apply(rec, now, line, msg);
  }
  function apply(rec, now, line, msg) {
    if (msg.msg === 'process_starts') rec.t_start = now;
    if (msg.msg === 'process_completed') {
      rec.t_done = now; rec.bytes = line.length; rec.success = msg.success;
      rec.duration = msg.output && msg.output.duration; B.pending -= 1;
    }
  }
  async function readStream(stream) {
    const reader = stream.getReader(); const dec = new TextDecoder(); let buf = '';
    for (;;) {
      const {done, value} = await reader.read(); if (done) break;
      buf += dec.decode(value, {stream: true});
      let i; while ((i = buf.indexOf('\n')) >= 0) { onMessage(buf.slice(0, i).trim()); buf = buf.slice(i + 1); }
    }
  }
  const origFetch = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : (input.url || String(input));
    if (url.includes('/queue/join')) {
      const rec = {t_join: performance.now(), event_id: null, t_start: null, t_done: null, bytes: 0};
      try { rec.fn_index = JSON.parse(init.body).fn_index; } catch (e) {}
      B.joins.push(rec); B.pending += 1;
      const resp = await origFetch(input, init);
      try {
        const j = await resp.clone().json(); rec.event_id = j.event_id; byEvent[j.event_id] = rec;
        (early[j.event_id] || []).forEach(([t, line, msg]) => apply(rec, t, line, msg)); delete early[j.event_id];
      }
      catch (e) { B.pending -= 1; rec.t_done = performance.now(); }
      return resp;
    }
    const resp = await origFetch(input, init);
    if (url.includes('/queue/data') && resp.body) {
      const [a, b] = resp.body.tee(); readStream(b);
      return new Response(a, {status: resp.status, statusText: resp.statusText, headers: resp.headers});
    }
    return resp;
  };
  B.watch = (selectors) => {
    B.observers.forEach(o => o.disconnect()); B.observers = []; B.last = {};
    for (const sel of selectors) {
      const el = document.querySelector(sel); if (!el) continue;
      const o = new MutationObserver(() => {
        const t = performance.now(); B.last[sel] = Math.max(B.last[sel] || 0, t);
        requestAnimationFrame(() => { B.last[sel] = Math.max(B.last[sel] || 0, performance.now()); });
      });
      o.observe(el, {childList: true, subtree: true, attributes: true, characterData: true});
      B.observers.push(o);
    }
  };
  B.start = (selectors) => {
    B.watch(selectors); B.joins = B.joins.filter(j => j.t_done === null); B.t0 = performance.now();
  };
  B.mine = () => B.joins.filter(j => j.t_join >= B.t0 && !B.background.has(j.fn_index));
  B.learnBackground = () => { B.joins.forEach(j => B.background.add(j.fn_index)); return [...B.background]; };
  B.done = () => {
    const now = performance.now();
    const mine = B.mine();
    if (mine.some(j => j.t_done === null)) return false;
    const lastMut = Math.max(0, ...Object.values(B.last));
    const lastNet = Math.max(0, ...mine.map(j => Math.max(j.t_join, j.t_done || 0)));
    return now - Math.max(lastMut, lastNet, B.t0) > %QUIET%;
  };
  B.result = (selectors) => ({t0: B.t0, joins: B.mine(),
    drawn: Object.fromEntries(selectors.map(s => [s, B.last[s] || null]))});
})();
""".replace("%QUIET%", str(QUIET_MS))


# --- sentences: a new one for every main-button repetition ------------------------------------------

SUBJECTS = ["animal", "teacher", "river", "engineer", "village", "painter", "storm", "doctor", "garden", "pilot",
            "library", "farmer"]
PLACES = ["street", "bridge", "market", "station", "forest", "harbour", "museum", "valley", "castle", "school",
          "island", "kitchen"]


def subject_place(i: int) -> tuple[str, str]:
    """The i-th (subject, place) pair: a different pair for each of the first 144 (no answer a model remembers
    from an earlier click of the same run: a repeated sentence would be timed from the model's answer cache)."""
    n = len(SUBJECTS)
    return SUBJECTS[i % n], PLACES[(i + i // n) % len(PLACES)]


def sentence(i: int, mask: bool = False, long: bool = False) -> str:
    """Sentence i (9–12 words; ``long``: about 30 tokens), a [MASK] in place of its last adjective when ``mask``."""
    s, p = subject_place(i)
    end = "[MASK]" if mask else "tired"
    text = f"The {s} did not cross the {p} because it was too {end}."
    if long:
        text += f" Later that evening the {PLACES[(i + 7) % len(PLACES)]} was quiet and everyone went home."
    return text


# --- actions --------------------------------------------------------------------------------------


@dataclass
class Action:
    """One thing a learner does, its trigger (JS run in the page, or Python with the page), what it draws."""

    name: str
    outputs: list[str]  # CSS selectors of the blocks that show its result
    trigger: Callable  # (page, repetition) -> None
    prepare: Callable | None = None  # (page, repetition) -> None, before the clock starts
    needs: str = ""  # a selector that must exist in this app (else the action is skipped)


def js_click(selector: str) -> Callable:
    return lambda page, rep: page.evaluate(f"() => {{ __bench.t0 = performance.now(); "
                                           f"document.querySelector({json.dumps(selector)}).click(); }}")


def fill(selector: str, text_of: Callable[[int], str]) -> Callable:
    return lambda page, rep: page.locator(selector).fill(text_of(rep))


def slider_to(label: str, value_of: Callable[[int], int]) -> Callable:
    """Move the range input labelled ``label`` and release it (input event, then pointerup)."""
    def trigger(page, rep):
        page.evaluate("""([label, v]) => {
            const el = [...document.querySelectorAll('input[type=range]')].find(e =>
                e.getAttribute('aria-label') === 'range slider for ' + label && e.offsetParent !== null);
            if (!el) throw new Error('no slider ' + label);
            const value = Math.min(Number(el.max), v);
            __bench.t0 = performance.now();
            el.value = String(value); el.dispatchEvent(new Event('input', {bubbles: true}));
            el.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
        }""", [label, value_of(rep)])
    return trigger


def tick(selector: str) -> Callable:
    return js_click(selector)


def radio(selector: str, value_of: Callable[[int], str]) -> Callable:
    return lambda page, rep: page.evaluate(
        "([sel, v]) => { const el = document.querySelector(sel + ` input[value=\"${v}\"]`); "
        "__bench.t0 = performance.now(); el.click(); }", [selector, value_of(rep)])


def dropdown_pick(selector: str) -> tuple[Callable, Callable]:
    """(prepare: open the list, trigger: pick the option after the current one)."""
    def prepare(page, rep):
        page.locator(f"{selector} input").click()
        page.locator(f"{selector} [role=option]").first.wait_for(timeout=10_000)

    def trigger(page, rep):
        page.evaluate("""(sel) => {
            const items = [...document.querySelectorAll(sel + ' [role=option]')];
            const pick = items[(1 + Math.floor(Math.random() * (items.length - 1))) % items.length];
            __bench.t0 = performance.now();
            pick.dispatchEvent(new MouseEvent('mousedown', {bubbles: true}));
            pick.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
            pick.dispatchEvent(new MouseEvent('click', {bubbles: true}));
        }""", selector)
    return prepare, trigger


def open_accordion(label: str) -> Callable:
    """Open the accordion whose header reads ``label`` (when it is closed)."""
    def prepare(page, rep):
        page.evaluate("""(label) => {
            const b = [...document.querySelectorAll('button.label-wrap')].find(x => x.textContent.includes(label));
            if (b && !b.classList.contains('open')) b.click();
        }""", label)
        page.wait_for_timeout(200)
    return prepare


_HEADER = "[...document.querySelectorAll('button.label-wrap')].find(x => x.textContent.includes(label))"


def close_accordion(label: str) -> Callable:
    def prepare(page, rep):
        page.evaluate(f"(label) => {{ const b = {_HEADER}; if (b && b.classList.contains('open')) b.click(); }}", label)
        page.wait_for_timeout(300)
    return prepare


def click_accordion(label: str) -> Callable:
    return lambda page, rep: page.evaluate(f"(label) => {{ const b = {_HEADER}; __bench.t0 = performance.now(); "
                                           "b.click(); }", label)


def in_view(label: str) -> Callable:
    """Scroll the element ``label`` (a ``#id``), or the slider or accordion header named ``label``, to the middle
    of the screen, as a learner sees what they move or open (figures drawn near the screen only are drawn
    there before the clock starts)."""
    def prepare(page, rep):
        page.evaluate("""(label) => {
            const el = (label.startsWith('#') && document.querySelector(label)) || [...document.querySelectorAll('input[type=range]')].find(e =>
                e.getAttribute('aria-label') === 'range slider for ' + label && e.offsetParent !== null)
              || [...document.querySelectorAll('button.label-wrap')].find(x => x.textContent.includes(label));
            el.scrollIntoView({block: 'center'});
        }""", label)
        page.wait_for_timeout(300)
    return prepare


def both(*steps: Callable) -> Callable:
    def run(page, rep):
        for step in steps:
            step(page, rep)
    return run


PLOTS = {"att": ["#att-heatmap", "#att-overview", "#att-info", "#att-rollout", "#att-token-plot"]}
INSIDE_OUT = ["#in-emb-plot", "#in-pos-plot", "#in-emb-info", "#in-order", "#in-layer-info", "#in-neuron-plot",
              "#in-steps-plot", "#in-lens-info", "#in-lens-plot", "#in-loss-info", "#in-loss-plot", "#in-anatomy"]
token_prepare, token_trigger = dropdown_pick("#att-token")

SCENARIOS: dict[str, list[Action]] = {
    "Tokenizer": [
        Action("tokenize (button)", ["#tok-chips", "#tok-stats", "#tok-table", "#tok-encoding"], js_click("#tok-run"),
               prepare=fill("#tok-text textarea", lambda r: sentence(r, long=r % 2 == 1))),
        Action("compare (button)", ["#tok-right-stats"], js_click("#tok-compare"),
               prepare=both(open_accordion("Compare two tokenizers"),
                            fill("#tok-text textarea", lambda r: sentence(r + 50)))),
    ],
    "Fill-Mask": [
        Action("predict (button)", ["#fm-filled", "#fm-plot"], js_click("#fm-run"),
               prepare=fill("#fm-text textarea", lambda r: sentence(r + 100, mask=True))),
        Action("top-k (slider) + predict", ["#fm-filled", "#fm-plot"], both(slider_to("Top-k", lambda r: 3 + r % 5),
                                                                         js_click("#fm-run"))),
    ],
    "Attention": [
        Action("show attention (button)", PLOTS["att"], js_click("#att-run"),
               prepare=fill("#att-text textarea", lambda r: sentence(r + 200, long=r % 2 == 1))),
        Action("layer (slider)", PLOTS["att"], slider_to("Layer", lambda r: 1 + r % 4)),
        Action("head (slider)", PLOTS["att"], slider_to("Head", lambda r: 2 + r % 5)),
        Action("hide [CLS]/[SEP] (checkbox)", PLOTS["att"], tick("#att-hide input")),
        Action("mean over heads (checkbox)", PLOTS["att"], tick("#att-mean input")),
        Action("token across layers (dropdown)", ["#att-token-plot"], token_trigger, prepare=token_prepare),
        Action("head ablation (button)", ["#abl-summary", "#abl-table"], js_click("#abl-run"),
               prepare=fill("#abl-text textarea", lambda r: sentence(r + 300, mask=True))),
    ],
    "Inside BERT": [
        Action("look inside (button)", INSIDE_OUT, js_click("#in-run"),  # sections 3-5 closed, as the page opens
               prepare=both(close_accordion("Every step of this layer"), close_accordion("3 · Through the layers"),
                            close_accordion("4 · The output and the loss"), close_accordion("5 · Anatomy"),
                            fill("#in-text textarea", lambda r: sentence(r + 400, mask=True, long=r % 2 == 1)),
                            in_view("#in-run"))),
        Action("layer (slider)", INSIDE_OUT, slider_to("Layer", lambda r: 1 + r % 4), prepare=in_view("Layer")),
        Action("head (slider)", INSIDE_OUT, slider_to("Head", lambda r: 2 + r % 5), prepare=in_view("Head")),
        Action("query token (slider)", INSIDE_OUT, slider_to("Query token (position)", lambda r: 2 + r % 6),
               prepare=in_view("Query token (position)")),
        Action("top-k per layer (slider)", INSIDE_OUT, slider_to("Top-k per layer", lambda r: 3 + r % 5),
               prepare=both(open_accordion("3 · Through the layers"), in_view("Top-k per layer"))),
        Action("open 2 · all steps (accordion)", INSIDE_OUT, click_accordion("Every step of this layer"),
               prepare=both(close_accordion("Every step of this layer"), in_view("Every step of this layer")),
               needs="#in-section-steps"),
        Action("open 4 · the loss (accordion)", INSIDE_OUT, click_accordion("4 · The output and the loss"),
               prepare=both(close_accordion("4 · The output and the loss"), in_view("4 · The output and the loss"))),
        Action("open 5 · anatomy (accordion)", INSIDE_OUT, click_accordion("5 · Anatomy"),
               prepare=both(close_accordion("5 · Anatomy"), in_view("5 · Anatomy"))),
    ],
    "Masking & NSP": [
        Action("mask it (button)", ["#ml-chips", "#ml-tensors"], js_click("#ml-run"),
               prepare=fill("#ml-text textarea", lambda r: sentence(r + 500))),
        Action("P(IsNext) (button)", ["#nsp-result"], js_click("#nsp-run"),
               prepare=fill("#nsp-a input, #nsp-a textarea", lambda r: sentence(r + 600))),
    ],
}


# --- running ---------------------------------------------------------------------------------------


@dataclass
class Sample:
    total: float
    server: float
    fn: float
    post: float
    transfer: float
    draw: float
    kb: float
    events: int
    page_cpu: float = 0.0


@dataclass
class Side:
    label: str
    app: App
    page: object
    cdp: object = None
    samples: dict[str, list[Sample]] = field(default_factory=dict)


def traces(app: App) -> dict[str, dict]:
    import httpx

    rows = httpx.get(app.url + "gradio_api/profiling/traces", timeout=30).json()
    return {r["event_id"]: r for r in rows if r.get("event_id")}


def run_action(side: Side, action: Action, rep: int) -> Sample | None:
    page = side.page
    if action.needs and page.locator(action.needs).count() == 0:
        return None
    if action.prepare is not None:
        action.prepare(page, rep)
    page.evaluate("(s) => __bench.start(s)", action.outputs)
    cpu_before = page_cpu_ms(side)
    action.trigger(page, rep)
    try:
        page.wait_for_function("() => __bench.done()", timeout=ACTION_TIMEOUT_S * 1000, polling=50)
    except Exception:
        print(f"  ! {side.label} {action.name}: not done:", page.evaluate("(s) => __bench.result(s)", action.outputs),
              flush=True)
        raise
    cpu = page_cpu_ms(side) - cpu_before
    got = page.evaluate("(s) => __bench.result(s)", action.outputs)
    joins = [j for j in got["joins"] if j.get("t_done")]
    if any(j.get("success") is False for j in joins):
        print(f"  ! {side.label} {action.name}: an event failed", flush=True)
    drawn = [t for t in got["drawn"].values() if t]
    last_done = max([j["t_done"] for j in joins], default=got["t0"])
    end = max(drawn + [last_done])
    phase = traces(side.app)
    server = fn = post = transfer = 0.0
    for j in joins:
        tr = phase.get(j.get("event_id"), {})
        total_ms = tr.get("total_ms", 0.0)
        server += total_ms
        fn += tr.get("fn_call_ms", 0.0)
        post += tr.get("preprocess_ms", 0.0) + tr.get("postprocess_ms", 0.0)
        transfer += max(0.0, j["t_done"] - j["t_join"] - total_ms)
    return Sample(total=end - got["t0"], server=server, fn=fn, post=post, transfer=transfer,
                  draw=max(0.0, end - last_done), kb=sum(j["bytes"] for j in joins) / 1024, events=len(joins),
                  page_cpu=cpu)


def page_cpu_ms(side: Side) -> float:
    """The page's main-thread CPU time so far (ms), or 0 without a DevTools session."""
    if side.cdp is None:
        return 0.0
    metrics = side.cdp.send("Performance.getMetrics")["metrics"]
    return 1000.0 * next(m["value"] for m in metrics if m["name"] == "TaskDuration")


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).locator("visible=true").first.click()
    page.wait_for_timeout(300)


def warm(side: Side, tab: str) -> None:
    """One untimed pass over a tab's actions (imports, first plotly draw, the model's first forward)."""
    open_tab(side.page, tab)
    for action in SCENARIOS[tab]:
        run_action(side, action, 99)


def build_random_base(folder: Path) -> Path:
    """bert-base-shaped BertForMaskedLM, random weights (seed 0), the embedded uncased vocabulary."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from bertdemo.models import embedded

    torch.manual_seed(0)
    BertForMaskedLM(BertConfig()).save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir())).save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=EMBEDDED,
                        help=f"model name or folder, or bert-base-random (default {EMBEDDED})")
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--tabs", default=",".join(SCENARIOS), help="comma-separated tab names")
    parser.add_argument("--actions", default="",
                        help="comma-separated words: only the actions whose name holds one of them (default: all)")
    parser.add_argument("--app-dir", default=str(REPO_ROOT), help="the checkout whose app.py runs (default: this one)")
    parser.add_argument("--compare", default="", help="a second checkout to alternate with (its app.py)")
    parser.add_argument("--label-a", default="this checkout")
    parser.add_argument("--label-b", default="compare")
    parser.add_argument("--json", default="", help="write every sample here")
    args = parser.parse_args()
    model = args.model
    if model == "bert-base-random":
        model = str(build_random_base(Path(tempfile.gettempdir()) / "bertdemo-bench-bert-base-random"))
    tabs = [t.strip() for t in args.tabs.split(",") if t.strip()]
    wanted = [w.strip() for w in args.actions.split(",") if w.strip()]
    env = {"GRADIO_PROFILING": "1"}
    import torch
    from playwright.sync_api import sync_playwright

    print(f"cpus={os.cpu_count()} torch={torch.__version__} threads={torch.get_num_threads()} model={args.model} "
          f"precision=fp32 repeat={args.repeat} load={os.getloadavg()[0]:.1f}", flush=True)
    apps = [(args.label_a, App("--model", model, env=env, app_dir=Path(args.app_dir)))]
    if args.compare:
        apps.append((args.label_b, App("--model", model, env=env, app_dir=Path(args.compare))))
    try:
        for _, app in apps:
            app.wait_for_model()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            sides = []
            for label, app in apps:
                context = browser.new_context(viewport={"width": 1280, "height": 1000})
                context.add_init_script(RECORDER)
                page = context.new_page()
                page.goto(app.url)
                page.locator("#model-status").filter(has_text="Model in use").wait_for(timeout=300_000)
                page.wait_for_timeout(4000)  # the page's own first answers (examples, slider ranges)...
                page.evaluate("() => { __bench.joins = []; }")
                page.wait_for_timeout(3000)  # ...then what it sends by itself again and again (timers)
                print(f"{label}: background events {page.evaluate('() => __bench.learnBackground()')}", flush=True)
                cdp = context.new_cdp_session(page)
                cdp.send("Performance.enable", {"timeDomain": "threadTicks"})  # task durations in CPU time
                sides.append(Side(label, app, page, cdp))
            for tab in tabs:
                for side in sides:
                    warm(side, tab)
                for rep in range(args.repeat):
                    order = sides if rep % 2 == 0 else sides[::-1]
                    for side in order:
                        open_tab(side.page, tab)
                        for action in SCENARIOS[tab]:
                            if wanted and not any(w in action.name for w in wanted):
                                continue
                            sample = run_action(side, action, rep)
                            if sample is not None:
                                side.samples.setdefault(f"{tab}: {action.name}", []).append(sample)
                report_tab(tab, sides)
            browser.close()
    finally:
        for _, app in apps:
            app.stop()
    if args.json:
        Path(args.json).write_text(json.dumps({s.label: {k: [vars(x) for x in v] for k, v in s.samples.items()}
                                               for s in sides}, indent=1), encoding="utf-8")


def p(values: list[float], q: float) -> float:
    return percentile(values, q)


def report_tab(tab: str, sides: list[Side]) -> None:
    print(f"\n== {tab}  (ms; p50 / p95 of total, p50 of the parts; KB p50) load={os.getloadavg()[0]:.1f}", flush=True)
    names = [n for n in sides[0].samples if n.startswith(tab + ": ")]
    for name in names:
        for side in sides:
            xs = side.samples.get(name, [])
            if not xs:
                continue
            col = lambda k, xs=xs: [getattr(x, k) for x in xs]
            print(f"{name[len(tab) + 2:]:32s} {side.label:14s} total {p(col('total'), 50):7.0f} / "
                  f"{p(col('total'), 95):7.0f}  server {p(col('server'), 50):6.0f} (fn {p(col('fn'), 50):6.0f}, "
                  f"post {p(col('post'), 50):5.0f})  transfer {p(col('transfer'), 50):5.0f}  draw "
                  f"{p(col('draw'), 50):6.0f}  page CPU {p(col('page_cpu'), 50):5.0f}  {p(col('kb'), 50):7.1f} KB  "
                  f"events {xs[0].events}", flush=True)
        if len(sides) == 2 and sides[1].samples.get(name) and sides[0].samples.get(name):
            a = p([x.total for x in sides[0].samples[name]], 50)
            b = p([x.total for x in sides[1].samples[name]], 50)
            ca = p([x.page_cpu for x in sides[0].samples[name]], 50)
            cb = p([x.page_cpu for x in sides[1].samples[name]], 50)
            print(f"{'':32s} ratio {sides[1].label}/{sides[0].label} (p50 total): {b / max(a, 1e-9):.2f}x, "
                  f"(p50 page CPU): {cb / max(ca, 1e-9):.2f}x", flush=True)


if __name__ == "__main__":
    main()

"""End-to-end fixtures: a tiny masked-LM on disk, the real app launched as a subprocess, a browser.

The app is started once per session with ``python app.py --offline --model <tiny dir>``
and driven over HTTP (``gradio_client``) and through headless Chromium (Playwright).
``launch_app`` is reusable by other e2e tests (e.g. the pretraining tab).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import free_port, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STARTUP_TIMEOUT_S = 90.0


def _read_log(log_path: Path, limit: int = 6000) -> str:
    try:
        return log_path.read_text(errors="replace")[-limit:]
    except OSError:
        return "<no log>"


def launch_app(
    args: list[str] | None = None,
    timeout_s: float = STARTUP_TIMEOUT_S,
    env: dict[str, str] | None = None,
) -> tuple[str, subprocess.Popen]:
    """Start ``python app.py --port <free> *args`` from the repo root; wait until it serves.

    Returns ``(url, process)``; the process's combined output goes to a temp log file whose
    path is ``process.log_path``. Fails (with the server log) if it dies or never answers.
    Stop it with :func:`stop_app`.
    """
    port = free_port()
    cmd = [sys.executable, "app.py", "--port", str(port), *(args or [])]
    full_env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    full_env.update(env or {})
    log_fd, log_name = tempfile.mkstemp(prefix="bertdemo-e2e-", suffix=".log")
    log_path = Path(log_name)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=full_env, stdout=log_fd, stderr=subprocess.STDOUT)
    os.close(log_fd)
    proc.log_path = log_path  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}/"

    def answers() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"app.py exited with code {proc.returncode} before serving:\n{_read_log(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    try:
        wait_until(answers, timeout=timeout_s, interval=0.5, what=f"app.py to answer on {url}",
                   message=lambda: _read_log(log_path))
    except AssertionError:
        stop_app(proc)
        raise
    return url, proc


def stop_app(proc: subprocess.Popen) -> None:
    """Terminate a process started by :func:`launch_app` (kill it if it lingers)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    log_path = getattr(proc, "log_path", None)
    if log_path is not None:
        Path(log_path).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def app_model_dir(tmp_path_factory) -> str:
    """The launched app's default model: a tiny randomly initialised BertForMaskedLM + the embedded uncased tokenizer, saved to disk."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from bertdemo.models import embedded

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    model = BertForMaskedLM(config)
    out = tmp_path_factory.mktemp("tiny-mlm")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(embedded.tokenizer_dir())).save_pretrained(out)
    return str(out)


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    """Where the launched app's pretraining runs write their checkpoints."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def app_server(app_model_dir, runs_dir):
    """The real app (offline, tiny model as default, its read-only views also MCP tools: test_mcp.py):
    ``(url, process)`` for the whole session."""
    # BERTDEMO_E2E_MODEL swaps the tiny random model for a real one (e.g. the embedded masked-LM)
    # when the browser tests are run to regenerate the README screenshots.
    model = os.environ.get("BERTDEMO_E2E_MODEL") or app_model_dir
    url, proc = launch_app(["--offline", "--model", model, "--runs-dir", str(runs_dir), "--mcp"])
    try:
        yield url, proc
    finally:
        stop_app(proc)


@pytest.fixture(scope="session")
def public_server(app_model_dir, tmp_path_factory):
    """One public app for the session, as on a ZeroGPU Space (SPACES_ZERO_GPU=true) behind its proxy (a
    visitor is the last X-Forwarded-For entry: see :func:`tests.helpers.visitor_client`), uploads capped at 1 MB:
    ``url``, ``runs`` (its runs folder), ``temp`` (gradio's upload folder), ``proc``."""
    from types import SimpleNamespace

    runs, temp = tmp_path_factory.mktemp("public-runs"), tmp_path_factory.mktemp("public-gradio-temp")
    url, proc = launch_app(["--public", "--offline", "--model", app_model_dir, "--runs-dir", str(runs),
                            "--max-upload-mb", "1", "--trusted-proxies", "1"],
                           env={"BERTDEMO_ADMIN_TOKEN": "", "SPACES_ZERO_GPU": "true", "GRADIO_TEMP_DIR": str(temp)})
    try:
        yield SimpleNamespace(url=url, runs=runs, temp=temp, proc=proc)
    finally:
        stop_app(proc)


@pytest.fixture(scope="session")
def public_app(public_server) -> str:
    return public_server.url


@pytest.fixture(scope="session")
def app_url(app_server) -> str:
    """Base URL of the running app, e.g. ``http://127.0.0.1:PORT/``."""
    return app_server[0]


@pytest.fixture(scope="session")
def pretrained_run(app_url) -> str:
    """The id of a tiny pretraining run (:data:`tests.e2e.api.PRETRAIN`) trained to its end on the session's app:
    the checkpoint the fine-tuning tests start from, trained once per worker, not once per test file."""
    from gradio_client import Client

    from tests.e2e.api import PRETRAIN, wait_status

    client = Client(app_url, verbose=False)
    client.predict(PRETRAIN, api_name="/start_run")
    done = wait_status(client, lambda s: s.get("kind") == "pretrain" and s.get("status") == "finished", 1200.0)
    return done["run_id"]


@pytest.fixture(scope="session")
def app_log(app_server):
    """A callable returning the tail of the running server's log (for failure messages)."""
    proc = app_server[1]
    return lambda: _read_log(Path(proc.log_path))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser or API test's report carries the tail of the log of each app it used (the session's app,
    the public one): what the server said while the page waited is in CI's output, not lost with the temp file."""
    report = yield
    if report.failed and call.when == "call":
        for name in ("app_server", "public_server"):
            server = item.funcargs.get(name)
            proc = server[1] if isinstance(server, tuple) else getattr(server, "proc", None)
            if proc is not None and getattr(proc, "log_path", None):
                report.sections.append((f"{name} log (tail)", _read_log(Path(proc.log_path), limit=4000)))
        page = item.funcargs.get("browser_page")
        if page is not None:
            report.sections.append(("the page when the test failed", _page_state(page)))
        if getattr(item, "page_log", None):
            report.sections.append(("the page's last requests and script errors", "\n".join(item.page_log())))
    return report


PAGE_STATE_JS = """() => ({url: location.href, toasts: [...document.querySelectorAll('.toast-body')].map(t => t.innerText),
  pending: [...document.querySelectorAll('.pending')].filter(e => e.offsetParent !== null)
    .map(e => e.id || e.className.slice(0, 40)),
  statuses: [...document.querySelectorAll("[data-testid='status-tracker']:not(.hide)")]
    .filter(e => e.offsetParent !== null).map(e => (e.closest('[id]') || {}).id + ': ' + e.innerText.slice(0, 60))})"""


def _page_state(page) -> str:
    """What the page showed of its requests: its address, its toasts, the components still waiting for an answer."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        return repr(page.evaluate(PAGE_STATE_JS))
    except PlaywrightError as err:  # a closed or crashed page: say so, the report is still written
        return f"<the page could not be read: {err}>"


# --- browser ---------------------------------------------------------------------------


PAGE_LOG_LINES = 100
# Kept in the page itself (no round trip to the test per event): each post to the app (the queue's join, a direct
# call: the start of its data, which holds the function's index and the text sent) and its HTTP status, each join's
# event id, each message of the queue's event stream but heartbeats and progress ticks (the page's fetch of the stream
# is teed: the framework reads its own copy), each script error and unhandled rejection; seconds since the page opened.
# window.__bdCompleted lists the event id of every answer the stream has brought (all of them, not only the last).
# A page that navigates carries its lines over (the tab's sessionStorage, written as each document is left), after a
# line naming the new address: a failure read after a test's second page still shows what its first one did
PAGE_LOG_JS = """(() => {
  let before = [];
  try { before = JSON.parse(sessionStorage.getItem('__bdLog') || '[]'); } catch (e) {}  // no storage: about:blank
  const log = window.__bdLog = before.length ? [...before, '--- ' + location.href] : [], t0 = performance.now();
  const add = text => {
    log.push(((performance.now() - t0) / 1000).toFixed(2).padStart(7) + 's ' + text);
    while (log.length > __LINES__) log.shift();
  };
  window.addEventListener('pagehide', () => {
    try { sessionStorage.setItem('__bdLog', JSON.stringify(log)); } catch (e) {}
  });
  window.addEventListener('error', e => add('script error: ' + e.message));
  window.addEventListener('unhandledrejection', e => add('unhandled rejection: ' + String(e.reason).slice(0, 200)));
  // where a press landed: a click, or Enter/Space, and the element it reached (a press that sent nothing reads
  // differently when it never reached the button from when the button took it and the page sent nothing)
  const named = el => el && el.nodeType === 1 ? (el.closest('[id]') || el).id || el.tagName.toLowerCase() : String(el);
  const pressed = e => {
    if (e.type === 'keydown' && e.key !== 'Enter' && e.key !== ' ') return;
    add(`${e.type}${e.key ? ' ' + e.key : ''} on ${named(e.target)} (focus: ${named(document.activeElement)})`);
  };
  document.addEventListener('click', pressed, true);
  document.addEventListener('keydown', pressed, true);
  const completed = window.__bdCompleted = [];  // every answer's event id, for a test that waits on one
  const note = m => {
    if (m.msg === 'process_completed') completed.push(m.event_id);
    if (m.msg === 'heartbeat' || m.msg === 'progress') return;
    const out = m.output || {}, error = out.error ? ' error=' + String(out.error).slice(0, 160) : '';
    add(`  ${m.msg} event ${m.event_id || ''}${'success' in m ? ' success=' + m.success : ''}${error}`);
  };
  const real = window.fetch;
  window.fetch = async function (...args) {
    const target = args[0], url = String((target && target.url) || target), init = args[1] || {};
    const posted = url.includes('/queue/join') || url.includes('/run/predict');
    if (posted) add('POST ' + new URL(url, location.href).pathname + ' ' + String(init.body || '').slice(0, 240));
    const res = await real.apply(this, args);
    if (posted) add('  ' + res.status + ' ' + new URL(url, location.href).pathname);
    if (url.includes('/queue/join')) res.clone().json().then(j => add('  joined as event ' + j.event_id)).catch(() => {});
    if (!url.includes('/queue/data') || !res.body) return res;
    const [mine, theirs] = res.body.tee();
    (async () => {
      const reader = mine.getReader(), decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, {stream: true});
        let end;
        while ((end = buffer.indexOf('\\n\\n')) >= 0) {
          const chunk = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          for (const line of chunk.split('\\n')) {
            if (line.startsWith('data:')) { try { note(JSON.parse(line.slice(5))); } catch (e) {} }
          }
        }
      }
    })().catch(() => {});
    return new Response(theirs, {status: res.status, statusText: res.statusText, headers: res.headers});
  };
})();""".replace("__LINES__", str(PAGE_LOG_LINES))


def log_page(page) -> Callable[[], list[str]]:
    """Keep, in ``page`` itself, the last lines of what it did that a failed test's report needs (:data:`PAGE_LOG_JS`);
    returns the reader of those lines (none when the page cannot be read). A press that sent nothing, or sent the box's
    old text, reads differently there from an answer that came and was not drawn."""
    from playwright.sync_api import Error as PlaywrightError

    page.add_init_script(PAGE_LOG_JS)

    def read() -> list[str]:
        try:
            return list(page.evaluate("() => window.__bdLog || []"))
        except PlaywrightError as err:  # a closed or crashed page: say so, the report is still written
            return [f"<the page could not be read: {err}>"]

    return read


def chromium_path() -> str:
    """The system Chromium, or skip (fail under CI) when it is missing."""
    path = os.environ.get("BERTDEMO_CHROMIUM", DEFAULT_CHROMIUM)
    if not Path(path).is_file():
        reason = f"Chromium not found at {path} (set BERTDEMO_CHROMIUM to its path)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; browser tests are required when CI is set")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def _browser():
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - depends on the environment
        if os.environ.get("CI"):
            pytest.fail("playwright is not installed")
        pytest.skip("playwright is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def _page_context(_browser):
    """The worker's one browser context (1280x1000) for ``browser_page``: its HTTP cache keeps the app's scripts
    compiled from one test to the next (a page opens on ~3.4 CPU-s, not ~4.4 in a new context each time)."""
    context = _browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        yield context
    finally:
        context.close()


# all a visitor's browser keeps for a site, less the HTTP cache (the scripts): a test's page leaves none of it behind
SITE_DATA = "cookies,local_storage,session_storage,indexeddb,cache_storage,service_workers,file_systems,websql"


@pytest.fixture
def browser_page(_page_context, app_url, request):
    """A fresh page (1280x1000) in the system Chromium, as a new visitor's: no cookie and no stored data of any site
    it or an earlier test opened (cleared when each test ends); the app URL is at hand as ``app_url``. What the page
    sent to the app and its script errors are kept for a failed test's report (:func:`log_page`)."""
    page = _page_context.new_page()
    request.node.page_log = log_page(page)
    origins = {urllib.parse.urlsplit(app_url)._replace(path="", query="", fragment="").geturl()}
    page.on("framenavigated", lambda frame: origins.add(
        urllib.parse.urlsplit(frame.url)._replace(path="", query="", fragment="").geturl()))
    try:
        yield page
    finally:
        try:
            cdp = _page_context.new_cdp_session(page)
            for origin in sorted(o for o in origins if o.startswith("http")):
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": SITE_DATA})
        finally:
            page.close()
            _page_context.clear_cookies()


@pytest.fixture
def open_page(_browser):
    """``open_page(width=1280, height=1000)``: one more page, in a browser context of its own (another phone,
    the teacher's second screen), closed when the test ends: a page left open keeps polling the app and drawing
    for the rest of the session, on the machine every later test shares."""
    contexts = []

    def opened(width: int = 1280, height: int = 1000, **options):
        contexts.append(_browser.new_context(viewport={"width": width, "height": height}, **options))
        return contexts[-1].new_page()

    try:
        yield opened
    finally:
        for context in contexts:
            context.close()


def screenshot_dir() -> Path | None:
    """Where screenshots go: $BERTDEMO_SCREENSHOTS (``tests/artifacts`` is gitignored for them); None when it is
    unset: the suite then takes none (the 50 full-page PNGs cost the browser about 20 CPU-s, and nothing asserts
    on them)."""
    if not os.environ.get("BERTDEMO_SCREENSHOTS"):
        return None
    folder = Path(os.environ["BERTDEMO_SCREENSHOTS"])
    if not folder.is_absolute():
        folder = REPO_ROOT / folder
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page, name: str) -> Path | None:
    """Save a full-page PNG named ``name`` (``.png`` added if missing) into $BERTDEMO_SCREENSHOTS; returns its path,
    or None when that is unset (no screenshot taken)."""
    folder = screenshot_dir()
    if folder is None:
        return None
    path = folder / (name if name.endswith(".png") else name + ".png")
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture(scope="module")
def client(app_url):
    """A gradio_client session on the launched app (one per test module)."""
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.fixture(scope="module")
def model(app_model_dir) -> str:
    """The tiny masked-LM's folder, as a model name for the endpoints."""
    return str(app_model_dir)

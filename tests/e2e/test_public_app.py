"""The app in public mode (``--public``) on a simulated ZeroGPU Space, driven through gradio_client and
Chromium: server paths are refused with one message and never shown, only the visitor who started a run
can stop it or move it to a GPU, capped settings and too-long runs are refused, bad uploads each get
their own message, uploads are not served back, /attention leaves no pile of PNGs."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from gradio_client.exceptions import AppError

from bertdemo.models.policy import REFUSED
from tests.e2e.conftest import REPO_ROOT
from tests.helpers import visitor_client, wait_until

from .api import poll, wait_ended

RUN = dict(preset="custom", num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
           corpus="wiki", seq_len=32, batch_size=8, steps=3000, lr=2e-3, warmup_steps=5, eval_every=50,
           checkpoint_every=0, seed=1)


def test_page_says_public_mode(public_app):
    with urllib.request.urlopen(public_app + "config", timeout=10) as resp:
        assert "Public mode" in resp.read().decode()


def test_server_paths_refused_with_one_message(public_app):
    client = visitor_client(public_app, "198.51.100.10")
    messages = set()
    for path in ("/etc", "/no/such/folder", str(REPO_ROOT), "./bertdemo/assets", "../main/bertdemo"):
        with pytest.raises(AppError) as err:
            client.predict("Hello there.", "", path, api_name="/tokenize")
        messages.add(str(err.value))
    assert len(messages) == 1 and REFUSED in messages.pop()


def test_only_the_starter_controls_the_run_and_caps_hold(public_app):
    starter, other = visitor_client(public_app, "198.51.100.11"), visitor_client(public_app, "198.51.100.12")
    with pytest.raises(AppError, match="parameters"):
        starter.predict({"preset": "bert-small"}, "tok-a", api_name="/start_run")
    with pytest.raises(AppError, match="cache_dir cannot be set"):
        starter.predict({**RUN, "cache_dir": "/tmp"}, "tok-a", api_name="/start_run")
    with pytest.raises(AppError, match="owner_token"):
        starter.predict(RUN, api_name="/start_run")

    starter.predict(RUN, "tok-a", api_name="/start_run")
    try:
        for token in ("tok-b", ""):
            with pytest.raises(AppError, match="belongs to another visitor"):
                other.predict(token, api_name="/stop_run")
            with pytest.raises(AppError, match="belongs to another visitor"):
                other.predict(token, api_name="/pause_run")
        assert other.predict(api_name="/run_status")["status"] in {"preparing", "running"}  # watching is fine
    finally:
        starter.predict("tok-a", api_name="/stop_run")
    snap = wait_ended(starter, timeout=60)
    assert snap["status"] == "stopped" and "/" not in snap["corpus"]


def test_run_status_and_model_names_show_no_server_path(public_server):
    client = visitor_client(public_server.url, "198.51.100.13")
    client.predict({**RUN, "steps": 40, "eval_every": 20}, "tok-n", api_name="/start_run")
    snap = wait_ended(client, timeout=120)
    assert snap["status"] == "finished", snap
    assert str(public_server.runs) not in json.dumps(snap)
    assert snap["last_checkpoint"] == f"run:{snap['run_id']}/checkpoint"
    _, stats, _ = client.predict("Hello there.", "", snap["last_checkpoint"], api_name="/tokenize")  # loads by name
    assert str(public_server.runs) not in json.dumps(stats)


def test_the_operators_model_folder_is_named_without_its_path(public_server, app_model_dir):
    """The server was started with --model <a local folder>: the page and the API call it served:<name>."""
    served = "served:" + Path(app_model_dir).name
    with urllib.request.urlopen(f"{public_server.url}config", timeout=30) as resp:
        page = resp.read().decode()
    assert served in page and app_model_dir not in page
    client = visitor_client(public_server.url, "198.51.100.25")
    answer = json.dumps(client.predict("Hello there.", "", served, api_name="/tokenize"))
    assert served in answer and app_model_dir not in answer


def test_refused_model_names_say_what_to_change_and_reveal_nothing(public_app):
    client = visitor_client(public_app, "198.51.100.14")

    def message(name: str) -> str:
        with pytest.raises(AppError) as err:
            client.predict("Hello there.", "", name, api_name="/tokenize")
        return str(err.value)

    assert "There is no run" in message("run:../../etc/checkpoint")
    assert "characters long" in message("a" * 300)
    # "bertdemo" is a folder in the server's working folder; "bertdemo-nope" is nothing: the same answer
    assert message("bertdemo").replace("bertdemo", "X") == message("bertdemo-nope").replace("bertdemo-nope", "X")
    assert message("bertdemo/assets").replace("bertdemo/assets", "X") == message("bertdemo/nope").replace(
        "bertdemo/nope", "X")
    assert "not in the local cache" in message("bertdemo") and str(REPO_ROOT) not in message("bertdemo")


def test_only_the_runs_starter_may_resume_or_delete_it(public_server):
    client = visitor_client(public_server.url, "198.51.100.15")
    snap = client.predict(api_name="/run_status")  # the ended run started with "tok-n"
    run_id = snap["run_id"]
    assert snap["status"] in {"stopped", "finished"}
    for token in ("tok-b", "tok-a", ""):
        with pytest.raises(AppError, match="Only the browser that started this run"):
            client.predict(run_id, token, api_name="/delete_run")
    for token in ("tok-b", "tok-a"):  # resuming would train into (and overwrite) the starter's checkpoint
        with pytest.raises(AppError, match="Only the browser that started this run"):
            client.predict({**RUN, "resume_from": f"run:{run_id}/checkpoint"}, token, api_name="/start_run")
    assert list((public_server.runs / run_id / "steps").glob("step-*/config.json"))  # the starter's checkpoint stays
    assert "tok-n" not in (public_server.runs / run_id / "owner.sha256").read_text()  # a digest, not the token
    # a run made after the page was built answers the order probe through the API (loaded by its run: name)
    probe = client.predict(run_id, "The cat sat on the [MASK] .", api_name="/order_probe")
    assert run_id in probe and str(public_server.runs) not in probe
    assert client.predict(run_id, "tok-n", api_name="/delete_run") == f"Deleted run {run_id}."
    assert not (public_server.runs / run_id).exists()


def test_zero_gpu_space_trains_on_cpu_and_only_the_owner_may_burst(public_server):
    with urllib.request.urlopen(public_server.url + "config", timeout=10) as resp:
        config = json.loads(resp.read())
    burst = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "pt-burst"]
    assert burst and burst[0]["props"].get("visible") is not False  # the GPU burst button is offered
    starter, other = visitor_client(public_server.url, "198.51.100.16"), visitor_client(public_server.url, "198.51.100.17")
    starter.predict({**RUN, "steps": 3000}, "tok-z", api_name="/start_run")
    try:
        snaps = [{}]

        def running() -> bool:
            snaps[0] = poll(starter, api_name="/run_status")
            return snaps[0]["status"] == "running"

        wait_until(running, timeout=60, interval=0.3, message=lambda: str(snaps[0]))
        snap = snaps[0]
        assert snap["device"] == "cpu"  # torch.cuda.is_available() is not trusted on ZeroGPU
        with pytest.raises(AppError, match="belongs to another visitor"):
            other.predict(50, "tok-b", api_name="/gpu_burst")
        assert starter.predict(api_name="/run_status")["status"] == "running"  # the refused burst touched nothing
    finally:
        starter.predict("tok-z", api_name="/stop_run")
    wait_ended(starter, timeout=60)


def test_a_run_longer_than_the_time_cap_is_refused_before_it_starts(public_app):
    client = visitor_client(public_app, "198.51.100.18")
    long_run = {"preset": "bert-mini", "steps": 5000, "batch_size": 64, "seq_len": 128,
                "time_budget_s": 0}  # Steps alone end it (a time budget would end it in time)
    with pytest.raises(AppError, match=r"would take about .* Lower Steps to about"):
        client.predict(long_run, "tok-t", api_name="/start_run")
    assert client.predict(api_name="/run_status")["status"] in {"stopped", "finished"}  # no new run


def test_attention_calls_do_not_pile_up_pngs(public_server):
    client = visitor_client(public_server.url, "198.51.100.19")

    def pngs() -> list[Path]:
        return sorted(public_server.temp.rglob("*.png"))

    client.predict("The cat sat on the mat.", "", "", 0, 0, False, False, True, "all", api_name="/attention")
    after_one = pngs()
    for text in ("A dog ran in the park.", "Birds sing at dawn.", "Rain fell all night long."):
        _, overview, _ = client.predict(text, "", "", 1, 1, False, False, True, "all", api_name="/attention")
        assert Path(overview).is_file()  # the client still gets the overview image
    assert len(pngs()) == len(after_one)


def test_oversize_upload_is_refused(public_server):
    body = b"x" * (1024 * 1024 + 10)
    boundary = "bertdemo-boundary"
    data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\n").encode() + body + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(public_server.url + "gradio_api/upload", data=data, method="POST",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=30)
    assert err.value.code == 413
    assert not [p for p in public_server.temp.rglob("big.txt")]


def test_bad_uploads_get_their_own_message_and_a_good_one_is_not_served_back(public_server, _browser, tmp_path):
    from playwright.sync_api import expect

    from bertdemo.models.embedded import wiki_summaries

    from .pages import RUN_TIMEOUT_MS, click_until, open_app, open_tab, set_open

    cases = [("binary.txt", b"\x00\x01\x02 some bytes \x00", "looks like a binary file"),
             ("latin1.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e ".encode("latin-1") * 20, "is not UTF-8 text"),
             ("empty.txt", b"   \n", "is empty"),
             ("notext.jsonl", b'{"body": "no text field here"}\n', 'has no "text" field')]
    context = _browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        open_app(page, public_server.url)
        open_tab(page, "Pretrain")
        # the tab's parts draw one after another (the estimate above the corpus choice grows): a click made while the
        # page moves lands elsewhere, so it is made again until the choice took
        mine = page.get_by_label("My file (.txt or .jsonl, upload below)")
        click_until(mine.click, lambda ms: expect(mine).to_be_checked(timeout=ms))
        set_open(page.locator("button.label-wrap", has_text="Training settings"))
        page.get_by_label("Steps", exact=True).fill("100")
        upload = page.locator("#pt-upload input[type=file]")
        for name, data, words in cases:
            path = tmp_path / name
            path.write_bytes(data)
            upload.set_input_files(str(path))
            expect(page.locator(f"#pt-upload a[href$='/{name}']")).to_be_visible(timeout=RUN_TIMEOUT_MS)
            page.click("#pt-start")
            toast = page.locator(".toast-body").filter(has_text=words)
            expect(toast).to_be_visible(timeout=RUN_TIMEOUT_MS)
            expect(toast).to_contain_text(name)
            assert str(public_server.temp) not in toast.inner_text()  # the file's name, never its folder
            page.locator("#pt-upload button[aria-label='Clear']").first.click()

        good = tmp_path / "good.txt"
        good.write_text("\n\n".join(wiki_summaries()[:400]), encoding="utf-8")
        upload.set_input_files(str(good))
        link = page.locator("#pt-upload a[href$='/good.txt']")
        expect(link).to_be_visible(timeout=RUN_TIMEOUT_MS)
        served = link.get_attribute("href")
        page.click("#pt-start")
        status = page.locator("#pt-status")
        try:
            expect(status).to_contain_text("good.txt", timeout=RUN_TIMEOUT_MS)
        except AssertionError as exc:
            raise AssertionError(page.locator(".toast-body").all_inner_texts()) from exc
        url = served if served.startswith("http") else public_server.url.rstrip("/") + served
        with pytest.raises(urllib.error.HTTPError):  # moved out of the served folder when the run started
            urllib.request.urlopen(url, timeout=10)
        page.click("#pt-stop")
        expect(status).to_contain_text("STOPPED", timeout=120_000)
    finally:
        context.close()
    kept = list((public_server.runs / ".uploads").rglob("good.txt"))
    assert len(kept) == 1  # the run's private copy, kept while its checkpoint refers to it

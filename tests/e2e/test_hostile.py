"""A hostile visitor on a public server, driven by the running app's own API description: for every named
endpoint and every parameter, an oversized text, a huge number, a long list and a wrong type are each
answered with a short, clear message within seconds; a body past the door's cap is refused unread; the
server's memory stays bounded and it answers an ordinary request afterwards. A new endpoint is covered
without editing this test. Then the costly legal requests: heavy Fill-Mask work stops when its client
leaves or cancels, past its GFLOP budget it is refused before it runs, and one visitor's uploads stop at
the hourly budget; every endpoint's heaviest legal request, from several visitors at once, is answered or
refused with a sentence, and the server keeps serving."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.e2e.conftest import _read_log
from tests.helpers import wait_until

from .api import ANSWER_TIMEOUT_S, QueueCall, app_config, fn_index, post_json, upload, upload_request

HOSTILE = {
    "oversized text": "word " * 60_000,  # 300,000 characters: past every text limit, under the door's body cap
    "huge number": 1e18,
    "long list": list(range(20_000)),
    "wrong type": {"nested": {"deeper": ["x"] * 50}},
}
REFUSED_WHATEVER_THE_TYPE = ("oversized text", "long list")  # past every limit
# endpoints that act on the server's run: only values that must be refused are sent (nothing may start)
ACTS = {"start_run", "pause_run", "resume_run", "stop_run", "set_probe", "gpu_burst", "delete_run", "start_finetune",
        "delete_finetune"}
ACTS |= {"start_table5_cell"}  # Table 5 in miniature: a live cell starts a fine-tuning run
ACTS |= {"cancel_queued"}  # takes the caller's queued run out of the run queue
MEMORY_BOUND_MB = 1_500  # the server's growth over the whole barrage (resident memory)


def call(base: str, api_name: str, data: list, visitor: str | None = None,
         timeout: float = ANSWER_TIMEOUT_S) -> tuple[str, str]:
    """(event, message) of one call through gradio's REST API: event is "complete", "error" or "http <code>"
    (``visitor``: the address a proxy would name)."""
    status, body = post_json(f"{base}gradio_api/call/{api_name}", json.dumps({"data": data}).encode(), visitor)
    if status != 200:
        return f"http {status}", body
    event_id = json.loads(body)["event_id"]
    headers = {"X-Forwarded-For": visitor} if visitor else {}
    answer = urllib.request.Request(f"{base}gradio_api/call/{api_name}/{event_id}", headers=headers)
    with urllib.request.urlopen(answer, timeout=timeout) as resp:
        stream = resp.read().decode()
    events = [line[len("event: "):] for line in stream.splitlines() if line.startswith("event: ")]
    data_lines = [line[len("data: "):] for line in stream.splitlines() if line.startswith("data: ")]
    final = "error" if "error" in events else events[-1] if events else "none"
    return final, data_lines[-1] if data_lines else ""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def endpoints(base: str) -> dict[str, list[dict]]:
    with urllib.request.urlopen(f"{base}gradio_api/info", timeout=30) as resp:
        info = json.loads(resp.read())
    return {name.lstrip("/"): ep["parameters"] for name, ep in info["named_endpoints"].items()}


def ordinary(parameter: dict):
    """A harmless value for a parameter: its default, else something of its type."""
    if parameter.get("parameter_has_default"):
        return parameter.get("parameter_default")
    kind = parameter.get("python_type", {}).get("type", "")
    return 0 if kind in ("int", "float") else False if kind == "bool" else {} if kind.startswith("dict") else ""


def test_every_parameter_of_every_endpoint_refuses_hostile_values(public_server):
    base, pid = public_server.url, public_server.proc.pid
    found = endpoints(base)
    assert {"fill_mask", "mask_sample", "start_run", "set_probe", "head_ablation"} <= set(found)
    assert {"word_in_context", "corpus_neighbours", "attribution"} <= set(found)  # bounded in bertdemo.limits
    before = rss_mb(pid)
    slowest, tried = 0.0, 0
    for api_name, parameters in found.items():
        for index, parameter in enumerate(parameters):
            for what, value in HOSTILE.items():
                if api_name in ACTS and what not in REFUSED_WHATEVER_THE_TYPE:
                    continue
                data = [ordinary(p) for p in parameters]
                data[index] = value
                started = time.monotonic()
                event, message = call(base, api_name, data)
                slowest = max(slowest, time.monotonic() - started)
                tried += 1
                where = f"/{api_name} {parameter['parameter_name']} ({what})"
                if what in REFUSED_WHATEVER_THE_TYPE:
                    assert event == "error", f"{where} was accepted: {message[:300]}"
                if event != "complete":  # a refusal is short and never echoes the input
                    assert len(message) < 2_000, f"{where}: a {len(message):,}-character {event} (echoed the input?)"
                    assert "word word" not in message and "Traceback" not in message, where
    after = rss_mb(pid)
    assert tried > 150 and slowest < ANSWER_TIMEOUT_S
    assert after - before < MEMORY_BOUND_MB, f"resident memory grew {after - before:.0f} MB"
    event, message = call(base, "tokenize", ["An ordinary request afterwards.", "", ""])
    assert event == "complete" and "ordinary" in message


def test_a_body_past_the_doors_cap_is_refused_unread(public_server):
    base = public_server.url
    started = time.monotonic()
    status, body = post_json(f"{base}gradio_api/call/fill_mask", b'{"data": ["' + b"x" * (9 * 2**20) + b'"]}')
    assert status == 413 and "per request" in body
    assert time.monotonic() - started < ANSWER_TIMEOUT_S
    event, _ = call(base, "tokenize", ["Still serving.", "", ""])
    assert event == "complete"


# --- the raw queue protocol a page speaks: join, then read the session's event stream ---------------------


def log_lines(proc, words: str) -> list[str]:
    return [line for line in Path(proc.log_path).read_text(errors="replace").splitlines() if words in line]


LONG_TARGET = "qzx" * 16 + "qz"  # 50 characters: 50 WordPiece pieces, one scoring pass each
HEAVY_FILL_MASK = ["[MASK] " * 10 + "word " * 300, "", "", 5, ", ".join([LONG_TARGET] * 20), "", False, False]
STOPPED = "its client went away"


def test_heavy_fill_mask_work_stops_when_its_client_leaves_or_cancels_and_frees_its_slot(public_server):
    """10 masks x 20 targets of 50 pieces: 10,000 scoring passes (under the GFLOP budget, minutes of work on
    2 cores, cut at the deadline if nobody stops it). Two such requests hold both heavy slots; one client
    leaves, the other cancels its call; the server stops each within a batch and the next heavy request
    is computed."""
    base, proc = public_server.url, public_server.proc
    index = fn_index(app_config(base), "fill_mask")
    stopped_before = len(log_lines(proc, STOPPED))
    leaving = [QueueCall(base, index, HEAVY_FILL_MASK) for _ in range(2)]
    for call_ in leaving:
        call_.until_progress("Computing target words of several pieces")  # the handler is at its extra passes
    event, message = call(base, "fill_mask", ["Nice to [MASK] you.", "", "", 5, "tokenization", "", False, False])
    assert event == "error" and "busy with other long requests" in message  # both heavy slots are taken
    gone, cancelled = leaving
    gone.leave()  # a closed tab, a dropped connection
    cancelled.cancel()
    cancelled.until_done()  # its stream ends as after any answer: no disconnect marks it
    wait_until(lambda: len(log_lines(proc, STOPPED)) == stopped_before + 2, timeout=ANSWER_TIMEOUT_S,
               what="the server to stop both requests", message=lambda: _read_log(Path(proc.log_path)))
    cancelled.leave()
    for line in log_lines(proc, STOPPED)[-2:]:
        done, planned = map(int, re.search(r"(\d+) of its (\d+) planned passes had run", line).groups())
        assert planned == 10 * 20 * 50 and done < planned  # stopped before the end
    event, message = call(base, "fill_mask", ["Nice to [MASK] you.", "", "", 5, "tokenization", "", False, False])
    assert event == "complete" and "token ##ization" in message  # a slot is free again: scored by PLL


def test_a_heavy_fill_mask_past_its_budget_is_refused_before_it_runs(public_server):
    """20 masks x 20 targets of 50 pieces: 20,000 scoring passes, priced from the model's shape."""
    over = ["[MASK] " * 20 + "word " * 400, "", "", 5, ", ".join([LONG_TARGET] * 20), "", False, False]
    event, message = call(public_server.url, "fill_mask", over)
    assert event == "error" and "20,000 extra passes" in message and "at most 1,000 per request" in message


def test_one_visitor_cannot_upload_past_its_hourly_budget(public_server):
    """One visitor (as a proxy names it) sends 1 MB files, two a request, until the server says no: it stops
    at 200 MB an hour, says so, and another visitor's upload is still taken."""
    base, visitor, stored = public_server.url, "203.0.113.7", []
    chunk = b"x" * (2**20 - 1024)
    try:
        for sent in range(1, 200):
            status, answer = upload_request(base, [(f"f{sent}a.txt", chunk), (f"f{sent}b.txt", chunk)], visitor)
            if status != 200:
                break
            stored += json.loads(answer)
        assert status == 429 and "at most 200 MB an hour from one visitor" in answer, (status, answer)
        taken = sum(Path(path).stat().st_size for path in stored)
        assert 199 * 2**20 < taken <= 200 * 2**20  # what reached the disk: the budget, then nothing more
        assert upload(base, [("small.txt", b"another visitor's text")])  # from 127.0.0.1: still taken
    finally:
        for path in stored:
            Path(path).unlink(missing_ok=True)


def test_a_request_missing_an_input_never_writes_its_values_to_the_log(public_server):
    """Gradio's "didn't receive enough input values" error printed every received value in full: twenty
    1.9 MB requests added 36 MB of log in 4 s."""
    index = fn_index(app_config(public_server.url), "attention")
    log = Path(public_server.proc.log_path)
    before = log.stat().st_size
    for _ in range(5):
        done = QueueCall(public_server.url, index, ["a" * 500_000]).until_done()  # one input of several
        assert done["success"] is False
    grown = log.stat().st_size - before
    assert grown < 5 * 2_000, f"{grown:,} bytes of log for 5 requests"


def test_a_client_opening_a_session_per_call_keeps_the_servers_memory_bounded(public_server):
    """Gradio keeps a copy of the page's state (~0.64 MB) for every session that sends a request, up to
    10,000: 1,000 /run_status calls with new sessions added 616 MB. One visitor now keeps at most 32, so
    past the first calls (what they load, the visitor's 32 sessions) memory stays flat."""
    assert call(public_server.url, "tokenize", ["The model is loaded.", "", ""])[0] == "complete"  # warmed up
    for _ in range(60):  # each REST call is a new session
        call(public_server.url, "run_status", [])
    before = rss_mb(public_server.proc.pid)
    for _ in range(150):
        assert call(public_server.url, "run_status", [])[0] == "complete"
    grown = rss_mb(public_server.proc.pid) - before
    assert grown < 35, f"{grown:.0f} MB for 150 more sessions (unbounded: about 100 MB)"


# --- the heaviest legal request of every endpoint, from several visitors at once --------------------------------

EMBEDDED = "embedded/bert-explorer-mlm"  # 6 layers of 384: the heaviest model this offline server loads
LONG_TEXT = "The river bank was muddy after the rain, and the children played there. " * 1_300  # ~98,000 chars
SENTENCE_64 = "The " + "old " * 55 + "cat sat on the [MASK]."  # 64 tokens with [CLS] and [SEP]
SENTENCE_128 = "The " + "old " * 119 + "cat sat on the [MASK]."  # 128 tokens
SENSE_LINES = "\n".join(f"{'river' if i % 2 else 'money'} | The bank " + "old " * 35 + "stood."
                         for i in range(12))  # 12 sentences of 41 tokens: 1,967 of the 2,000 characters a text takes
HEAVIEST = {  # each endpoint at the top of what its declared limits allow (sizes, steps, counts, the model)
    "learn_step": ["why-word", SENTENCE_64, EMBEDDED],
    "lookup": [EMBEDDED, "love", 30_000],
    "compare_tokenizers": [LONG_TEXT, LONG_TEXT, EMBEDDED, "embedded/wordpiece-cased-wiki"],
    "encode": [LONG_TEXT, LONG_TEXT, EMBEDDED],
    "tokenize": [LONG_TEXT, LONG_TEXT, EMBEDDED],
    "fill_mask": HEAVY_FILL_MASK,
    "attention": [SENTENCE_128, "", EMBEDDED, 5, 11, False, False, True, "all"],
    "attention_weights": [SENTENCE_128, "", EMBEDDED, 5, 11, False, False, True, "all"],
    "attention_rollout": [SENTENCE_128, "", EMBEDDED, -1, False, True, "all"],
    "head_ablation": [SENTENCE_128, "", EMBEDDED, ", ".join(f"{l}:{h}" for l in range(6) for h in range(12)), 50,
                      "cat, dog, mat"],
    "inside_embeddings": [SENTENCE_64, EMBEDDED],
    "inside_layer": [SENTENCE_64, EMBEDDED, 5, 11, 63],
    "logit_lens": [SENTENCE_64, EMBEDDED, 1, 10],
    "mlm_loss": ["[MASK] " * 20 + "old " * 40, ", ".join(["cat"] * 20), EMBEDDED],
    "param_breakdown": [EMBEDDED],
    "word_in_context": ["bank", SENSE_LINES, EMBEDDED],
    "corpus_neighbours": [SENTENCE_64, 1, 6, 50, EMBEDDED],
    "attribution": [SENTENCE_64, 1, "", "integrated gradients", 300, EMBEDDED],
    "mask_sample": [SENTENCE_128, 0.5, 0.8, 0.1, 2, True, False],
    "mask_epochs": [SENTENCE_128, 0.5, 0.8, 0.1, 2, True, False, 200, 50],
    "mask_stats": [SENTENCE_128, 0.5, 0.8, 0.1, 2, True, False, 20_000],
    "nsp_pairs": [LONG_TEXT[:20_000], 128, 16, 1],
    "nsp_predict": [SENTENCE_64, SENTENCE_64, EMBEDDED],
    "order_probe": ["no-such-run", SENTENCE_64],
    "classify": [SENTENCE_64, "ft:no-such-run", "t" * 256],
    "probe_layers": ["", "topic"],  # the served model: the embedded one's probes take minutes on two cores
    "tag": [("Ada " * 250)[:1000], "ft:no-such-run", "x" * 256],  # 1,000 characters (its limit), 250 words; a token at its limit
    "run_metrics_csv": ["no-such-run"],
    # the twin comparison, the heads, a run's cost (no left-to-right model on this server: refused by name)
    "twin_heldout": [EMBEDDED, "no-such-ltr-run", 64], "twin_cloze": [EMBEDDED, "no-such-ltr-run", True],
    "twin_side_by_side": [EMBEDDED, "no-such-ltr-run", SENTENCE_64, 20, True], "head_roles": [EMBEDDED],
    "head_roles_over_checkpoints": ["no-such-run"], "run_cost": ["no-such-run"],
    "layer_change": ["ft:no-such-run"],  # a fine-tuning run of the server's: none in this barrage
}
# a start the busy slot queued: its place is read with an owner token of the most characters allowed
HEAVIEST |= {"queue_status": ["t" * 256]}
VISITORS = ("198.51.100.11", "198.51.100.12")  # two at once: each heavy call may meet the other's
HEAVY_ANSWER_TIMEOUT_S = 300.0  # a visitor's call may wait for the others' heavy work in the queue


def test_every_endpoint_at_its_heaviest_legal_request_from_several_visitors_answers_or_refuses_clearly(
        public_server):
    """Every named endpoint gets its heaviest legal request (the run-control endpoints only what starts nothing: a
    run has its own caps) from one of two visitors working at once, each through its half of the endpoints one
    after another, so a heavy call may meet the other visitor's. Each call is answered, or refused with a short
    sentence (the budget's "use fewer ...", a busy heavy slot, an unknown run), never a failure nobody planned for;
    the server then still answers an ordinary request. (Each endpoint once, not once per visitor: the second
    round repeated the same requests and took half of the test's 50 CPU-s.)"""
    import concurrent.futures

    base = public_server.url
    log = Path(public_server.proc.log_path)
    # gradio checks that it answers on localhost after it starts serving, and exits if that check times out
    wait_until(lambda: "share=True" in log.read_text(errors="replace"), timeout=ANSWER_TIMEOUT_S,
               what="gradio's launch to finish", message=lambda: _read_log(log))
    assert call(base, "tokenize", ["The model is loaded.", "", ""])[0] == "complete"
    found = endpoints(base)
    named = {name for name in found if not name.startswith("lambda_")}
    assert named - ACTS - {"run_status", "status_text"} <= set(HEAVIEST), "give a new endpoint its heaviest request"
    plan = {name: HEAVIEST.get(name, [ordinary(p) for p in found[name]]) for name in sorted(named - ACTS)}

    def visit(number: int) -> list[tuple[str, str, str]]:
        names = list(plan)[number::len(VISITORS)]  # each visitor its share of the endpoints
        return [(name, *attempt(name, number)) for name in names]

    def attempt(name: str, number: int) -> tuple[str, str]:
        try:
            return call(base, name, plan[name], VISITORS[number], HEAVY_ANSWER_TIMEOUT_S)
        except OSError as exc:  # a dropped connection, a timeout: reported with the endpoint's name below
            return f"no answer ({type(exc).__name__})", str(exc)

    with concurrent.futures.ThreadPoolExecutor(len(VISITORS)) as pool:
        answers = [a for f in [pool.submit(visit, n) for n in range(len(VISITORS))]
                   for a in f.result(timeout=HEAVY_ANSWER_TIMEOUT_S * len(plan))]
    assert sorted(name for name, _, _ in answers) == sorted(plan)  # every endpoint, once
    for name, event, message in answers:
        assert event in ("complete", "error"), \
            f"/{name}: {event} {message[:300]}\n{_read_log(Path(public_server.proc.log_path))}"
        if event == "error":
            assert 20 < len(message) < 2_000 and "Traceback" not in message, f"/{name}: {message[:300]}"
            assert "Something went wrong" not in message, f"/{name} failed unplanned: {message[:300]}"
    refused = {(name, message) for name, event, message in answers if event == "error"}
    assert any(name == "attribution" and "fewer integrated-gradient steps" in message for name, message in refused)
    answered = {name for name, event, _ in answers if event == "complete"}
    assert answered >= {"tokenize", "word_in_context", "corpus_neighbours", "attention", "probe_layers"}, refused
    event, message = call(base, "tokenize", ["Still serving after the heaviest requests.", "", ""])
    assert event == "complete" and "serving" in message


# the learner's own sentences through /start_finetune (task "own"): the most its settings carry (20,000
# characters of JSON), each with one thing wrong, so the whole text is read and bounded and nothing starts
OWN_LABELS = [f"label{i:02d}" for i in range(20)]
OWN_TEXT = "w" * 200  # 81 lines of it: about 18,000 characters of JSON with the escapes
OWN_HEAVIEST_REFUSED = {
    "a 21st label on the last line": ({"task": "own", "lines": "\n".join(
        [f"{label}\t{OWN_TEXT}" for label in OWN_LABELS for _ in range(4)] + [f"label20\t{OWN_TEXT}"])},
        "line 81: label 'label20' is a 21st label; at most 20 labels"),
    "a legal set with an illegal setting": ({"task": "own", "learning_rate": 1.0, "lines": "\n".join(
        f"{label}\t{OWN_TEXT}{j}" for label in OWN_LABELS for j in range(4))}, "learning_rate 1 is outside"),
    "a text over 1,000 characters": ({"task": "own", "lines": "a\t" + "w" * 1_001}, "line 1: the text has 1,001"),
    "three examples of a label": ({"task": "own", "lines": "a\tx\na\ty\na\tz\na\tw\nb\tx\nb\ty\nb\tz"},
                                  "line 5: label 'b' has 3 examples"),
    "two sources at once": ({"task": "own", "lines": "a\tx", "hub_dataset": "x/y"}, "one way"),
    "a hub dataset offline": ({"task": "own", "hub_dataset": "stanfordnlp/sst2"}, "hub is not reachable"),
    "an unknown task": ({"task": "nonsense"}, "task must be one of 'topic', 'names', 'own'"),
    "pasted lines for the topic task": ({"task": "topic", "lines": "a\tx"}, "Unknown fine-tuning setting"),
}

OWN_HEAVIEST_REFUSED.update({  # word labels (word<TAB>tag, a blank line between sentences)
    "a 21st tag on the last line": ({"task": "own", "label_per": "word", "lines": "\n\n".join(
        "\n".join(f"{OWN_TEXT[:100]}\t{label}" for _ in range(4)) for label in OWN_LABELS) + "\n\nw\ttag20"},
        "line 101: tag 'tag20' is a 21st tag; at most 20 tags"),
    "a tag on three words": ({"task": "own", "lines": "a\tX\nb\tX\nc\tX\nd\tX\n\ne\tY\nf\tY\ng\tY"},
                             "line 6: tag 'Y' is on 3 words; each tag needs at least 4"),
    "a word over 100 characters": ({"task": "own", "label_per": "word", "lines": "w" * 101 + "\tX"},
                                   "line 1: the word has 101 characters"),
    "an unknown label_per": ({"task": "own", "label_per": "phrase", "lines": "a\tX"}, "label_per must be one of"),
})


def each_refused(base: str, api_name: str, cases: dict, echoes: tuple[str, ...]) -> None:
    """Each ``(settings, refusal)`` of ``cases`` sent to ``api_name`` with an owner token is refused, the message
    naming ``refusal``, short, and holding none of ``echoes`` (a refusal never echoes the data)."""
    for what, (settings, refusal) in cases.items():
        assert len(json.dumps(settings)) < 20_000, what
        event, message = call(base, api_name, [settings, "owner-of-the-hostile-test"])
        assert event == "error" and refusal in message, f"{what}: {event} {message[:300]}"
        assert not any(text in message for text in echoes) and len(message) < 2_000, what


def test_own_data_starts_refuse_their_heaviest_illegal_values_with_the_line_and_the_rule(public_server):
    base = public_server.url
    each_refused(base, "start_finetune", OWN_HEAVIEST_REFUSED, (OWN_TEXT,))
    event, message = call(base, "run_status", [])
    assert event == "complete" and '"task": "own"' not in message  # nothing started


# the objective and "Train both" through /start_run: the most the settings carry, each with one
# thing wrong, so nothing starts; the refusal names the setting and never echoes the value
TWIN_SETTINGS_REFUSED = {
    "an unknown objective": ({"objective": "gpt"}, "objective must be one of ['mlm', 'ltr']"),
    "an objective of 19,000 characters": ({"objective": "x" * 19_000}, "objective must be one of ['mlm', 'ltr']"),
    "an objective that is a list": ({"objective": list(range(3_000))}, "Setting 'objective' must be str"),
    "a left-to-right run with NSP": ({"objective": "ltr", "nsp": True}, "a left-to-right run has none"),
    "train_both not a yes or no": ({"train_both": "yes please"}, "train_both must be true or false"),
    "train_both a long list": ({"train_both": list(range(3_000))}, "train_both must be true or false"),
    "train_both resuming a run": ({"train_both": True, "resume_from": "run:no-such-run/checkpoint"}, "cannot resume"),
    "train_both with NSP": ({"train_both": True, "nsp": True}, "turn NSP off"),
    "train_both past the step cap": ({"train_both": True, "objective": "ltr", "steps": 10**6}, "more than this public server allows"),
    "train_both with a plain start not a yes or no": ({"train_both": True, "neighbour_init": "maybe"},
                                                      "Setting 'neighbour_init' must be bool"),
}


def test_objective_and_train_both_refuse_hostile_settings_and_nothing_starts(public_server):
    base = public_server.url
    each_refused(base, "start_run", TWIN_SETTINGS_REFUSED, ("x" * 50, "2999"))
    event, message = call(base, "run_status", [])
    assert event == "complete" and "twin pretraining" not in message  # nothing started


def test_the_pages_objective_and_train_both_inputs_refuse_hostile_values_and_nothing_starts(public_server):
    """The Pretrain form's Objective radio, "Train both" checkbox and NSP checkbox as the page sends them (the raw
    queue protocol, the rest of the form at its defaults, which would start a run): each hostile value is refused
    with a short message that never echoes it, and Train both with NSP is refused by name."""
    base = public_server.url
    config = app_config(base)
    index = fn_index(config, "start_from_page")
    components = {c["id"]: c for c in config["components"]}
    inputs = [components[i] for dep in config["dependencies"] if dep["id"] == index for i in dep["inputs"]]
    names = [c["props"].get("elem_id") or c["props"].get("label") for c in inputs]
    defaults = [c["props"].get("value") for c in inputs]
    objective, both = names.index("pt-objective"), names.index("pt-train-both")
    nsp = names.index("Next-sentence prediction (NSP) too")

    def send(changes: dict[int, object]) -> str:
        data = list(defaults)
        for position, value in changes.items():
            data[position] = value
        done = QueueCall(base, index, data).until_done()
        message = json.dumps(done.get("output", {}))
        assert done["success"] is False, f"{changes}: accepted"
        assert len(message) < 2_000 and "x" * 50 not in message and "2999" not in message, message[:300]
        return message

    for value in ("gpt", "x" * 19_000, list(range(3_000)), {"nested": ["x"] * 50}):
        send({objective: value})
    for value in ("yes please", list(range(3_000)), {"nested": ["x"] * 50}, 1e18):
        send({both: value})
    assert "turn NSP off" in send({both: True, nsp: True})
    event, message = call(base, "run_status", [])
    assert event == "complete" and "twin pretraining" not in message  # nothing started

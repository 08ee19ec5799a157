"""What one visitor may leave behind on a public server, through the launched app's HTTP API and the page's
own queue calls: the probe is bounded (its length, its [MASK]s, the evaluations /run_status sends), held-out
batches per evaluation are capped, one visitor (as the proxy names them, whatever tokens they make up) keeps at
most three runs while another still starts one, an upload's file name reaches the shared status line as typed, and odd values (a non-ASCII token,
``resume_from: 5``, a .jsonl nested thousands deep) get the app's own messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from bertdemo.limits import MAX_PROBE_CHARS, MAX_PROBE_MASKS
from tests.helpers import visitor_client

from .api import RUN, QueueCall, app_config, fn_index, upload, wait_ended
from .conftest import _read_log


def refusal(client: Client, *args, api_name: str) -> str:
    with pytest.raises(AppError) as err:
        client.predict(*args, api_name=api_name)
    message = str(err.value)
    assert "Something went wrong" not in message and "Error:" not in message, message  # the app's own words
    return message


def delete_all(client: Client, token: str, runs: Path) -> int:
    """Delete every run ``token`` started; how many there were."""
    deleted = 0
    for folder in runs.iterdir():
        if folder.is_dir() and not folder.name.startswith("."):
            try:
                client.predict(folder.name, token, api_name="/delete_run")
                deleted += 1
            except AppError:
                pass  # another visitor's run
    return deleted


def test_the_probe_is_bounded_in_a_start_and_in_a_live_run(public_server):
    client = visitor_client(public_server.url, "198.51.100.20")
    long_probe = "The capital of France is [MASK]. " + "x" * MAX_PROBE_CHARS
    many = " ".join(["[MASK]"] * (MAX_PROBE_MASKS + 1)) + " ."
    message = refusal(client, {**RUN, "probe_text": long_probe}, "tok-probe", api_name="/start_run")
    assert f"use at most {MAX_PROBE_CHARS}" in message and "xxx" not in message
    assert f"use at most {MAX_PROBE_MASKS}" in refusal(client, {**RUN, "probe_text": many}, "tok-probe",
                                                       api_name="/start_run")
    # a live run's probe is bounded too (what the status keeps of the largest legal probe, and its size, is
    # tests/test_pretrain_service.py's: it needs no run)
    client.predict(RUN, "tok-probe", api_name="/start_run")
    try:
        assert f"at most {MAX_PROBE_CHARS:,}" in refusal(client, long_probe, "tok-probe", api_name="/set_probe")
    finally:
        client.predict("tok-probe", api_name="/stop_run")
        snap = wait_ended(client)
    assert snap["status"] == "stopped", f"{snap['status']}: {str(snap.get('message'))[:200]}"
    assert delete_all(client, "tok-probe", public_server.runs) == 1


def test_held_out_batches_per_evaluation_are_capped(public_server):
    client = visitor_client(public_server.url, "198.51.100.21")
    message = refusal(client, {**RUN, "eval_batches": 21}, "tok-eval", api_name="/start_run")
    assert "21 held-out batches per evaluation" in message and "(20)" in message


def test_one_visitor_keeps_three_runs_and_another_still_starts(public_server):
    """The quota counts what the visitor cannot choose: a made-up token per run, or a made-up address in
    front of what the proxy appended, is still the same visitor."""
    address = "198.51.100.22"
    hog, other = visitor_client(public_server.url, address), visitor_client(public_server.url, "198.51.100.23")
    disguised = visitor_client(public_server.url, f"192.0.2.1, {address}")
    tokens = [f"tok-hog-{k}" for k in range(3)]
    try:
        for token in tokens:  # started and stopped at once: each keeps a folder, saved or not
            hog.predict(RUN, token, api_name="/start_run")
            hog.predict(token, api_name="/stop_run")
            wait_ended(hog)
        for client, token in ((hog, "tok-hog-0"), (hog, "tok-hog-new"), (disguised, "tok-hog-disguised")):
            message = refusal(client, RUN, token, api_name="/start_run")
            assert "You keep 3 runs on this server" in message and "delete one" in message
        other.predict(RUN, "tok-other", api_name="/start_run")  # another visitor is not held back
        try:
            # a token that is not the owner's, in any alphabet, is simply not the owner's
            for stranger in ("é", "sécret-ä", "tok-hog-0"):
                assert "belongs to another visitor" in refusal(other, stranger, api_name="/stop_run")
        finally:
            other.predict("tok-other", api_name="/stop_run")
        assert wait_ended(other)["status"] == "stopped"
        # a number where a checkpoint name belongs: the app's own message, not a TypeError
        assert "resume_from names a checkpoint" in refusal(other, {**RUN, "resume_from": 5}, "tok-other",
                                                           api_name="/start_run")
    finally:
        deleted = (sum(delete_all(hog, token, public_server.runs) for token in tokens),
                   delete_all(other, "tok-other", public_server.runs))
    assert deleted == (3, 1)  # the owners may delete runs that never saved a checkpoint


def start_from_page(base: str, token: str, file_path: str, file_name: str, **overrides) -> dict:
    """The page's Start with the corpus "My file", as a browser sends it: every form field at its default
    but ``overrides`` (by setting name), the uploaded file as gradio's FileData. The final queue message."""
    config = app_config(base)
    index = fn_index(config, "start_from_page")
    dependency = next(d for d in config["dependencies"] if d["id"] == index)
    components = {c["id"]: c for c in config["components"]}
    values = [components[i]["props"].get("value") for i in dependency["inputs"][1:]]  # [0]: the owner token
    names = ["preset", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "corpus",
             "upload", "position_embeddings", "whole_word_masking", "static_masks", "nsp", "locality_fade",
             "objective", "train_both", "neighbour_init", "mlm_probability", "mask_replace_prob",
             "random_replace_prob", "seq_len_schedule", "block_starts", "seq_len", "batch_size", "steps", "time_budget_s", "lr", "warmup_steps", "eval_every", "checkpoint_every", "seed", "resume_from",
             "probe_text", "probe_expected"]
    assert len(names) == len(values)
    form = dict(zip(names, values))
    form.update({k: v for k, v in RUN.items() if k in form}, corpus="upload", **overrides)
    form["upload"] = {"path": file_path, "orig_name": file_name, "meta": {"_type": "gradio.FileData"}}
    queued = QueueCall(base, index, [token, *form.values()])
    try:
        return queued.until_done()
    finally:
        queued.leave()


def test_an_upload_name_is_shown_as_typed_and_odd_files_get_their_own_message(public_server, tmp_path):
    from bertdemo.models.embedded import wiki_summaries

    base = public_server.url
    client = visitor_client(base, "198.51.100.24")
    # a deeply nested .jsonl: the app's own message, naming the file (it was a RecursionError)
    nested = tmp_path / "nested.jsonl"
    nested.write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    [stored] = upload(base, [(nested.name, nested.read_bytes())])
    done = start_from_page(base, "tok-md", stored, nested.name)
    assert not done["success"] and "nested too deeply" in json.dumps(done) and "Recursion" not in json.dumps(done)

    name = "see [here](page) _now_ !x.txt"  # Markdown a status line would render as a link and emphasis
    text = "\n\n".join(wiki_summaries()[:300]).encode()
    [stored] = upload(base, [(name, text)])
    shown = Path(stored).name  # the name as gradio stored it (it drops some characters, keeps these)
    assert "[here](page)" in shown and "_now_" in shown
    done = start_from_page(base, "tok-md", stored, shown)
    assert done["success"], done
    status = done["output"]["data"][0]  # the shared status line every visitor's page shows
    try:
        as_typed = "".join(f"&#{ord(c)};" if c in "[]()_!" else c for c in shown)  # markup characters as entities
        assert f"<code>{as_typed}</code>" in status
        assert "[here](page)" not in status and "_now_" not in status
    finally:
        client.predict("tok-md", api_name="/stop_run")
        wait_ended(client)
        delete_all(client, "tok-md", public_server.runs)


def test_a_file_path_nobody_uploaded_is_refused_in_words_and_not_logged(public_server):
    """A start whose file input names a server path (a FileData forged by hand): refused before any handler runs,
    saying the file must be uploaded; the server's log gets neither a traceback nor the path."""
    forged = "/etc/hostname"
    done = start_from_page(public_server.url, "tok-forged", forged, "corpus.txt")
    answer = json.dumps(done)
    assert not done["success"] and "must be uploaded to this server first" in answer, answer
    log = _read_log(public_server.proc.log_path, limit=10**8)  # the whole log
    assert forged not in log and "InvalidPathError" not in log, log[-3000:]
